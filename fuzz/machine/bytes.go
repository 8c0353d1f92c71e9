package machine

import (
	"encoding/binary"
	"fmt"
	"runtime/debug"
)

// MaxActions bounds the actions of one byte-driven run, so that one fuzz
// execution stays short whatever the input's length; later bytes are
// ignored.
const MaxActions = 256

// RunBytes runs the machine with every draw decoded from data (see Bytes)
// and returns the failure, or nil when every check passed. A failure is
// what the machine reported (Fatalf) or a panic anywhere in the run, with
// its stack. Every input decodes to a run: RunBytes never rejects one.
func RunBytes(data []byte, opts Options) (err error) {
	src := &Bytes{data: data}
	defer func() {
		switch r := recover().(type) {
		case nil:
		case failure:
			err = r
		case skipped:
			// Skip outside Repeat (nothing draws one there): a pass.
		default:
			err = failure(fmt.Sprintf("panic: %v\n%s", r, debug.Stack()))
		}
	}()
	Property(opts)(src)
	return nil
}

// failure is a reported failure; skipped ends an action that found nothing
// to do.
type (
	failure string
	skipped struct{}
)

func (f failure) Error() string { return string(f) }

// Bytes is a T that reads its draws from a byte string, front to back, so
// a fuzzer that mutates the bytes mutates the run:
//
//	Uint64       8 bytes, little-endian
//	Bool         1 byte, bit 0
//	IntRange     1 byte mod the range's size (2 bytes, little-endian, when
//	             the range is wider than 256)
//	Index(n)     IntRange(0, n-1)
//	Distinct     1 byte: the count mod max+1, then an Index per item among
//	             those not yet drawn
//
// A draw past the end of the bytes reads zeros; Repeat stops when the bytes
// run out (or after MaxActions actions), and an action that finds nothing
// to do (Skip) ends the repetition. The final checks always run.
type Bytes struct {
	data []byte
	pos  int
}

func (b *Bytes) next() byte {
	if b.pos >= len(b.data) {
		return 0
	}
	b.pos++
	return b.data[b.pos-1]
}

func (b *Bytes) Uint64(string) uint64 {
	var buf [8]byte
	for i := range buf {
		buf[i] = b.next()
	}
	return binary.LittleEndian.Uint64(buf[:])
}

func (b *Bytes) Bool(string) bool { return b.next()&1 != 0 }

func (b *Bytes) IntRange(min, max int, _ string) int {
	if max <= min {
		return min
	}
	span := uint(max - min + 1)
	v := uint(b.next())
	if span > 256 {
		v |= uint(b.next()) << 8
	}
	return min + int(v%span)
}

func (b *Bytes) Index(n int, label string) int { return b.IntRange(0, n-1, label) }

func (b *Bytes) Distinct(from []string, max int, label string) []string {
	n := min(int(b.next())%(max+1), len(from))
	left := append([]string(nil), from...)
	out := make([]string, 0, n)
	for range n {
		i := b.Index(len(left), label)
		out = append(out, left[i])
		left = append(left[:i], left[i+1:]...)
	}
	return out
}

func (b *Bytes) Fatalf(format string, args ...any) { panic(failure(fmt.Sprintf(format, args...))) }

func (b *Bytes) Skip(string) { panic(skipped{}) }

// Repeat checks, then acts and checks while bytes are left, at most
// MaxActions times; an act that skips ends it.
func (b *Bytes) Repeat(act, check func(T)) {
	check(b)
	for i := 0; i < MaxActions && b.pos < len(b.data); i++ {
		if !acted(func() { act(b) }) {
			return
		}
		check(b)
	}
}

// acted runs one action; false when it skipped.
func acted(act func()) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			if _, skip := r.(skipped); !skip {
				panic(r)
			}
			ok = false
		}
	}()
	act()
	return true
}

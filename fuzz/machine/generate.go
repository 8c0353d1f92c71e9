package machine

import (
	"encoding/binary"
	"fmt"

	"github.com/storesim/storesim/sim"
)

// Generate makes an input for Bytes: it runs the machine with draws from a
// seeded stream and records each draw as the bytes Bytes decodes it from,
// so the input replays that run. Random bytes make poor seeds (a uniform
// action draw shuts both endpoints down within a few dozen actions); the
// stream here picks the last valid action — a mid-run shutdown whenever
// one is valid — only one time in a hundred. actions is at most
// MaxActions; opts are the run's (RunBytes with the same opts replays it).
// The error is a failure of the generated run itself (the input then
// reproduces it).
func Generate(seed uint64, actions int, opts Options) ([]byte, error) {
	g := &generator{r: sim.NewRand(seed), actions: min(actions, MaxActions)}
	err := func() (err error) {
		defer func() {
			switch r := recover().(type) {
			case nil, skipped:
			case failure:
				err = r
			default:
				err = fmt.Errorf("panic: %v", r)
			}
		}()
		Property(opts)(g)
		return nil
	}()
	return g.out, err
}

// generator is a T that draws from a stream and writes what it drew in
// the format of Bytes.
type generator struct {
	r       *sim.Rand
	out     []byte
	actions int
}

func (g *generator) Uint64(string) uint64 {
	v := g.r.Uint64()
	g.out = binary.LittleEndian.AppendUint64(g.out, v)
	return v
}

func (g *generator) Bool(string) bool {
	b := byte(g.r.Uint64())
	g.out = append(g.out, b)
	return b&1 != 0
}

// draw picks v in [0, span) and writes it as Bytes.IntRange reads it.
func (g *generator) draw(span int, v int) int {
	if span <= 1 {
		return 0 // Bytes reads nothing for a range of one value
	}
	g.out = append(g.out, byte(v))
	if span > 256 {
		g.out = append(g.out, byte(v>>8))
	}
	return v
}

func (g *generator) IntRange(min, max int, _ string) int {
	if max <= min {
		return min
	}
	span := max - min + 1
	return min + g.draw(span, g.r.Intn(span))
}

func (g *generator) Index(n int, label string) int {
	v := g.r.Intn(n)
	if label == "action" && n > 1 && v == n-1 && g.r.Intn(100) != 0 {
		v = g.r.Intn(n - 1)
	}
	return g.draw(n, v)
}

func (g *generator) Distinct(from []string, max int, label string) []string {
	n := g.r.Intn(max + 1)
	g.out = append(g.out, byte(n))
	n = min(n, len(from))
	left := append([]string(nil), from...)
	out := make([]string, 0, n)
	for range n {
		i := g.Index(len(left), label)
		out = append(out, left[i])
		left = append(left[:i], left[i+1:]...)
	}
	return out
}

func (g *generator) Fatalf(format string, args ...any) { panic(failure(fmt.Sprintf(format, args...))) }

func (g *generator) Skip(string) { panic(skipped{}) }

func (g *generator) Repeat(act, check func(T)) {
	check(g)
	for range g.actions {
		if !acted(func() { act(g) }) {
			return
		}
		check(g)
	}
}

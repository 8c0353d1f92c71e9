package arena

// Shared backing: arenas whose bytes live in a file-backed shared mapping
// that another process (a driver process, package drivers/procdriver) maps
// too, so it reads and writes the caller's slots themselves. Such a process
// touches the bytes without calling Read or Write, so the arena cannot see
// each touch; it audits instead: it keeps a checksum of every slot as its
// own writes (Fill, Release, Write) left it, and Audit finds the slots
// whose bytes changed behind its back and records each as a write by the
// call and row the caller names — with the arena's own checks
// (S-NO-LATE-ACCESS: a slot at the lender, a region not registered) and the
// touch hook, exactly as if the process had called Write. An own write
// first checks its slot, so a foreign write that the own write is about to
// overwrite (a late write just before Release poisons the slot) is not
// lost: it is kept, with the slot's state at that moment, for the next
// Audit.
//
// An arena without Options.Shared is what it always was: Go heap memory,
// and every shared branch is one nil check.

import (
	"errors"
	"fmt"
	"hash/maphash"
	"os"
	"path/filepath"
	"sync"
	"syscall"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
)

// Shared is file-backed shared memory for arenas: a private directory of
// files mapped MAP_SHARED, each holding the bytes of some arenas back to
// back (every arena page-aligned), which another process maps by path and
// offset (Arena.SharedFile). Close unmaps every file and removes the
// directory; the arenas keep working after it, on a private copy of their
// bytes in the Go heap, no longer shared or audited; a Shared never closed
// leaves its files behind until the machine's next boot (in /dev/shm). Safe
// for concurrent use, except that Close must not race with placing an
// arena.
type Shared struct {
	dir string

	mu     sync.Mutex
	segs   []*segment
	arenas []*Arena
	closed bool
	err    error
}

// segment is one mapped file; arenas are carved from it in page-aligned
// pieces. The file is sparse: a page costs memory once it is touched.
type segment struct {
	path string
	buf  []byte
	used int
}

// SegmentBytes is the size of one file of a Shared (a larger arena gets a
// file of its own size).
const SegmentBytes = 16 << 20

// ErrSharedClosed is what placing an arena in a closed Shared reports
// (Shared.Err); the arena is then Go heap memory.
var ErrSharedClosed = errors.New("arena: shared memory closed")

// NewShared makes the private directory of a Shared in dir ("": /dev/shm
// when it is writable, else the temporary directory).
func NewShared(dir string) (*Shared, error) {
	if dir == "" {
		dir = SharedDir()
	}
	d, err := os.MkdirTemp(dir, "storesim-arena-")
	if err != nil {
		return nil, fmt.Errorf("arena: shared memory directory: %w", err)
	}
	return &Shared{dir: d}, nil
}

// SharedDir is where shared memory files go by default: /dev/shm when it is
// a writable directory (memory, never disk), else os.TempDir().
func SharedDir() string {
	if fi, err := os.Stat("/dev/shm"); err == nil && fi.IsDir() {
		if f, err := os.CreateTemp("/dev/shm", "storesim-probe-"); err == nil {
			f.Close()
			os.Remove(f.Name())
			return "/dev/shm"
		}
	}
	return os.TempDir()
}

// Dir is the Shared's private directory.
func (s *Shared) Dir() string { return s.dir }

// Err is the last reason an arena could not be placed in s (it is then Go
// heap memory), or nil.
func (s *Shared) Err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.err
}

// place maps n bytes for a, or returns nil (s.err says why).
func (s *Shared) place(a *Arena, n int) (buf []byte, path string, off int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		s.err = ErrSharedClosed
		return nil, "", 0
	}
	page := os.Getpagesize()
	need := (n + page - 1) / page * page
	var seg *segment
	if k := len(s.segs); k > 0 && len(s.segs[k-1].buf)-s.segs[k-1].used >= need {
		seg = s.segs[k-1]
	} else {
		var err error
		if seg, err = s.newSegment(max(SegmentBytes, need)); err != nil {
			s.err = err
			return nil, "", 0
		}
	}
	off = int64(seg.used)
	buf = seg.buf[seg.used : seg.used+n : seg.used+n]
	seg.used += need
	s.arenas = append(s.arenas, a)
	return buf, seg.path, off
}

func (s *Shared) newSegment(size int) (*segment, error) {
	path := filepath.Join(s.dir, fmt.Sprintf("segment-%d.mem", len(s.segs)+1))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, fmt.Errorf("arena: shared memory: %w", err)
	}
	defer f.Close()
	if err := f.Truncate(int64(size)); err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("arena: shared memory: %w", err)
	}
	buf, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("arena: shared memory: mmap %s: %w", path, err)
	}
	seg := &segment{path: path, buf: buf}
	s.segs = append(s.segs, seg)
	return seg, nil
}

// Close moves every arena of s to a private heap copy of its bytes, unmaps
// the files and removes the directory. A second Close does nothing.
func (s *Shared) Close() error {
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		return nil
	}
	s.closed = true
	arenas, segs := s.arenas, s.segs
	s.arenas, s.segs = nil, nil
	s.mu.Unlock()
	for _, a := range arenas {
		a.mu.Lock()
		a.buf = append([]byte(nil), a.buf...)
		a.sh = nil
		a.mu.Unlock()
	}
	var errs []error
	for _, seg := range segs {
		if err := syscall.Munmap(seg.buf); err != nil {
			errs = append(errs, fmt.Errorf("arena: munmap %s: %w", seg.path, err))
		}
	}
	if err := os.RemoveAll(s.dir); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// sharedState is what a shared arena keeps for its audit.
type sharedState struct {
	path    string
	off     int64
	seed    maphash.Seed
	sums    []uint64 // per slot: the bytes as the arena last knew them
	pending []Touch  // foreign writes an own write found (By unset)
}

func (a *Arena) sum(slot int) uint64 {
	return maphash.Bytes(a.sh.seed, a.buf[slot*a.slotBytes:(slot+1)*a.slotBytes])
}

// checkLocked runs before an own write of slot: a foreign write the own
// write would overwrite is kept for the next Audit, with the slot's state
// now.
func (a *Arena) checkLocked(slot int) {
	if a.sum(slot) != a.sh.sums[slot] {
		a.sh.pending = append(a.sh.pending, a.foreignTouch(slot))
	}
}

// ownedLocked runs after an own write of the slots [first, last].
func (a *Arena) ownedLocked(first, last int) {
	for s := max(first, 0); s <= last && s < len(a.sh.sums); s++ {
		a.sh.sums[s] = a.sum(s)
	}
}

func (a *Arena) foreignTouch(slot int) Touch {
	t := Touch{Op: Write, Off: slot * a.slotBytes, N: a.slotBytes, Region: a.label, Registered: a.registered,
		Slot: slot, State: a.slots[slot].State(), Owner: a.slots[slot].owner, Audited: true}
	if a.opts.Clock != nil {
		t.At = a.opts.Clock.Now()
	}
	return t
}

// judgeLocked applies the arena's own rules to a touch of one whole slot
// made directly in the shared bytes (touch's checks, for a touch that did
// not go through Read or Write) and logs it.
func (a *Arena) judgeLocked(t Touch) {
	switch {
	case t.Slot < 0:
		a.violate(rules.DSub6, t, "access crosses a slot boundary or leaves the slot area")
	case !t.Registered:
		a.violate(rules.SNoLateAccess, t, "touch of a region that is not registered")
	case t.State == AtLender:
		a.violate(rules.SNoLateAccess, t, "touch of a slot that is not lent (released or never lent)")
	}
	if a.opts.Log {
		if len(a.log) < MaxLog {
			a.log = append(a.log, t)
		} else {
			a.dropped++
		}
	}
}

// SharedFile names where the arena's bytes live when they are shared: the
// file's path and the offset of byte 0 in it (page-aligned). ok is false
// for Go heap memory.
func (a *Arena) SharedFile() (path string, off int64, ok bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.sh == nil {
		return "", 0, false
	}
	return a.sh.path, a.sh.off, true
}

// Audit finds the slots of a shared arena whose bytes another process
// changed since the arena last knew them (every slot, or only those in
// slots; foreign writes an own write found are always included), records
// each as a write of the whole slot by by(slot) — judged and logged as
// touch judges a Write, and handed to Options.OnTouch — and takes the
// bytes as known. It returns the slots written, in the order found (a slot
// may appear twice: once found by an own write, once by the audit). On Go
// heap memory it does nothing. by runs with the arena's lock held: it must
// not call the arena.
func (a *Arena) Audit(by func(slot int) drivers.Toucher, slots []int) []int {
	a.mu.Lock()
	if a.sh == nil {
		a.mu.Unlock()
		return nil
	}
	found := a.sh.pending
	a.sh.pending = nil
	check := func(s int) {
		if sum := a.sum(s); sum != a.sh.sums[s] {
			a.sh.sums[s] = sum
			found = append(found, a.foreignTouch(s))
		}
	}
	if slots == nil {
		for s := range a.sh.sums {
			check(s)
		}
	} else {
		for _, s := range slots {
			if s >= 0 && s < len(a.sh.sums) {
				check(s)
			}
		}
	}
	out := make([]int, len(found))
	for i := range found {
		found[i].By = by(found[i].Slot)
		a.judgeLocked(found[i])
		out[i] = found[i].Slot
	}
	hook := a.opts.OnTouch
	a.mu.Unlock()
	if hook != nil {
		for _, t := range found {
			hook(t)
		}
	}
	return out
}

// WitnessWrite records a write of [off, off+n) by by that another process
// made directly in the shared bytes (one no audit could see: it left the
// bytes as they were), judged, logged and hooked as touch does a Write,
// without moving a byte. On Go heap memory it does nothing.
func (a *Arena) WitnessWrite(by drivers.Toucher, off, n int) error {
	a.mu.Lock()
	if off < 0 || n < 0 || off+n > len(a.buf) {
		a.mu.Unlock()
		return drivers.ErrOutOfBounds
	}
	if a.sh == nil {
		a.mu.Unlock()
		return nil
	}
	t := Touch{Op: Write, Off: off, N: n, By: by, Region: a.label, Registered: a.registered, Slot: -1, Audited: true}
	if a.opts.Clock != nil {
		t.At = a.opts.Clock.Now()
	}
	first, last := off/a.slotBytes, (off+max(n, 1)-1)/a.slotBytes
	if first == last && first < len(a.slots) {
		t.Slot, t.State, t.Owner = first, a.slots[first].State(), a.slots[first].owner
	}
	a.judgeLocked(t)
	a.ownedLocked(first, last)
	hook := a.opts.OnTouch
	a.mu.Unlock()
	if hook != nil {
		hook(t)
	}
	return nil
}

func (a *Arena) placeShared(s *Shared, n int) {
	buf, path, off := s.place(a, n)
	if buf == nil {
		return
	}
	a.buf = buf
	a.sh = &sharedState{path: path, off: off, seed: maphash.MakeSeed(), sums: make([]uint64, len(a.slots))}
	for i := range a.sh.sums {
		a.sh.sums[i] = a.sum(i)
	}
}

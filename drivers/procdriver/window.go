package procdriver

import (
	"fmt"
	"hash/maphash"
	"os"
	"path/filepath"
	"syscall"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/sim/arena"
)

// SharedMemory is caller memory that already lives in a file-backed shared
// mapping — an arena placed in an arena.Shared (arena.Options.Shared) — so
// the process maps the caller's bytes themselves: nothing is copied either
// way, a write the process makes lands in the caller's slot when it makes
// it. The parent still sees no touch as it happens; it audits: Audit finds
// the slots whose bytes changed behind the memory's back and records each
// as a write by the call and row the parent names (the memory's own
// checks, S-NO-LATE-ACCESS, and its touch hook, where the memory oracle
// judges D-ACCESS-END, D-STATUS, D-SUB-6), and WitnessWrite records a
// write no audit could see (a FETCH row reported OK whose object equals
// what its slot held).
type SharedMemory interface {
	drivers.Memory
	// SharedFile is the mapped file and the offset of byte 0 in it; ok is
	// false when the memory is not shared after all.
	SharedFile() (path string, off int64, ok bool)
	// Audit audits every slot (slots nil) or those in slots, records each
	// changed one as a write by by(slot) and returns them.
	Audit(by func(slot int) drivers.Toucher, slots []int) []int
	// WitnessWrite records a write of [off, off+n) by by, moving no byte.
	WitnessWrite(by drivers.Toucher, off, n int) error
}

var _ SharedMemory = (*arena.Arena)(nil)

// Canary is the byte a mirrored region's mapping (one the parent made for
// memory that is not shared) holds in a slot while no live call may touch
// it: at registration, once its call's access is ENDED, and over the whole
// region once it is unregistered. A driver that reads such a slot late gets
// canary bytes (and publishes them, which the store's content check then
// sees); one that writes it late changes its checksum, which the next
// audit finds. Shared memory is the caller's: the parent never writes it,
// and a slot its lender released holds the arena's Poison instead.
const Canary = 0xCA

// window is one registered region's shared mapping, the child's view of
// the caller's region. When the caller's memory is a SharedMemory it is
// that memory itself (sh; the parent maps nothing and copies nothing, the
// memory audits its own slots). Otherwise it is a file of the parent's,
// which both processes map: the child reads and writes it directly; the
// parent fills PUBLISH slots from the caller's memory, keeps a checksum
// per slot and, at every audit, finds the slots whose bytes changed and
// writes them into the caller's memory (Region.Mem) on behalf of the call
// and row that last named the slot (see the package doc, "Memory").
type window struct {
	handle    drivers.Handle
	label     string
	mem       drivers.Memory
	sh        SharedMemory // the caller's memory is the mapping (nil: a file of ours)
	slotBytes int
	slots     int
	path      string
	off       int64  // of slot 0 in path
	buf       []byte // the mapping (a file of ours)
	sums      []uint64
	owner     []owner
	closed    bool // unregistered: canaried (a file of ours), still audited
	gone      bool // unmapped: nothing left to audit
	refused   bool // the child refused it: unmapped at once
}

// sharedWindow is the window of a region whose memory is shared already.
func sharedWindow(r drivers.Region, m SharedMemory, path string, off int64) *window {
	return &window{label: r.Label, mem: r.Mem, sh: m, slotBytes: r.SlotBytes, slots: r.Slots, path: path, off: off,
		owner: make([]owner, r.Slots)}
}

// owner is the call and row that last named a slot.
type owner struct {
	c   *call
	row int
}

// newWindow creates the shared file of r (only its slot area) in dir and
// maps it, filled with Canary.
func newWindow(dir string, seq int, r drivers.Region) (*window, error) {
	size := r.SlotBytes * r.Slots
	path := filepath.Join(dir, fmt.Sprintf("region-%d.mem", seq))
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if err := f.Truncate(int64(size)); err != nil {
		os.Remove(path)
		return nil, err
	}
	buf, err := syscall.Mmap(int(f.Fd()), 0, size, syscall.PROT_READ|syscall.PROT_WRITE, syscall.MAP_SHARED)
	if err != nil {
		os.Remove(path)
		return nil, fmt.Errorf("mmap %s: %w", path, err)
	}
	w := &window{label: r.Label, mem: r.Mem, slotBytes: r.SlotBytes, slots: r.Slots, path: path, buf: buf,
		sums: make([]uint64, r.Slots), owner: make([]owner, r.Slots)}
	for i := range buf {
		buf[i] = Canary
	}
	return w, nil
}

// unmap releases the mapping and removes the file (a file of ours; the
// caller's shared memory is the caller's).
func (w *window) unmap() {
	w.gone = true
	if w.sh != nil {
		return
	}
	if w.buf != nil {
		syscall.Munmap(w.buf)
		w.buf = nil
	}
	os.Remove(w.path)
}

func (w *window) slot(i int) []byte { return w.buf[i*w.slotBytes : (i+1)*w.slotBytes] }

// auditor holds what every window's audit shares: the checksum seed, the
// canary checksum per slot size and a scratch buffer.
type auditor struct {
	seed    maphash.Seed
	canary  map[int]uint64
	scratch []byte
	// found is the driver's own list of what the audits found (see
	// Driver.Findings); the caller's memory oracles see the same writes.
	found []rules.Violation
}

func newAuditor() *auditor {
	return &auditor{seed: maphash.MakeSeed(), canary: map[int]uint64{}}
}

func (a *auditor) canarySum(n int) uint64 {
	s, ok := a.canary[n]
	if !ok {
		b := make([]byte, n)
		for i := range b {
			b[i] = Canary
		}
		s = maphash.Bytes(a.seed, b)
		a.canary[n] = s
	}
	return s
}

// toucher is who a write of slot i is: the call and row that last named it,
// or no call.
func (w *window) toucher(i int) drivers.Toucher {
	if o := w.owner[i]; o.c != nil {
		return drivers.Toucher{Call: o.c.id, Row: o.row}
	}
	return drivers.Toucher{Row: -1}
}

// syncAll audits every slot of w.
func (a *auditor) syncAll(w *window) {
	if w.sh != nil {
		a.auditShared(w, nil)
		return
	}
	for i := 0; i < w.slots; i++ {
		a.sync(w, i)
	}
}

// auditShared audits slots (nil: all) of a window over shared memory: the
// memory records every changed slot as its owner's write, and the changes
// are noted as sync notes them.
func (a *auditor) auditShared(w *window, slots []int) bool {
	if w.gone {
		return false
	}
	found := w.sh.Audit(w.toucher, slots)
	for _, i := range found {
		o := w.owner[i]
		if o.c != nil && o.row >= 0 && o.row < len(o.c.wrote) {
			o.c.wrote[o.row] = true
		}
		a.note(w, i, o)
	}
	return len(found) > 0
}

// init sets every slot's checksum to the canary's.
func (a *auditor) init(w *window) {
	s := a.canarySum(w.slotBytes)
	for i := range w.sums {
		w.sums[i] = s
	}
}

// sync audits one slot: if its bytes changed since the last audit, the
// change is written into the caller's memory as a write by the slot's
// owner (the exact call and row, so the arena and the memory oracle judge
// it as if the driver had touched the caller's memory itself), and noted
// in the driver's own findings when it breaks a rule the owner's state
// shows. It reports whether the slot changed.
func (a *auditor) sync(w *window, i int) bool {
	if w.sh != nil {
		return a.auditShared(w, []int{i})
	}
	if w.buf == nil {
		return false
	}
	if cap(a.scratch) < w.slotBytes {
		a.scratch = make([]byte, w.slotBytes)
	}
	b := a.scratch[:w.slotBytes]
	copy(b, w.slot(i)) // one read of the shared bytes: hash and write the same copy
	sum := maphash.Bytes(a.seed, b)
	if sum == w.sums[i] {
		return false
	}
	w.sums[i] = sum
	o := w.owner[i]
	by := drivers.Toucher{Row: -1}
	if o.c != nil {
		by = drivers.Toucher{Call: o.c.id, Row: o.row}
	}
	if w.mem != nil {
		_ = w.mem.Write(by, i*w.slotBytes, b) // out of bounds: the region lied about its memory (D-GEOM)
	}
	if o.c != nil && o.row >= 0 && o.row < len(o.c.wrote) {
		o.c.wrote[o.row] = true
	}
	a.note(w, i, o)
	return true
}

// force writes slot i into the caller's memory as its owner's write,
// changed or not.
func (a *auditor) force(w *window, i int) {
	if w.sh != nil {
		if !w.gone {
			_ = w.sh.WitnessWrite(w.toucher(i), i*w.slotBytes, w.slotBytes)
		}
		return
	}
	if w.buf == nil || w.mem == nil {
		return
	}
	if cap(a.scratch) < w.slotBytes {
		a.scratch = make([]byte, w.slotBytes)
	}
	b := a.scratch[:w.slotBytes]
	copy(b, w.slot(i))
	w.sums[i] = maphash.Bytes(a.seed, b)
	o := w.owner[i]
	_ = w.mem.Write(drivers.Toucher{Call: o.c.id, Row: o.row}, i*w.slotBytes, b)
}

// note records what a changed slot means, from its owner's state.
func (a *auditor) note(w *window, i int, o owner) {
	v := rules.Violation{Row: -1, Region: w.label}
	if o.c != nil {
		v.Call, v.Row = uint64(o.c.id), o.row
		if o.row >= 0 && o.row < len(o.c.rows) {
			v.Key = o.c.rows[o.row].Key
		}
	}
	switch {
	case w.closed:
		v.Rule, v.Detail = rules.SNoLateAccess, fmt.Sprintf("slot %d of region %q was written after the region was unregistered", i, w.label)
	case o.c == nil:
		v.Rule, v.Detail = rules.DSub6, fmt.Sprintf("slot %d of region %q was written, but no call names it", i, w.label)
	case o.c.access == drivers.AccessEnded:
		v.Rule, v.Detail = rules.DAccessEnd, fmt.Sprintf("slot %d of region %q was written after call %d reported its access ENDED", i, w.label, o.c.id)
	case o.c.dir == drivers.Fetch && o.row < len(o.c.results) && (o.c.results[o.row] == drivers.Miss || o.c.results[o.row] == drivers.NotAttempted):
		v.Rule, v.Detail = rules.DStatus, fmt.Sprintf("slot %d of region %q was written although call %d reported its row %d %v", i, w.label, o.c.id, o.row, o.c.results[o.row])
	default:
		return // a write by a live call to its own slot
	}
	v.Class = v.Rule.Class()
	a.found = append(a.found, v)
}

// untouchedBroken notes a FETCH row reported st (MISS or NOT_ATTEMPTED)
// whose slot an audit had already seen written.
func (a *auditor) untouchedBroken(c *call, i int, st drivers.Status) {
	r := c.rows[i]
	a.found = append(a.found, rules.Violation{Rule: rules.DStatus, Class: rules.DStatus.Class(), Call: uint64(c.id), Row: i, Key: r.Key,
		Detail: fmt.Sprintf("call %d reported FETCH row %d %v, but its slot %d had been written", c.id, i, st, r.Slot)})
}

// canaryFill fills slot i with Canary and takes that as its state. Shared
// memory is the caller's and is never overwritten: a slot its lender
// released holds the arena's Poison instead, under the same checksum.
func (a *auditor) canaryFill(w *window, i int) {
	if w.buf == nil {
		return
	}
	s := w.slot(i)
	for j := range s {
		s[j] = Canary
	}
	w.sums[i] = a.canarySum(w.slotBytes)
}

// fill copies the caller's bytes into slot i (a PUBLISH row, after the
// child accepted the call and before it may start).
func (a *auditor) fill(w *window, i int, by drivers.Toucher) {
	if w.buf == nil || w.mem == nil {
		return
	}
	s := w.slot(i)
	if err := w.mem.Read(by, i*w.slotBytes, s); err != nil {
		return
	}
	w.sums[i] = maphash.Bytes(a.seed, s)
}

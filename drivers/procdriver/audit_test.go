package procdriver_test

import (
	"bytes"
	"testing"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/procdriver"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/sim/arena"
)

// roundTrip publishes content under key from src slot 0 and fetches key
// into dst slot slot, waiting for both to end (hang guard only).
func roundTrip(t *testing.T, d procdriver.Process, hs, hd drivers.Handle, key string, slot int) drivers.Call {
	t.Helper()
	s := newSignal()
	pub, err := d.Submit(drivers.RowBatch{Dir: drivers.Publish, Rows: []drivers.Row{{Key: key, Handle: hs, Slot: 0}}}, s.fire)
	if err != nil {
		t.Fatalf("publish: %v %s", err, repro(t))
	}
	until(t, s, "the publish", func() bool { return pub.Access() == drivers.AccessEnded && pub.Results()[0].Final() })
	f, err := d.Submit(drivers.RowBatch{Dir: drivers.Fetch, Rows: []drivers.Row{{Key: key, Handle: hd, Slot: slot}}}, s.fire)
	if err != nil {
		t.Fatalf("fetch: %v %s", err, repro(t))
	}
	until(t, s, "the fetch", func() bool { return f.Access() == drivers.AccessEnded })
	return f
}

func pair(t *testing.T, d procdriver.Process, sh *arena.Shared) (src, dst *arena.Arena, hs, hd drivers.Handle) {
	t.Helper()
	src, dst = lent(sh, "src", 4, 64, true), lent(sh, "dst", 4, 64, true)
	var err error
	if hs, err = d.Register(src.Region()); err != nil {
		t.Fatalf("register: %v %s", err, repro(t))
	}
	if hd, err = d.Register(dst.Region()); err != nil {
		t.Fatalf("register: %v %s", err, repro(t))
	}
	return src, dst, hs, hd
}

// finding is the first of fs with rule, or a failure.
func finding(t *testing.T, fs []rules.Violation, rule rules.ID) rules.Violation {
	t.Helper()
	for _, f := range fs {
		if f.Rule == rule {
			return f
		}
	}
	t.Fatalf("no %s among the audit's findings %v %s", rule, fs, repro(t))
	return rules.Violation{}
}

// readsBy are the arena's reads by call id.
func readsBy(a *arena.Arena, id drivers.CallID) []arena.Touch {
	var out []arena.Touch
	for _, tc := range a.Touches() {
		if tc.Op == arena.Read && tc.By.Call == id {
			out = append(out, tc)
		}
	}
	return out
}

// writesBy are the arena's writes by call id.
func writesBy(a *arena.Arena, id drivers.CallID) []arena.Touch {
	var out []arena.Touch
	for _, tc := range a.Touches() {
		if tc.Op == arena.Write && tc.By.Call == id {
			out = append(out, tc)
		}
	}
	return out
}

// inModes runs body once per memory mode (shared, mirrored) as subtests.
func inModes(t *testing.T, body func(t *testing.T, sh *arena.Shared, mode string)) {
	for _, m := range memModes {
		t.Run(m.name, func(t *testing.T) { body(t, m.sh(t), m.name) })
	}
}

// TestAuditReferenceClean: the reference driver's writes reach the
// caller's memory as writes of the right call and row, and the audit finds
// nothing — also for an object whose bytes equal what the process's view
// of the slot held (no change to see: the write is recorded when the row
// is reported OK): the canary of a mirrored slot, the caller's own bytes of
// a shared one.
func TestAuditReferenceClean(t *testing.T) { inModes(t, auditReferenceClean) }

func auditReferenceClean(t *testing.T, sh *arena.Shared, mode string) {
	d := start(t, refCmd(t, "--latency-ms", "0"), nil)
	src, dst, hs, hd := pair(t, d, sh)
	same := bytes.Repeat([]byte{procdriver.Canary}, 64)
	if mode == "shared" {
		same = dst.Peek(1)
	}
	for i, content := range [][]byte{bytes.Repeat([]byte{1, 2, 3, 4}, 16), same} {
		src.Fill(0, content)
		f := roundTrip(t, d, hs, hd, string(rune('a'+i)), i)
		if got := dst.Peek(i); !bytes.Equal(got, content) || f.Results()[0] != drivers.OK {
			t.Errorf("fetch %d: %v, slot %x, want OK and %x %s", i, f.Results(), got[:8], content[:8], repro(t))
		}
		if w := writesBy(dst, f.ID()); len(w) != 1 || w[0].Slot != i || w[0].By.Row != 0 {
			t.Errorf("fetch %d: writes %v, want one write of slot %d by call %d row 0 %s", i, w, i, f.ID(), repro(t))
		}
		// Zero copy: the parent reads no PUBLISH slot of shared memory (a
		// mirrored one it reads once, to fill the mapping).
		if reads := readsBy(src, f.ID()-1); (mode == "shared") != (len(reads) == 0) {
			t.Errorf("publish %d: reads of its slot %v in mode %s %s", i, reads, mode, repro(t))
		}
	}
	shutdown(t, d)
	if fs := d.Findings(); len(fs) != 0 {
		t.Errorf("the audit found %v on the reference driver %s", fs, repro(t))
	}
}

// TestAuditLateWrite: a write into a FETCH slot after the call reported
// ENDED lands in the caller's memory (the late write really lands), as the
// call's and row's own write, after ENDED — what the memory oracle judges
// D-ACCESS-END — and the driver's own audit names it.
func TestAuditLateWrite(t *testing.T) { inModes(t, auditLateWrite) }

func auditLateWrite(t *testing.T, sh *arena.Shared, mode string) {
	d := start(t, brokenCmd(t, "LateWriteAfterEnded", "--latency-ms", "0"), nil)
	src, dst, hs, hd := pair(t, d, sh)
	src.Fill(0, bytes.Repeat([]byte{9}, 64))
	f := roundTrip(t, d, hs, hd, "k", 2)
	d.Drain() // the next request: the late write happens
	shutdown(t, d)
	v := finding(t, d.Findings(), rules.DAccessEnd)
	if v.Call != uint64(f.ID()) || v.Row != 0 || v.Key != "k" || v.Region != "dst" {
		t.Errorf("finding %v: want call %d row 0 key k region dst %s", v, f.ID(), repro(t))
	}
	if got := dst.Peek(2); !bytes.Equal(got, bytes.Repeat([]byte{0xEE}, 64)) {
		t.Errorf("the late write did not land in the caller's slot: %x %s", got[:8], repro(t))
	}
	if w := writesBy(dst, f.ID()); len(w) != 2 {
		t.Errorf("writes by the fetch: %v, want its transfer and its late write %s", w, repro(t))
	}
}

// TestAuditMissTouched: a write into the slot of a FETCH row reported MISS.
func TestAuditMissTouched(t *testing.T) { inModes(t, auditMissTouched) }

func auditMissTouched(t *testing.T, sh *arena.Shared, mode string) {
	d := start(t, brokenCmd(t, "TouchesOnMiss", "--latency-ms", "0"), nil)
	_, dst, _, hd := pair(t, d, sh)
	s := newSignal()
	f, err := d.Submit(drivers.RowBatch{Dir: drivers.Fetch, Rows: []drivers.Row{{Key: "absent", Handle: hd, Slot: 1}}}, s.fire)
	if err != nil {
		t.Fatal(err)
	}
	until(t, s, "the fetch", func() bool { return f.Access() == drivers.AccessEnded })
	shutdown(t, d)
	v := finding(t, d.Findings(), rules.DStatus)
	if v.Call != uint64(f.ID()) || v.Row != 0 || f.Results()[0] != drivers.Miss {
		t.Errorf("finding %v on %v: want call %d row 0 MISS %s", v, f.Results(), f.ID(), repro(t))
	}
	if w := writesBy(dst, f.ID()); len(w) != 1 || w[0].Slot != 1 {
		t.Errorf("writes by the fetch: %v, want the one into its MISS slot %s", w, repro(t))
	}
}

// TestAuditAfterUnregister: a write into a region after it was
// unregistered reaches the caller's memory as a touch of an unregistered
// region (the arena's S-NO-LATE-ACCESS) and the audit names it.
func TestAuditAfterUnregister(t *testing.T) { inModes(t, auditAfterUnregister) }

func auditAfterUnregister(t *testing.T, sh *arena.Shared, mode string) {
	d := start(t, brokenCmd(t, "WritesAfterUnregister", "--latency-ms", "0"), nil)
	src, dst, hs, hd := pair(t, d, sh)
	src.Fill(0, bytes.Repeat([]byte{5}, 64))
	f := roundTrip(t, d, hs, hd, "k", 3)
	if err := d.Unregister(hd); err != nil {
		t.Fatalf("unregister: %v %s", err, repro(t))
	}
	dst.SetRegistered(false) // as the contract monitor does
	d.Drain()                // the next request: the write after unregister
	shutdown(t, d)
	v := finding(t, d.Findings(), rules.SNoLateAccess)
	if v.Region != "dst" || v.Call != uint64(f.ID()) {
		t.Errorf("finding %v: want region dst, call %d %s", v, f.ID(), repro(t))
	}
	found := false
	for _, av := range dst.Violations() {
		found = found || av.Rule == rules.SNoLateAccess
	}
	if !found {
		t.Errorf("the arena saw no touch of its unregistered region: %v %s", dst.Violations(), repro(t))
	}
}

// TestAuditLateWriteReleased: in shared memory a late write lands in the
// caller's slot itself, before or after its lender released it (Release
// poisons the slot, so a write just before it would vanish): a write
// before the release is found by the release's own check, as the call's
// write while the slot was still lent; one after it, by the next audit, as
// a touch of a slot at the lender (the arena's S-NO-LATE-ACCESS). Both are
// the driver's D-ACCESS-END, naming the call and row.
func TestAuditLateWriteReleased(t *testing.T) {
	for _, tc := range []struct {
		name        string
		releaseLate bool // Release after the late write
		state       arena.SlotState
		slot        []byte
	}{
		{"write then release", true, arena.Lent, bytes.Repeat([]byte{0xEE}, 64)},
		{"release then write", false, arena.AtLender, bytes.Repeat([]byte{0xEE}, 64)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := start(t, brokenCmd(t, "LateWriteAfterEnded", "--latency-ms", "0"), nil)
			src, dst, hs, hd := pair(t, d, shared(t))
			src.Fill(0, bytes.Repeat([]byte{9}, 64))
			f := roundTrip(t, d, hs, hd, "k", 2)
			if !tc.releaseLate {
				dst.Release(2)
			}
			d.Drain() // the next request: the late write lands before the answer
			if tc.releaseLate {
				dst.Release(2)
			}
			shutdown(t, d)
			v := finding(t, d.Findings(), rules.DAccessEnd)
			if v.Call != uint64(f.ID()) || v.Row != 0 || v.Key != "k" || v.Region != "dst" {
				t.Errorf("finding %v: want call %d row 0 key k region dst %s", v, f.ID(), repro(t))
			}
			w := writesBy(dst, f.ID())
			// (It writes again at shutdown: a poisoned slot then changes once more.)
			if len(w) < 2 || !w[1].Audited || w[1].State != tc.state || w[1].Slot != 2 || w[1].By.Row != 0 {
				t.Fatalf("writes by the fetch: %v, want its transfer, then its late write of slot 2 in state %s %s", w, tc.state, repro(t))
			}
			late := false
			for _, av := range dst.Violations() {
				late = late || (av.Rule == rules.SNoLateAccess && av.Touch.By.Call == f.ID())
			}
			if tc.state == arena.AtLender && !late {
				t.Errorf("the arena's violations %v: want S-NO-LATE-ACCESS by call %d %s", dst.Violations(), f.ID(), repro(t))
			}
			if got := dst.Peek(2); !bytes.Equal(got, tc.slot) {
				t.Errorf("slot 2 holds %x, want %x %s", got[:8], tc.slot[:8], repro(t))
			}
		})
	}
}

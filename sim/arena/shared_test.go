package arena

import (
	"bytes"
	"os"
	"testing"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
)

// foreign writes p at off of a's bytes through the file, as another
// process that mapped it would (the arena's own slice is not used).
func foreign(t *testing.T, a *Arena, off int, p []byte) {
	t.Helper()
	path, base, ok := a.SharedFile()
	if !ok {
		t.Fatalf("arena %s is not shared (repro: go test ./sim/arena -run '%s')", a.Label(), t.Name())
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("%v (repro: go test ./sim/arena -run '%s')", err, t.Name())
	}
	defer f.Close()
	if _, err := f.WriteAt(p, base+int64(off)); err != nil {
		t.Fatalf("%v (repro: go test ./sim/arena -run '%s')", err, t.Name())
	}
}

func newShared(t *testing.T) *Shared {
	t.Helper()
	sh, err := NewShared(t.TempDir())
	if err != nil {
		t.Fatalf("NewShared: %v (repro: go test ./sim/arena -run '%s')", err, t.Name())
	}
	t.Cleanup(func() { sh.Close() })
	return sh
}

// TestSharedAudit: a write made behind the arena's back (through the file,
// as a driver process does) is found by Audit, recorded as a write by the
// toucher the caller names, judged by the arena's rules (a released slot,
// a region not registered) and handed to the hook; the arena's own writes
// (Fill, Release, Write) never are; a foreign write that an own write is
// about to overwrite is kept, with the slot's state before it, for the
// next Audit.
func TestSharedAudit(t *testing.T) {
	by := func(slot int) drivers.Toucher { return drivers.Toucher{Call: drivers.CallID(10 + slot), Row: 0} }
	cases := []struct {
		name  string
		setup func(t *testing.T, a *Arena)
		slots []int    // Audit's slots (nil: all)
		want  []int    // slots found
		rule  rules.ID // the arena's violation (0: none)
		state SlotState
	}{
		{"own writes are not found", func(t *testing.T, a *Arena) {
			a.Fill(0, []byte("abcdefgh"))
			a.Write(drivers.Toucher{Call: 1}, 8, []byte("ijklmnop"))
			a.Release(2)
		}, nil, nil, 0, 0},
		{"write of a lent slot", func(t *testing.T, a *Arena) { foreign(t, a, 8, []byte("x")) }, nil, []int{1}, 0, Lent},
		{"write of a released slot", func(t *testing.T, a *Arena) { a.Release(1); foreign(t, a, 8, []byte("x")) }, nil, []int{1}, rules.SNoLateAccess, AtLender},
		{"write after unregister", func(t *testing.T, a *Arena) { a.SetRegistered(false); foreign(t, a, 24, []byte("x")) }, nil, []int{3}, rules.SNoLateAccess, Lent},
		{"only the slots asked", func(t *testing.T, a *Arena) { foreign(t, a, 0, []byte("x")); foreign(t, a, 8, []byte("y")) }, []int{1}, []int{1}, 0, Lent},
		{"overwritten by Release", func(t *testing.T, a *Arena) { foreign(t, a, 16, []byte("x")); a.Release(2) }, []int{}, []int{2}, 0, Lent},
		{"overwritten by Fill", func(t *testing.T, a *Arena) {
			a.Release(2)
			foreign(t, a, 16, []byte("x"))
			a.Fill(2, []byte("12345678"))
		}, []int{}, []int{2}, rules.SNoLateAccess, AtLender},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var hooked []Touch
			a := New("r0", 4, 8, Options{Log: true, Shared: newShared(t), OnTouch: func(t Touch) { hooked = append(hooked, t) }})
			a.SetRegistered(true)
			for i := range 4 {
				a.Lend(i, 1)
			}
			tc.setup(t, a)
			hooked = nil
			got := a.Audit(by, tc.slots)
			repro := "(repro: go test ./sim/arena -run 'TestSharedAudit/" + tc.name + "')"
			if len(got) != len(tc.want) || (len(got) > 0 && got[0] != tc.want[0]) {
				t.Fatalf("Audit found %v, want %v %s", got, tc.want, repro)
			}
			if tc.slots == nil {
				if again := a.Audit(by, nil); len(again) != 0 {
					t.Fatalf("a second Audit found %v again %s", again, repro)
				}
			}
			if len(got) > 0 {
				h := hooked[0]
				if h.By != by(tc.want[0]) || h.Op != Write || h.Slot != tc.want[0] || !h.Audited || h.State != tc.state {
					t.Fatalf("hooked %v, want an audited write of slot %d by %v in state %s %s", h, tc.want[0], by(tc.want[0]), tc.state, repro)
				}
			}
			vs := a.Violations()
			switch {
			case tc.rule == 0 && len(vs) > 0:
				t.Fatalf("unexpected %v %s", vs, repro)
			case tc.rule != 0 && (len(vs) != 1 || vs[0].Rule != tc.rule || vs[0].Touch.By != by(tc.want[0])):
				t.Fatalf("violations %v, want one %s by %v %s", vs, tc.rule, by(tc.want[0]), repro)
			}
		})
	}
}

// TestSharedBytes: the arena's bytes are the file's (both ways), Witness
// records a write without moving a byte, and Close leaves every arena
// readable (a heap copy) and removes the files.
func TestSharedBytes(t *testing.T) {
	repro := "(repro: go test ./sim/arena -run TestSharedBytes)"
	sh := newShared(t)
	a := New("a", 2, 8, Options{Shared: sh, Log: true})
	b := New("b", 3, 100, Options{Shared: sh})
	pa, offA, _ := a.SharedFile()
	pb, offB, _ := b.SharedFile()
	if pa != pb || offA != 0 || offB%int64(os.Getpagesize()) != 0 || offB < 16 {
		t.Fatalf("placement %s@%d, %s@%d: want one file, page-aligned pieces %s", pa, offA, pb, offB, repro)
	}
	if err := drivers.CheckGeometry(a.Region(), b.Region()); err != nil {
		t.Fatalf("two shared arenas overlap: %v %s", err, repro)
	}
	a.Fill(1, []byte("ownbytes"))
	raw, err := os.ReadFile(pa)
	if err != nil || !bytes.Equal(raw[8:16], []byte("ownbytes")) {
		t.Fatalf("the file holds %q, want the arena's bytes (%v) %s", raw[8:16], err, repro)
	}
	foreign(t, b, 100, []byte("theirs"))
	if got := b.Peek(1); !bytes.Equal(got[:6], []byte("theirs")) {
		t.Fatalf("the arena reads %q, want the file's bytes %s", got[:6], repro)
	}
	if err := a.WitnessWrite(drivers.Toucher{Call: 3, Row: 1}, 8, 8); err != nil || len(a.Touches()) != 1 || !a.Touches()[0].Audited {
		t.Fatalf("WitnessWrite: %v, touches %v %s", err, a.Touches(), repro)
	}
	if err := sh.Close(); err != nil {
		t.Fatalf("Close: %v %s", err, repro)
	}
	if _, err := os.Stat(sh.Dir()); !os.IsNotExist(err) {
		t.Fatalf("Close left %s (%v) %s", sh.Dir(), err, repro)
	}
	if got := a.Peek(1); !bytes.Equal(got, []byte("ownbytes")) {
		t.Fatalf("after Close the arena reads %q %s", got, repro)
	}
	if _, _, ok := a.SharedFile(); ok || a.Audit(func(int) drivers.Toucher { return drivers.Toucher{} }, nil) != nil {
		t.Fatalf("after Close the arena is still shared %s", repro)
	}
	if c := New("c", 1, 8, Options{Shared: sh}); sh.Err() == nil || c.Len() != 8 {
		t.Fatalf("an arena placed after Close: err %v, %d bytes; want ErrSharedClosed and heap memory %s", sh.Err(), c.Len(), repro)
	}
}

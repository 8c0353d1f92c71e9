package drivers

import (
	"errors"
	"strings"
	"testing"
)

func region(label string, slots, slotBytes, memBytes int) Region {
	return Region{Label: label, Slots: slots, SlotBytes: slotBytes, Mem: make(Bytes, memBytes)}
}

func TestCheckGeometry(t *testing.T) {
	shared := make(Bytes, 64)
	cases := []struct {
		name    string
		regions []Region
		names   string // region named in the error; "" = valid
	}{
		{"valid", []Region{region("a", 4, 8, 32), region("b", 2, 16, 40)}, ""},
		{"zero slot bytes", []Region{region("a", 4, 0, 32)}, `"a"`},
		{"zero slots", []Region{region("z", 0, 8, 32)}, `"z"`},
		{"too small", []Region{region("s", 5, 8, 32)}, `"s"`},
		{"duplicate label", []Region{region("d", 1, 8, 8), region("d", 1, 8, 8)}, `"d"`},
		{"no memory", []Region{{Label: "n", Slots: 1, SlotBytes: 1}}, `"n"`},
		{"shared memory", []Region{{Label: "p", Slots: 4, SlotBytes: 8, Mem: shared[:32]}, {Label: "q", Slots: 4, SlotBytes: 8, Mem: shared[24:56]}}, `"q"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckGeometry(tc.regions...)
			if tc.names == "" {
				if err != nil {
					t.Fatalf("valid regions refused: %v (repro: go test ./drivers -run 'TestCheckGeometry/%s')", err, tc.name)
				}
				return
			}
			if !errors.Is(err, ErrBadGeometry) || !strings.Contains(err.Error(), "bad region geometry") || !strings.Contains(err.Error(), tc.names) {
				t.Fatalf("got %v, want bad region geometry naming %s (repro: go test ./drivers -run 'TestCheckGeometry/%s')", err, tc.names, tc.name)
			}
		})
	}
}

func TestBatchValidate(t *testing.T) {
	caps := Capabilities{MaxRowsPerOp: 2, CanFetch: true}
	live := func(h Handle) (Region, bool) { return region("r", 4, 8, 32), h == 1 }
	row := func(key string, h Handle, slot int) Row { return Row{Key: key, Handle: h, Slot: slot} }
	cases := []struct {
		name  string
		batch RowBatch
		want  string // "" = valid
	}{
		{"valid", RowBatch{Fetch, []Row{row("k1", 1, 0), row("k2", 1, 1)}}, ""},
		{"empty", RowBatch{Fetch, nil}, "0 rows"},
		{"too many", RowBatch{Fetch, []Row{row("a", 1, 0), row("b", 1, 1), row("c", 1, 2)}}, "MaxRowsPerOp"},
		{"repeated key", RowBatch{Fetch, []Row{row("k", 1, 0), row("k", 1, 1)}}, "D-BATCH-KEYS"},
		{"same slot", RowBatch{Fetch, []Row{row("a", 1, 0), row("b", 1, 0)}}, "both use slot"},
		{"dead handle", RowBatch{Fetch, []Row{row("a", 2, 0)}}, "not a live registration"},
		{"slot outside", RowBatch{Fetch, []Row{row("a", 1, 4)}}, "outside region"},
		{"unsupported direction", RowBatch{Publish, []Row{row("a", 1, 0)}}, "not supported"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.batch.Validate(caps, live)
			if tc.want == "" {
				if err != nil {
					t.Fatalf("valid batch refused: %v (repro: go test ./drivers -run 'TestBatchValidate/%s')", err, tc.name)
				}
				return
			}
			if !errors.Is(err, ErrInvalidSubmission) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v, want InvalidSubmission mentioning %q (repro: go test ./drivers -run 'TestBatchValidate/%s')", err, tc.want, tc.name)
			}
		})
	}
}

func TestAccessTransitions(t *testing.T) {
	legal := map[[2]Access]bool{
		{AccessPending, AccessEnded}: true, {AccessPending, AccessUnprovable}: true,
		{AccessUnprovable, AccessEnded}: true,
	}
	all := []Access{AccessPending, AccessEnded, AccessUnprovable}
	for _, a := range all {
		for _, b := range all {
			want := a == b || legal[[2]Access{a, b}]
			if got := a.CanBecome(b); got != want {
				t.Errorf("%v → %v: CanBecome = %v, want %v (repro: go test ./drivers -run TestAccessTransitions)", a, b, got, want)
			}
		}
	}
}

func TestViewCheck(t *testing.T) {
	v := View{Rows: []Row{{Key: "a", Position: 0}, {Key: "b", Position: 1}}, Mask: []bool{true, false}}
	if err := v.Check(); err != nil || v.Active() != 1 {
		t.Fatalf("valid view: %v, active %d (repro: go test ./drivers -run TestViewCheck)", err, v.Active())
	}
	v.Mask = v.Mask[:1]
	if err := v.Check(); !errors.Is(err, ErrInvalidSubmission) {
		t.Fatalf("short mask accepted: %v (repro: go test ./drivers -run TestViewCheck)", err)
	}
}

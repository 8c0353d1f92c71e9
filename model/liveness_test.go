package model

import (
	"slices"
	"strings"
	"testing"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
)

func TestCheckLiveness(t *testing.T) {
	done := RowInfo{Key: "a", Status: drivers.OK}
	open := RowInfo{Key: "b"}
	cases := []struct {
		name  string
		calls []CallInfo
		want  []drivers.CallID
	}{
		{"all done", []CallInfo{{ID: 1, Rows: []RowInfo{done}, Access: drivers.AccessEnded}}, nil},
		{"unprovable is evidence", []CallInfo{{ID: 1, Rows: []RowInfo{done}, Access: drivers.AccessUnprovable}}, nil},
		{"lost final result", []CallInfo{{ID: 1, Rows: []RowInfo{done, open}, Access: drivers.AccessEnded}}, []drivers.CallID{1}},
		{"no access evidence", []CallInfo{{ID: 2, Rows: []RowInfo{done}, Access: drivers.AccessPending}}, []drivers.CallID{2}},
		{"labelled at shutdown", []CallInfo{{ID: 3, Rows: []RowInfo{open}, Labelled: "call:3:unprovable"}}, nil},
		{"several pending, named in order", []CallInfo{
			{ID: 4, Rows: []RowInfo{open}}, {ID: 5, Rows: []RowInfo{done}, Access: drivers.AccessEnded}, {ID: 6, Rows: []RowInfo{open}},
		}, []drivers.CallID{4, 6}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			vs := CheckLiveness(c.calls, 9, 11)
			var got []drivers.CallID
			for _, v := range vs {
				got = append(got, drivers.CallID(v.Call))
			}
			if !slices.Equal(got, c.want) {
				t.Fatalf("pending %v, want %v: %v (repro: go test ./model -run 'TestCheckLiveness/%s')", got, c.want, vs, t.Name()[len("TestCheckLiveness/"):])
			}
			for _, v := range vs {
				if v.Class != rules.Liveness || v.Rule != rules.DSub3 || v.At != 9 || v.Seed != 11 || !strings.Contains(v.Detail, "hang") {
					t.Fatalf("bad liveness violation %v (repro: go test ./model -run 'TestCheckLiveness')", v)
				}
			}
		})
	}
}

// TestLivenessFromRecorder: a driver that finished a row but whose final
// change never reached the monitor (a lost callback, D-CB-2) leaves the row
// pending in the recorder's view: a liveness failure naming the call; a
// shutdown label naming it excuses it.
func TestLivenessFromRecorder(t *testing.T) {
	for _, labelled := range []bool{false, true} {
		r := newRig(t, RecorderOptions{Seed: 2})
		r.submit(20, batch(drivers.Fetch, row("k", 0), row("j", 1)))
		r.final(20, 0, drivers.Miss) // row 1's result and the access change are lost
		if labelled {
			r.rec.ShutDown(r.tick(), []string{"region:A:retained", drivers.CallLabel(20, drivers.WhyUnprovable)})
		}
		vs := r.rec.LivenessViolations(r.clk.now)
		if labelled != (len(vs) == 0) {
			t.Fatalf("labelled=%v: violations %v (repro: go test ./model -run TestLivenessFromRecorder)", labelled, vs)
		}
		if !labelled && (vs[0].Call != 20 || vs[0].Row != 1 || vs[0].Key != "j" || !strings.HasPrefix(vs[0].String(), "D-SUB-3 [liveness] call 20 row 1")) {
			t.Fatalf("violation %v should name call 20, row 1, key j (repro: go test ./model -run TestLivenessFromRecorder)", vs[0])
		}
	}
}

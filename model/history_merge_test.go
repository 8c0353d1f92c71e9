package model

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"

	"github.com/storesim/storesim/drivers"
)

// TestHistoryMergeIsStableSort: History merges the extra ops into the
// calls' rows when both are in call order; the result must be what the
// stable sort of the two appended gives, ties included. AppendHistory
// appends the same after another history.
func TestHistoryMergeIsStableSort(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for round := range 200 {
		r := NewRecorder(RecorderOptions{})
		seq := int64(0)
		for c := range rng.IntN(6) {
			seq += rng.Int64N(3)
			rows := make([]RowInfo, 1+rng.IntN(3))
			for i := range rows {
				rows[i] = RowInfo{Key: "k" + strconv.Itoa(rng.IntN(4))}
			}
			r.order = append(r.order, &callRec{CallInfo: CallInfo{ID: drivers.CallID(c + 1), CallSeq: seq, Rows: rows}})
		}
		seq = 0
		for range rng.IntN(6) {
			seq += rng.Int64N(3)
			r.extra = append(r.extra, extraOp{kind: KindLookup, key: "x" + strconv.Itoa(rng.IntN(4)), seq: seq})
		}
		got := r.History()
		var want History
		for _, c := range r.order {
			for i, row := range c.Rows {
				want = append(want, Op{Kind: KindFetch, Key: row.Key, Call: c.CallSeq, Return: Never, CallID: c.ID, Row: i})
			}
		}
		for i := range r.extra {
			want = append(want, r.extra[i].op())
		}
		slices.SortStableFunc(want, func(a, b Op) int { return cmp.Compare(a.Call, b.Call) })
		if !slices.Equal(got, want) {
			t.Fatalf("round %d: merged history\n%v\nwant\n%v (repro: go test ./model -run TestHistoryMergeIsStableSort)", round, got, want)
		}
		// Appended after another history, whose calls it must leave alone
		// (a late call there would otherwise sort or merge into it).
		before := History{{Kind: KindFetch, Key: "p", Call: 99, Return: Never}}
		if got := r.AppendHistory(slices.Clip(before)); !slices.Equal(got, append(before, want...)) {
			t.Fatalf("round %d: appended history\n%v\nwant\n%v (repro: go test ./model -run TestHistoryMergeIsStableSort)", round, got, append(before, want...))
		}
		if got := r.AppendHistory(slices.Grow(before, 20)); !slices.Equal(got, append(before, want...)) {
			t.Fatalf("round %d: appended history (room)\n%v\nwant\n%v (repro: go test ./model -run TestHistoryMergeIsStableSort)", round, got, append(before, want...))
		}
	}
}

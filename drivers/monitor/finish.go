package monitor

// The end-of-run judgement (Finish): lost wake-ups, the capability check by batch size. Moved out of monitor.go, unchanged.

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
)

// SizeStats reports, per batch size, how valid Submits fared (the
// MaxRowsPerOp-honesty evidence), sorted by size.
func (m *Monitor) SizeStats() []SizeStat {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.sizeStatsLocked()
}

func (m *Monitor) sizeStatsLocked() []SizeStat {
	out := slices.Clone(m.sizes)
	for _, c := range m.order {
		if !c.settled {
			countOutcome(out, c)
		}
	}
	return slices.DeleteFunc(out, func(s SizeStat) bool { return s.Submitted == 0 })
}

// countOutcome adds c's row outcome to its size's stat.
func countOutcome(stats []SizeStat, c *callRec) {
	if c.invalid || len(c.known) >= len(stats) {
		return
	}
	faults, good := 0, 0
	for _, s := range c.known {
		switch s {
		case drivers.Fault:
			faults++
		case drivers.OK, drivers.Miss:
			good++
		}
	}
	if good > 0 {
		stats[len(c.known)].Succeeded++
	} else if faults == len(c.known) {
		stats[len(c.known)].AllFault++
	}
}

// Finish runs the end-of-run checks — every call not yet settled is read
// once more and compared with what its callbacks saw (D-CB-1, D-CB-2) and
// with its facts (D-CB-3, D-STATUS), and the full-size batches are judged
// ("capabilities") — and returns every violation, sorted. A call is settled,
// and forgotten, once a callback saw every row final and access ENDED:
// nothing may change after that, so the monitor keeps memory bounded by the
// calls in flight (a silent change after that point is seen only if
// someone reads the call again). Call it at
// quiescence (simulated runs) or after Shutdown returned (real runs), when no
// callback can still come. It may be called more than once.
func (m *Monitor) Finish() []rules.Violation {
	m.mu.Lock()
	recs := slices.DeleteFunc(slices.Clone(m.order), func(c *callRec) bool { return c.settled })
	m.mu.Unlock()
	slices.SortFunc(recs, func(a, b *callRec) int { return cmp.Or(cmp.Compare(a.id, b.id), cmp.Compare(a.index, b.index)) })
	for _, c := range recs {
		v := c.facts.Load()
		buf, lent := c.lendBuf()
		res, acc := readState(c.inner, buf)
		m.mu.Lock()
		m.observeLocked(c, res, acc, v)
		m.unsignalledLocked(c, res, acc)
		if acc.Evidenced() && len(res) == len(c.known) {
			for i, s := range res {
				if !s.Final() {
					m.violateLocked(rules.Violation{Rule: rules.DStatus, Call: uint64(c.id), Row: i, Key: c.batch.Rows[i].Key,
						Detail: fmt.Sprintf("row has no final result at the end although the call's access is %v", acc)})
				}
			}
		}
		m.mu.Unlock()
		c.returnBuf(lent)
	}
	m.mu.Lock()
	m.fullSizeLocked()
	m.mu.Unlock()
	return m.Violations()
}

// fullSizeLocked is the MaxRowsPerOp-honesty judgement ("capabilities",
// MaxRowsOffByOne): every full-size batch failed (refused, or every row
// FAULT) while smaller ones succeeded, and so many of them failed that
// chance is not a credible cause. Chance is estimated from the smaller
// batches: q = (failed+1)/(submitted+2) is their failure rate (Laplace
// smoothed), and n full-size failures in a row happen with probability
// about q^n. Per-call faults (error-before, timeout …) hit every size
// alike and per-row faults make an all-FAULT answer rarer for more rows, so
// q is a fair estimate; the verdict needs q^n < 1e-6 and n >=
// Options.FullSizeMinCalls.
func (m *Monitor) fullSizeLocked() {
	var full SizeStat
	smallOK, smallFailed, smallSubmitted := 0, 0, 0
	for _, s := range m.sizeStatsLocked() {
		if s.Rows == m.caps.MaxRowsPerOp {
			full = s
			continue
		}
		smallOK += s.Succeeded
		smallFailed += s.Refused + s.AllFault
		smallSubmitted += s.Submitted
	}
	n := full.Refused + full.AllFault
	if n < m.opts.FullSizeMinCalls || full.Succeeded > 0 || smallOK == 0 {
		return
	}
	q := float64(smallFailed+1) / float64(smallSubmitted+2)
	if math.Pow(q, float64(n)) >= 1e-6 {
		return
	}
	m.violateLocked(rules.Violation{Rule: rules.DCaps, Row: -1,
		Detail: fmt.Sprintf("every one of %d full-size batches (MaxRowsPerOp=%d rows) failed (%d refused, %d all FAULT) while %d of %d smaller ones succeeded",
			full.Submitted, m.caps.MaxRowsPerOp, full.Refused, full.AllFault, smallOK, smallSubmitted)})
}

// unsignalledLocked is the D-CB-1 / D-CB-2 judgement of the package doc: any
// fact of the call's current state that no callback snapshot saw.
func (m *Monitor) unsignalledLocked(c *callRec, res []drivers.Status, acc drivers.Access) {
	if c.unknown || c.badLen || len(res) != len(c.cbRes) {
		return
	}
	var missing []string
	for i, s := range res {
		if s.Final() && !c.cbRes[i].Final() {
			missing = append(missing, fmt.Sprintf("row %d %v", i, s))
		}
	}
	if acc != c.cbAcc && c.cbAcc.CanBecome(acc) {
		missing = append(missing, "access "+acc.String())
	}
	if len(missing) == 0 {
		return
	}
	what := strings.Join(missing, ", ")
	if c.empty > 0 {
		m.violateLocked(rules.Violation{Rule: rules.DCB1, Call: uint64(c.id), Row: -1,
			Detail: fmt.Sprintf("%d of %d callbacks saw nothing new (signal before state) and no callback followed the change to %s", c.empty, c.callbacks, what)})
		return
	}
	m.violateLocked(rules.Violation{Rule: rules.DCB2, Call: uint64(c.id), Row: -1,
		Detail: fmt.Sprintf("no callback followed the last change (%d callbacks ran, none saw %s)", c.callbacks, what)})
}

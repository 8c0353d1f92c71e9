package backend

import (
	"fmt"
	"slices"

	"github.com/storesim/storesim/drivers"
)

// Stats are the counters and gauges a user of the backend would watch.
type Stats struct {
	// Attempts admitted; of those, committed Delivered, Failed, Cancelled.
	Attempts, Delivered, Failed, Cancelled uint64
	// Rejected: admissions refused with ErrSubmissionRejected; Invalid:
	// refused as malformed (drivers.ErrInvalidSubmission).
	Rejected, Invalid uint64
	// Row counts of Delivered attempts: Served rows; Missed fetch rows;
	// publish rows Declined by the store, and Raced (declined, then found
	// present: served).
	Served, Missed, Declined, Raced uint64
	// Calls submitted and look-ups asked.
	Calls, Lookups uint64
	// InFlight calls without evidence; Queued batches.
	InFlight, Queued int
	// Unprovable is the gauge of calls UNPROVABLE now (B-BOUND);
	// UnprovableTotal counts every call that ever was.
	Unprovable      int
	UnprovableTotal uint64
	// RetainedBytes is the slot memory UNPROVABLE calls keep retained.
	RetainedBytes int64
}

// Stats returns the current counters.
func (b *Backend) Stats() Stats {
	s := b.stats
	s.InFlight, s.Queued = b.inFlight, len(b.queue)
	s.Unprovable, s.RetainedBytes = b.unprovable, b.retainedBytes
	return s
}

// Pending lists unfinished work for hang reports (sim.Scheduler.AddPending,
// which prefixes the source name):
// attempts without an outcome, calls without evidence, a shutdown that has
// not reported. UNPROVABLE calls are finished: they will never be waited for.
func (b *Backend) Pending() []string {
	var out []string
	for _, a := range b.open {
		out = append(out, fmt.Sprintf("attempt %d: no outcome", a.id))
	}
	for _, c := range b.live {
		if c.access == drivers.AccessPending {
			out = append(out, fmt.Sprintf("call %d: access PENDING", c.id))
		}
	}
	if b.shut.started && !b.shut.finished {
		out = append(out, "shutdown not finished")
	}
	slices.Sort(out)
	return out
}

package drivertest

// What a case does again when a conforming driver may refuse once: a
// close that failed (D-REG-4), a Submit pushed back (ErrRejected).

import (
	"errors"

	"github.com/storesim/storesim/drivers"
)

// closeIdle closes a region no call names. A close may fail and leave the
// binding live (D-REG-4: a later close retries), so a failure is retried up
// to 8 times before the run ends as not exercised.
func (w *world) closeIdle(h drivers.Handle) {
	var err error
	for range 8 {
		if err = w.unregister(h); err == nil {
			return
		}
	}
	w.skip("closing an idle region failed 8 times (last: %v)", err)
}

// closeIdleTogether is closeIdle for a together-registration: the regions
// that failed stay live (D-TOG-3) and closing the others again is a no-op
// (D-REG-3), so the whole set is retried.
func (w *world) closeIdleTogether(hs []drivers.Handle) {
	var err error
	for range 8 {
		if err = w.unregisterTogether(hs); err == nil {
			return
		}
	}
	w.skip("closing idle regions failed 8 times (last: %v)", err)
}

// patient submits like submit, but takes back-pressure as a backend does:
// a Submit refused with ErrRejected is retried up to 8 times, each after
// one step of the simulator (in real time, a millisecond's pause), the
// least that lets a call in flight make room: a longer wait would let every
// call end, and the run would race nothing.
func (w *world) patient(dir drivers.Direction, rows []drivers.Row) *callT {
	ct := w.submit(dir, rows)
	for try := 0; try < 8 && errors.Is(ct.err, drivers.ErrRejected); try++ {
		w.step()
		ct = w.submit(dir, rows)
	}
	return ct
}

// admitted is patient, and a run whose call is still refused is not
// exercised.
func (w *world) admitted(dir drivers.Direction, rows []drivers.Row) *callT {
	ct := w.patient(dir, rows)
	if ct.err != nil {
		w.skip("the call was refused: %v", ct.err)
	}
	return ct
}

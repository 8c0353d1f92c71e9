package broken

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/drivers/rules"
)

// The bugs. Each changes behaviour only in the situation its rule is about,
// in one of two forms (LiesAboutAccess uses both: a hook tells its wrapper
// when to fire):
//
//   - a wrapper: [driver.install] sets wrap points of the broken driver
//     (driver.go) — what the caller sees of the driver and its calls, the
//     change callback, the region memory the reference driver touches;
//   - a hook: [hooks] sets memdriver.Hooks, where the moment lies inside a
//     transfer step or under the reference driver's lock.
//
//	bug                     form     where
//	LiesAboutAccess         both     Access sees a quiet end; callback: the slot written after ENDED was told
//	ForgetsUnprovable       hook     Access: a client error's UNPROVABLE set as ENDED
//	CancelClaimsEnded       hook     Access: Cancel sets ENDED
//	MissAsFault             wrapper  Results
//	FaultAsMiss             wrapper  Results
//	LookupOutageAsAbsent    wrapper  Contains
//	TouchesOnMiss           hook     Row: a MISS row moves zeros into its slot
//	ShortReadOK             hook     Row: a short object read whole reports OK
//	ShortAnswer             wrapper  Results
//	ReorderedAnswer         wrapper  Results
//	OverwritesOnPublish     wrapper  memory: the held key dropped as the slot's last byte is read
//	ServesLastWriter        wrapper  memory: each PUBLISH's object kept per key, written into every FETCH OK
//	TornPublish             wrapper  memory: the slot read half, the rest put later
//	AcceptsRepeatedKey      hook     Batch
//	MaxRowsOffByOne         wrapper  Submit
//	OutsideSlot             wrapper  memory: two bytes across the slot's edge with the last chunk
//	AcceptsOverlap          hook     Waive D-REG-1
//	LeakyRegisterFailure    hook     Waive D-REG-2, D-TOG-1 (the first piece)
//	CloseByAddress          wrapper  Unregister
//	UnregisterLies          wrapper  Unregister, Shutdown labels
//	RegistersAfterShutdown  hook     Waive D-REG-5
//	UnregistersBusy         hook     Waive D-REG-6
//	LostWakeup              wrapper  callback
//	EarlySignal             wrapper  callback, Access, Drain
//	SignalUnderLock         wrapper  callback, Locked
//	SignalAfterShutdown     wrapper  callback, Shutdown
//	RegressingResult        hook     Result
//	BlockingCancel          wrapper  Cancel, Results, Access, callback, Drain, Shutdown, memory
//	DrainLies               wrapper  Drain
//	SilentShutdown          wrapper  Shutdown
//	BatchKeyedByKey         both     Batch; memory: a repeated key's earlier rows never written
//	ConcurrentPutTruncates  wrapper  memory: the put that ends beside another cuts the stored object
//	NotFoundAsError         hook     Row: an absent key's MISS set FAULT; Access: its call UNPROVABLE
//	LeaseExpiredRead        wrapper  memory: a FETCH chunk of an evicted key moves reused bytes
//	EmptyGetOK              hook     Row: an absent key's FETCH moves nothing and reports OK
//	NoTogetherRollback      hook     Waive D-TOG-1 (every piece)
//	DoubleRegistration      wrapper  Register, Unregister
//	ValidatesLate           wrapper  Submit, memory: the rows before an invalid one read
//
// The drivers whose bug hides in an answer the suite once took on trust
// (a "not done", a label, a NOT_ATTEMPTED, a refusal, a lookup) are in
// answers.go, with their own table.

// callState is what the wrappers keep per call, guarded by driver.mu.
type callState struct {
	forced []drivers.Status // BlockingCancel: the results Cancel completed inline (access shown ENDED)
	early  uint8            // EarlySignal: 1 the early signal is scheduled, 2 ENDED is shown
	shown  drivers.Access   // EarlySignal: the access last shown
}

// hooks are the reference driver's hooks bug n needs; nil for a wrapper.
func hooks(n Name) *memdriver.Hooks {
	waive := func(want ...rules.ID) *memdriver.Hooks {
		return &memdriver.Hooks{Waive: func(rule rules.ID, _ int) bool { return slices.Contains(want, rule) }}
	}
	switch n {
	case ForgetsUnprovable:
		return &memdriver.Hooks{Access: func(a memdriver.AccessChange) drivers.Access {
			if a.To == drivers.AccessUnprovable && a.ClientError {
				return drivers.AccessEnded // a client error mid-transfer reported as ENDED (D-ACCESS)
			}
			return a.To
		}}
	case TouchesOnMiss:
		return &memdriver.Hooks{Row: func(p *memdriver.RowPlan) {
			if p.Dir == drivers.Fetch && p.Status == drivers.Miss { // a MISS that writes the slot (D-STATUS)
				p.Data = make([]byte, p.SlotBytes)
				p.Limit = p.SlotBytes
			}
		}}
	case ShortReadOK:
		return &memdriver.Hooks{Row: func(p *memdriver.RowPlan) {
			if p.Dir == drivers.Fetch && p.Status == drivers.Fault && len(p.Data) > 0 && p.Limit == len(p.Data) && len(p.Data) < p.SlotBytes {
				p.Status = drivers.OK // a short object, read whole, reported OK (D-STATUS)
			}
		}}
	case CancelClaimsEnded:
		return &memdriver.Hooks{Access: func(a memdriver.AccessChange) drivers.Access {
			if a.Cancel {
				return drivers.AccessEnded // access ENDED at once, transfers still in flight (D-CAN-2)
			}
			return a.To
		}}
	case AcceptsRepeatedKey:
		return &memdriver.Hooks{Batch: func(b drivers.RowBatch) (check, move drivers.RowBatch) {
			return distinctKeys(b), keyedSlots(b)
		}}
	case AcceptsOverlap:
		return waive(rules.DReg1)
	case LeakyRegisterFailure:
		return &memdriver.Hooks{Waive: func(rule rules.ID, piece int) bool {
			// The refused region stays bound; of a failed together-registration
			// the first piece is never closed, yet nothing is in doubt.
			return rule == rules.DReg2 || rule == rules.DTog1 && piece == 0
		}}
	case RegistersAfterShutdown:
		return waive(rules.DReg5)
	case UnregistersBusy:
		return waive(rules.DReg6)
	case BatchKeyedByKey:
		return &memdriver.Hooks{Batch: func(b drivers.RowBatch) (check, move drivers.RowBatch) {
			return distinctKeys(b), b
		}}
	case NotFoundAsError:
		return notFoundAsError()
	case NoTogetherRollback:
		// Field bug: a batch registration that fails at buffer k returns the
		// error without deregistering buffers 0..k-1 (Mooncake transfer
		// engine's registerLocalMemoryBatch before PR #2869, and its
		// registerLocalMemory across transports before PR #2965): every
		// piece stays registered while the caller hears "refused".
		return waive(rules.DTog1)
	case RegressingResult:
		return &memdriver.Hooks{Result: func(r memdriver.RowResult) drivers.Status {
			return r.Status // a completion after the final result still changes it (D-CB-3)
		}}
	}
	return nil
}

// install sets the hooks and wrap points of bug n on w.
func (w *driver) install(n Name) {
	w.hooks = hooks(n)
	switch n {
	case LiesAboutAccess:
		w.writeAfterEnd()
	case MissAsFault:
		w.results = fetchAs(drivers.Miss, drivers.Fault)
	case FaultAsMiss:
		w.results = fetchAs(drivers.Fault, drivers.Miss)
	case LookupOutageAsAbsent:
		w.contains = func(keys []string, found []bool, err error) ([]bool, error) {
			if outage(err) {
				return make([]bool, len(keys)), nil // the outage answered as "absent" (D-LOOK-2)
			}
			return found, err
		}
	case ShortAnswer:
		w.results = func(_ *call, res []drivers.Status) []drivers.Status { return res[:len(res)-1] }
	case ReorderedAnswer:
		w.results = func(_ *call, res []drivers.Status) []drivers.Status {
			slices.Reverse(res)
			return res
		}
	case OverwritesOnPublish:
		w.read = w.dropHeldKey
	case ServesLastWriter:
		w.servesLastWriter()
	case TornPublish:
		w.read = w.tearPublish()
	case MaxRowsOffByOne:
		w.submit = func(b drivers.RowBatch) error {
			if n := w.Capabilities().MaxRowsPerOp; len(b.Rows) == n { // declares N, refuses N ("capabilities")
				return fmt.Errorf("%w: %d rows: the transport takes at most %d", drivers.ErrInvalidSubmission, len(b.Rows), n-1)
			}
			return nil
		}
	case OutsideSlot:
		w.write = w.writeOutside()
	case CloseByAddress:
		w.unregister = w.closeByAddress()
	case UnregisterLies:
		w.unregister = func(h drivers.Handle) error {
			if err := w.Driver.Unregister(h); !errors.Is(err, drivers.ErrUnregisterFailed) {
				return err
			}
			return nil // the failure is swallowed; the binding stays live (D-REG-4)
		}
		w.shutdown = func(ctx context.Context) []string {
			return slices.DeleteFunc(w.Driver.Shutdown(ctx), func(l string) bool {
				return strings.HasPrefix(l, "region:") && strings.HasSuffix(l, ":"+drivers.WhyUnregisterFailed)
			})
		}
	case LostWakeup:
		w.notify = func(c *call, user func()) {
			if !w.isShutting() && told(c.Call) {
				return // the final change is never told (D-CB-2)
			}
			user()
		}
	case EarlySignal:
		w.earlySignal()
	case SignalUnderLock:
		w.notify = func(c *call, user func()) {
			if w.isShutting() { // Shutdown runs what is owed itself
				user()
				return
			}
			w.mu.Lock() // onChange runs with the driver's lock held (D-CB-4)
			defer w.mu.Unlock()
			user()
		}
	case SignalAfterShutdown:
		w.signalAfterShutdown()
	case BlockingCancel:
		w.blockingCancel()
	case DrainLies:
		w.drain = func(drivers.DrainStatus) drivers.DrainStatus {
			return drivers.DrainStatus{Done: true} // Done although calls are pending (D-DRAIN-1)
		}
	case SilentShutdown:
		w.shutdown = func(ctx context.Context) []string {
			w.Driver.Shutdown(ctx)
			return nil // nothing reported held (D-SHUT-1)
		}
	case BatchKeyedByKey:
		w.write = w.keyedBuffers
	case ConcurrentPutTruncates:
		w.read = w.truncateRacingPut
	case LeaseExpiredRead:
		w.write = w.readPastLease
	case EmptyGetOK:
		w.emptyGetOK()
	case DoubleRegistration:
		w.doubleRegistration()
	case ValidatesLate:
		w.submit = w.validateLate
	default:
		w.installAnswer(n) // the answers the suite once took on trust (answers.go)
	}
}

// told reports whether c has reached its final state: every row final and
// access evidence.
func told(c drivers.Call) bool {
	return c.Access().Evidenced() && !slices.ContainsFunc(c.Results(), func(s drivers.Status) bool { return !s.Final() })
}

// fetchAs answers to where the reference driver answers from, on every FETCH
// row (D-MISS-HONEST).
func fetchAs(from, to drivers.Status) func(*call, []drivers.Status) []drivers.Status {
	return func(c *call, res []drivers.Status) []drivers.Status {
		if c.b.Dir == drivers.Fetch {
			for i, s := range res {
				if s == from {
					res[i] = to
				}
			}
		}
		return res
	}
}

// outage reports whether err is a lookup outage or a wrong-length answer of
// the store, not a refusal (closed, invalid, bad config) or the caller's
// context.
func outage(err error) bool {
	return errors.Is(err, drivers.ErrLookupFailed) && !errors.Is(err, drivers.ErrInvalidSubmission) &&
		!errors.Is(err, drivers.ErrClosed) && !errors.Is(err, memdriver.ErrBadConfig) &&
		!errors.Is(err, context.Canceled) && !errors.Is(err, context.DeadlineExceeded)
}

package workload

import (
	"errors"
	"fmt"
)

// The limits of an op log (and, through scenarios, of a scenario file).
// They keep a hand-written or corrupted file from asking the harness for
// more memory or work than a machine has: every region is real simulated
// memory (sim/arena), so `A0:3000000000x16` would be 48 GB. A file over a
// limit is refused with one error line that names the limit (exit 2);
// docs/FORMATS.md lists them. The generator stays far below every one.
const (
	// MaxSlots is the most slots one region may have.
	MaxSlots = 1 << 16
	// MaxRegionBytes is the most memory one region may have: slots × slot
	// bytes (64 MiB).
	MaxRegionBytes = 64 << 20
	// MaxTotalBytes is the most memory all regions of one log (or scenario
	// file) may have together (256 MiB).
	MaxTotalBytes = 256 << 20
	// MaxRegions is the most regions one endpoint may declare.
	MaxRegions = 64
	// MaxEndpoints is the most endpoints one log may declare.
	MaxEndpoints = 64
	// MaxOps is the most ops one log may hold (and storesim's --ops).
	MaxOps = 100_000
	// MaxKeysPerOp is the most keys one publish or fetch may name.
	MaxKeysPerOp = 4096
	// MaxSetting bounds rows=, inflight=, queued= and unprovable=.
	MaxSetting = 1 << 16
	// MaxFileBytes is the largest op log or scenario file storesim reads
	// (64 MiB).
	MaxFileBytes = 64 << 20
)

// ErrLimit is wrapped by every error about a limit.
var ErrLimit = errors.New("over a limit")

// LimitsDoc names where the limits are stated, for error messages.
const LimitsDoc = "docs/FORMATS.md"

// CheckRegion checks one region's shape against MaxSlots and
// MaxRegionBytes; what is the region as written (for the message).
func CheckRegion(what string, slots, slotBytes int) error {
	switch {
	case slots > MaxSlots:
		return fmt.Errorf("%w: region %s has %d slots; at most %d slots per region (%s)", ErrLimit, what, slots, MaxSlots, LimitsDoc)
	case slotBytes > MaxRegionBytes || slots*slotBytes > MaxRegionBytes:
		return fmt.Errorf("%w: region %s is %d slots × %d bytes, over %d bytes (%d MiB) per region (%s)",
			ErrLimit, what, slots, slotBytes, MaxRegionBytes, MaxRegionBytes>>20, LimitsDoc)
	}
	return nil
}

// Budget adds up the memory of the regions of one input against
// MaxTotalBytes.
type Budget struct{ bytes int }

// Add counts one region (already within CheckRegion) and fails when the
// input's total goes over MaxTotalBytes.
func (b *Budget) Add(what string, slots, slotBytes int) error {
	b.bytes += slots * slotBytes
	if b.bytes > MaxTotalBytes {
		return fmt.Errorf("%w: with region %s the regions add up to %d bytes, over %d bytes (%d MiB) per file (%s)",
			ErrLimit, what, b.bytes, MaxTotalBytes, MaxTotalBytes>>20, LimitsDoc)
	}
	return nil
}

// CheckLimits checks a log against every limit: regions per endpoint and
// their geometry, the total memory, endpoints, ops and keys per op, and the
// endpoint settings. Parse calls it; a generated log is within them.
func CheckLimits(l *Log) error {
	if len(l.Endpoints) > MaxEndpoints {
		return fmt.Errorf("%w: %d endpoints; at most %d per log (%s)", ErrLimit, len(l.Endpoints), MaxEndpoints, LimitsDoc)
	}
	var budget Budget
	for _, e := range l.Endpoints {
		if len(e.Regions) > MaxRegions {
			return fmt.Errorf("%w: endpoint %s has %d regions; at most %d per endpoint (%s)", ErrLimit, e.Name, len(e.Regions), MaxRegions, LimitsDoc)
		}
		for _, s := range []struct {
			name string
			v    int
		}{{"rows", e.MaxRows}, {"inflight", e.InFlight}, {"queued", e.Queued}, {"unprovable", e.Unprovable}} {
			if s.v > MaxSetting {
				return fmt.Errorf("%w: endpoint %s: %s=%d; at most %d (%s)", ErrLimit, e.Name, s.name, s.v, MaxSetting, LimitsDoc)
			}
		}
		for _, r := range e.Regions {
			what := fmt.Sprintf("%s:%dx%d of endpoint %s", r.Label, r.Slots, r.SlotBytes, e.Name)
			if err := CheckRegion(what, r.Slots, r.SlotBytes); err != nil {
				return err
			}
			if err := budget.Add(what, r.Slots, r.SlotBytes); err != nil {
				return err
			}
		}
	}
	if len(l.Ops) > MaxOps {
		return fmt.Errorf("%w: %d ops; at most %d per log (%s)", ErrLimit, len(l.Ops), MaxOps, LimitsDoc)
	}
	for i, op := range l.Ops {
		if len(op.Keys) > MaxKeysPerOp {
			return fmt.Errorf("%w: op %d names %d keys; at most %d per op (%s)", ErrLimit, i, len(op.Keys), MaxKeysPerOp, LimitsDoc)
		}
	}
	return nil
}

package workload

import "strings"

// ProbeKind names one driver probe: a situation of the driver contract
// (SPEC §2) that the backend never creates, which the run function puts
// the endpoint's driver in directly (fuzz/engine, probe.go). Each names
// the rule that judges the driver's answer.
type ProbeKind string

// The probes.
const (
	// ProbeOverlap registers a region of the probe's own memory, then a
	// second region over the same memory: it must be refused (D-REG-1).
	ProbeOverlap ProbeKind = "overlap"
	// ProbeRepeatedKey publishes a key, then submits a FETCH batch naming
	// it twice: it must be refused (D-BATCH-KEYS, D-BATCH-VALID); a driver
	// that accepts it is also held to D-STATUS for each row it answers OK.
	ProbeRepeatedKey ProbeKind = "repeated-key"
	// ProbeStaleClose registers memory, closes it, registers the same
	// memory again and closes the old handle: the newer registration must
	// stay live (D-REG-3).
	ProbeStaleClose ProbeKind = "stale-close"
	// ProbeAfterShutdown registers memory once the endpoint's driver has
	// been shut down: it must be refused (D-REG-5).
	ProbeAfterShutdown ProbeKind = "after-shutdown"
	// ProbeSizeMismatch publishes an object from a slot half the
	// endpoint's slot size, then fetches it into a slot of the endpoint's
	// size: the answer must not be OK (D-STATUS).
	ProbeSizeMismatch ProbeKind = "size-mismatch"
	// ProbeBusyClose submits a call on a region and closes the region
	// while the call's access is not ENDED: the close must be refused
	// with ErrBusy (D-REG-6).
	ProbeBusyClose ProbeKind = "busy-close"
	// ProbeAbsentFetch fetches a key no one ever published: a driver that
	// declares AbsentIsMiss must answer MISS, with the slot untouched
	// (D-MISS-HONEST, D-STATUS).
	ProbeAbsentFetch ProbeKind = "absent-fetch"
	// ProbeConcurrentPut publishes two different objects under one key in
	// two concurrent calls: the store must end up holding one of them,
	// whole, or nothing (D-SUB-5), and never replace a stored one (D-SUB-4).
	ProbeConcurrentPut ProbeKind = "concurrent-put"
	// ProbeEvictDuringFetch (evicting store only) publishes a key, fetches
	// it and evicts it from the store as the fetch's first bytes land: an
	// OK answer must still deliver the whole object (D-STATUS).
	ProbeEvictDuringFetch ProbeKind = "evict-during-fetch"
)

// ProbeKinds lists every probe kind, in the order the generator draws them.
var ProbeKinds = []ProbeKind{
	ProbeOverlap, ProbeRepeatedKey, ProbeStaleClose, ProbeAfterShutdown, ProbeSizeMismatch,
	ProbeBusyClose, ProbeAbsentFetch, ProbeConcurrentPut, ProbeEvictDuringFetch,
}

func probeNames() string {
	names := make([]string, len(ProbeKinds))
	for i, k := range ProbeKinds {
		names[i] = string(k)
	}
	return strings.Join(names, ", ")
}

// ProbeKeyPrefix starts every key a probe uses; views never use it (the
// generator's keys are k0, k1, …), so a probe's keys are its own.
const ProbeKeyPrefix = "probe/"

// ProbeLabelPrefix starts the label of every region a probe registers.
const ProbeLabelPrefix = "probe-"

// Package broken holds storesim's broken drivers: one per row of SPEC §7,
// each the MemoryDriver of package drivers/memdriver with exactly one bug,
// so that each breaks one rule of the driver contract and nothing else. They
// test the tester: the contract monitor, the memory and store oracles and
// the conformance suite must catch every one of them, on the rule its [Spec]
// names, while the reference drivers pass the same checks.
//
// # Where the bugs live
//
// Every bug body lives in this package: plants.go has the table of every bug,
// the hooks and the install switch, plants_*.go the bodies by topic. Most are
// wrappers around the reference driver: what the caller sees of the driver
// and its calls, the change callback it gets, the region memory the reference
// driver touches. The few whose moment lies inside a transfer step or under
// the reference driver's lock use memdriver.Hooks, the reference driver's
// test seam, which is nil in normal use. The reference driver itself names
// no bug. The Redis analogues are in package broken/redisbroken.
//
// # Names
//
// A broken driver is known by its [Name] (e.g. [LiesAboutAccess]); the
// driver registry calls it "broken:<Name>". [All] lists the specs in the
// order of the SPEC §7 table, [Lookup] finds one by name, [New] builds one.
// The table's last rows are field bugs: each is modelled on a bug reported
// in a real KV-cache store or connector, named on its body in plants_field.go
// (NoTogetherRollback's, a hook alone, in plants.go).
//
// # Making the fault fire
//
// A bug only changes behaviour in the situation its rule is about: a
// client error mid-transfer, a transport error, a lookup outage, a failed
// close, a refused registration. Where that situation comes from a fault of
// memdriver.FaultMix — every one of which a conforming driver survives — the
// spec's Provoke mix names it and [New] raises the driver's rates to at
// least those, so the fault shows under ordinary workloads too. Where the
// fault shows only on a FETCH MISS of an absent key, AbsentIsMiss forces
// that capability on.
package broken

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/sim"
)

// Name names one broken driver: the SPEC §7 row it implements.
type Name string

// The broken drivers, in the order of the SPEC §7 table.
const (
	// LiesAboutAccess reports access ENDED, then writes the slot of a FETCH
	// OK row once more after its callback told the caller (D-ACCESS-END).
	LiesAboutAccess Name = "LiesAboutAccess"
	// ForgetsUnprovable reports a client error mid-transfer (error-after) as
	// access ENDED instead of UNPROVABLE while transfers are still in flight
	// (D-ACCESS).
	ForgetsUnprovable Name = "ForgetsUnprovable"
	// CancelClaimsEnded marks access ENDED as soon as Cancel is called,
	// while started transfers still run (D-CAN-2).
	CancelClaimsEnded Name = "CancelClaimsEnded"
	// MissAsFault reports a FETCH of an absent key as FAULT instead of MISS
	// (D-MISS-HONEST).
	MissAsFault Name = "MissAsFault"
	// FaultAsMiss reports a FETCH transport error as MISS instead of FAULT
	// (D-MISS-HONEST).
	FaultAsMiss Name = "FaultAsMiss"
	// LookupOutageAsAbsent answers a lookup outage with "absent" for every
	// key instead of an error (D-LOOK-2).
	LookupOutageAsAbsent Name = "LookupOutageAsAbsent"
	// TouchesOnMiss writes the slot (zeros) of a FETCH row it reports MISS
	// (D-STATUS).
	TouchesOnMiss Name = "TouchesOnMiss"
	// ShortReadOK reports OK for a FETCH of an object shorter than the slot,
	// read whole (a size mismatch), instead of FAULT (D-STATUS).
	ShortReadOK Name = "ShortReadOK"
	// ShortAnswer answers Results with one entry fewer than the call has
	// rows (D-STATUS).
	ShortAnswer Name = "ShortAnswer"
	// ReorderedAnswer answers Results in reverse row order (D-STATUS).
	ReorderedAnswer Name = "ReorderedAnswer"
	// OverwritesOnPublish replaces the object of a key the store already
	// holds on PUBLISH instead of keeping the first (D-SUB-4).
	OverwritesOnPublish Name = "OverwritesOnPublish"
	// ServesLastWriter keeps a client-side copy of the object each PUBLISH
	// sent, per key — also one the store declined because it held the key —
	// and serves it to every FETCH the store answers OK: the last writer's
	// object instead of the first's (D-SUB-4). The differential run's
	// planted divergence (storesim diff, package fuzz/diff).
	ServesLastWriter Name = "ServesLastWriter"
	// TornPublish makes a published key visible holding half its object and
	// writes the rest twenty step delays later (D-SUB-5).
	TornPublish Name = "TornPublish"
	// AcceptsRepeatedKey accepts a batch naming one key twice and moves the
	// later row through the earlier row's slot (D-BATCH-KEYS).
	AcceptsRepeatedKey Name = "AcceptsRepeatedKey"
	// MaxRowsOffByOne declares MaxRowsPerOp N and refuses every batch of N
	// rows as invalid ("capabilities").
	MaxRowsOffByOne Name = "MaxRowsOffByOne"
	// OutsideSlot writes one byte past the end of a FETCH row's slot (before
	// its start for a region's last slot) (D-SUB-6).
	OutsideSlot Name = "OutsideSlot"
	// AcceptsOverlap registers a region whose memory overlaps a live
	// registration (D-REG-1).
	AcceptsOverlap Name = "AcceptsOverlap"
	// LeakyRegisterFailure leaves a refused registration bound to the
	// transport — the region of a refused Register, or the first piece of a
	// failed RegisterTogether — while reporting nothing registered (D-REG-2,
	// D-TOG-1).
	LeakyRegisterFailure Name = "LeakyRegisterFailure"
	// CloseByAddress closes, on an Unregister of a stale handle, the live
	// registration that now covers the same memory (D-REG-3).
	CloseByAddress Name = "CloseByAddress"
	// UnregisterLies swallows an unregister failure and reports the region
	// closed while the binding stays live (D-REG-4).
	UnregisterLies Name = "UnregisterLies"
	// RegistersAfterShutdown completes a registration during or after
	// Shutdown instead of refusing or undoing it (D-REG-5).
	RegistersAfterShutdown Name = "RegistersAfterShutdown"
	// UnregistersBusy closes a region that a call whose access is not ENDED
	// still names (D-REG-6, D-TOG-4).
	UnregistersBusy Name = "UnregistersBusy"
	// LostWakeup runs no callback once a call reached its final state, so
	// the final change is never told (D-CB-2).
	LostWakeup Name = "LostWakeup"
	// EarlySignal signals access ENDED with a callback that finds nothing
	// new, then sets ENDED later without signalling (D-CB-1).
	EarlySignal Name = "EarlySignal"
	// SignalUnderLock runs the change callback while holding the driver's
	// mutex (D-CB-4).
	SignalUnderLock Name = "SignalUnderLock"
	// SignalAfterShutdown keeps one owed callback (or, with none owed, the
	// last call's) and runs it through the runtime after Shutdown returned
	// (D-CB-5).
	SignalAfterShutdown Name = "SignalAfterShutdown"
	// RegressingResult lets a final row result change when the driver
	// completes the row again (an error-after, a timeout or Shutdown turning
	// an OK row FAULT) (D-CB-3).
	RegressingResult Name = "RegressingResult"
	// BlockingCancel does the whole remaining transfer synchronously inside
	// Cancel, and ends access, before returning (D-CAN-1).
	BlockingCancel Name = "BlockingCancel"
	// DrainLies answers Drain with Done while calls are still pending
	// (D-DRAIN-1).
	DrainLies Name = "DrainLies"
	// SilentShutdown returns no labels from Shutdown, even for an
	// UNPROVABLE call or a region whose unregister failed (D-SHUT-1).
	SilentShutdown Name = "SilentShutdown"

	// The field bugs: modelled on bugs reported in real KV-cache stores and
	// connectors (the mechanism of each is named on its body in plants_field.go,
	// NoTogetherRollback's in plants.go).

	// BatchKeyedByKey accepts a FETCH batch naming one key twice and keys
	// its destination buffers by the key string, so only the last row of a
	// repeated key is written while every row answers OK (D-BATCH-KEYS,
	// D-STATUS).
	BatchKeyedByKey Name = "BatchKeyedByKey"
	// ConcurrentPutTruncates leaves a key whose PUBLISH ended while another
	// PUBLISH of it was in flight holding its object cut at half, the tail
	// zero (D-SUB-5, D-SUB-4).
	ConcurrentPutTruncates Name = "ConcurrentPutTruncates"
	// NotFoundAsError reports a FETCH of an absent key as an unknown error:
	// the row FAULT and the call's access UNPROVABLE, although it declares
	// AbsentIsMiss (D-MISS-HONEST).
	NotFoundAsError Name = "NotFoundAsError"
	// LeaseExpiredRead keeps moving a FETCH row's bytes after its key was
	// evicted mid-transfer, from memory the store reused, and still reports
	// OK (D-STATUS; S-LIN on the evicting store).
	LeaseExpiredRead Name = "LeaseExpiredRead"
	// EmptyGetOK answers a FETCH of a key the store does not hold with zero
	// bytes moved and OK (D-STATUS).
	EmptyGetOK Name = "EmptyGetOK"
	// NoTogetherRollback leaves every piece registered before a failed
	// RegisterTogether registered while reporting nothing registered
	// (D-TOG-1).
	NoTogetherRollback Name = "NoTogetherRollback"
	// DoubleRegistration answers a registration of memory a live
	// registration already covers exactly with that registration's handle,
	// and frees it once per handout: the second close of the pair closes the
	// next registration of the same memory (D-REG-1, D-REG-3).
	DoubleRegistration Name = "DoubleRegistration"
	// ValidatesLate validates a batch row by row as it starts the rows: the
	// valid rows before an invalid one have their slots read (a send buffer
	// filled, a transfer posted) before the batch is refused as invalid
	// (D-SUB-1).
	ValidatesLate Name = "ValidatesLate"
)

// Prefix is what the driver registry puts before a Name.
const Prefix = "broken:"

// ErrUnknown is returned for a name that is not a broken driver.
var ErrUnknown = errors.New("unknown broken driver")

// Spec describes one broken driver.
type Spec struct {
	Name Name
	// Rule is the SPEC id of the §7 row (the first when it lists two);
	// "capabilities" (rules.DCaps) for MaxRowsOffByOne.
	Rule rules.ID
	// Alt is the row's second id (0 when it lists one): the rule the fault
	// breaks when shown through the other API (e.g. D-TOG-1 for a leaky
	// RegisterTogether).
	Alt rules.ID
	// Fault is the §7 row's planted fault, in words.
	Fault string
	// Together: the driver is the TogetherDriver, so the fault can also be
	// shown through together-registration.
	Together bool
	// AbsentIsMiss: the fault shows on a FETCH MISS of an absent key, so New
	// forces Capabilities.AbsentIsMiss on.
	AbsentIsMiss bool
	// Provoke is the legal fault mix that makes the bug's situation arise
	// (zero: ordinary workloads reach it); New raises the driver's rates to
	// at least these.
	Provoke memdriver.FaultMix
	_       struct{}
}

// RegistryName is the driver registry's name of s: "broken:<Name>".
func (s Spec) RegistryName() string { return Prefix + string(s.Name) }

var specs = []Spec{
	{Name: LiesAboutAccess, Rule: rules.DAccessEnd, Fault: "reports ENDED, then writes the slot later"},
	{Name: ForgetsUnprovable, Rule: rules.DAccess, Fault: "client error mid-transfer reported as ENDED",
		Provoke: memdriver.FaultMix{ErrorAfter: 0.3}},
	{Name: CancelClaimsEnded, Rule: rules.DCan2, Fault: "cancel marks access ENDED immediately"},
	{Name: MissAsFault, Rule: rules.DMissHonest, Fault: "absent key → FAULT", AbsentIsMiss: true},
	{Name: FaultAsMiss, Rule: rules.DMissHonest, Fault: "transport error → MISS",
		Provoke: memdriver.FaultMix{RowFault: 0.2}},
	{Name: LookupOutageAsAbsent, Rule: rules.DLook2, Fault: `lookup error answered as "absent"`,
		Provoke: memdriver.FaultMix{LookupError: 0.3}},
	{Name: TouchesOnMiss, Rule: rules.DStatus, Fault: "writes the slot on MISS", AbsentIsMiss: true},
	{Name: ShortReadOK, Rule: rules.DStatus, Fault: "size mismatch reported OK"},
	{Name: ShortAnswer, Rule: rules.DStatus, Fault: "one result fewer than rows"},
	{Name: ReorderedAnswer, Rule: rules.DStatus, Fault: "results out of row order", AbsentIsMiss: true},
	{Name: OverwritesOnPublish, Rule: rules.DSub4, Fault: "PUBLISH of a present key replaces it"},
	{Name: ServesLastWriter, Rule: rules.DSub4, Fault: "a FETCH serves the object of the key's last PUBLISH, not the first the store kept"},
	{Name: TornPublish, Rule: rules.DSub5, Fault: "key visible before all bytes written"},
	{Name: AcceptsRepeatedKey, Rule: rules.DBatchKeys, Fault: "accepts a batch naming one key twice and writes the wrong slot"},
	{Name: MaxRowsOffByOne, Rule: rules.DCaps, Fault: "declares N, fails at N"},
	{Name: OutsideSlot, Rule: rules.DSub6, Fault: "writes past the end of the slot"},
	{Name: AcceptsOverlap, Rule: rules.DReg1, Fault: "registers overlapping memory"},
	{Name: LeakyRegisterFailure, Rule: rules.DReg2, Alt: rules.DTog1, Together: true,
		Fault:   "a refused registration leaves a piece registered",
		Provoke: memdriver.FaultMix{RegisterRefused: 0.2, TogetherFail: 0.3}},
	{Name: CloseByAddress, Rule: rules.DReg3, Fault: "closing a stale handle closes the new registration"},
	{Name: UnregisterLies, Rule: rules.DReg4, Fault: "swallows an unregister failure and reports closed",
		Provoke: memdriver.FaultMix{UnregisterFail: 0.5}},
	{Name: RegistersAfterShutdown, Rule: rules.DReg5, Fault: "completes a registration racing shutdown"},
	{Name: UnregistersBusy, Rule: rules.DReg6, Alt: rules.DTog4, Fault: "unregisters a region a live call still uses"},
	{Name: LostWakeup, Rule: rules.DCB2, Fault: "no callback for a call's final change"},
	{Name: EarlySignal, Rule: rules.DCB1, Fault: "callback before the state changes"},
	{Name: SignalUnderLock, Rule: rules.DCB4, Fault: "callback while holding its lock"},
	{Name: SignalAfterShutdown, Rule: rules.DCB5, Fault: "callback after Shutdown returned"},
	{Name: RegressingResult, Rule: rules.DCB3, Fault: "a final result or ENDED access changes",
		Provoke: memdriver.FaultMix{ErrorAfter: 0.3}},
	{Name: BlockingCancel, Rule: rules.DCan1, Fault: "cancel waits for the transfer"},
	{Name: DrainLies, Rule: rules.DDrain1, Fault: "drain returns with calls pending"},
	{Name: SilentShutdown, Rule: rules.DShut1, Fault: "no labels despite a failed unregister or unprovable call",
		Provoke: memdriver.FaultMix{WrongLength: 0.1}},
	{Name: BatchKeyedByKey, Rule: rules.DBatchKeys, Alt: rules.DStatus, Fault: "a batch get keys its buffers by key: a repeated key answers OK with an unwritten buffer"},
	{Name: ConcurrentPutTruncates, Rule: rules.DSub5, Alt: rules.DSub4, Fault: "two concurrent puts of one key leave its value truncated",
		Provoke: memdriver.FaultMix{Delay: 0.3}},
	{Name: NotFoundAsError, Rule: rules.DMissHonest, Fault: `"object not found" reported as an unknown error`, AbsentIsMiss: true},
	{Name: LeaseExpiredRead, Rule: rules.DStatus, Fault: "a read that outlives its lease returns evicted data"},
	{Name: EmptyGetOK, Rule: rules.DStatus, Fault: "a get that returns 0 bytes is reported OK"},
	{Name: NoTogetherRollback, Rule: rules.DTog1, Together: true, Fault: "no rollback after a partial together-registration",
		Provoke: memdriver.FaultMix{TogetherFail: 0.3}},
	{Name: DoubleRegistration, Rule: rules.DReg1, Alt: rules.DReg3, Fault: "one buffer registered twice, and the pair freed twice"},
	{Name: ValidatesLate, Rule: rules.DSub1, Fault: "reads the slots of the rows before an invalid one, then refuses the batch"},

	// Answers the suite once took on trust (answers.go).
	{Name: DrainLeaksFaulted, Rule: rules.DDrain1, Fault: "a call that ended with a FAULT row stays pending in every drain",
		Provoke: memdriver.FaultMix{RowFault: 0.2}},
	{Name: DrainWaitsForProof, Rule: rules.DDrain1, Fault: "an UNPROVABLE call is reported pending until proven ENDED"},
	{Name: ReleasesRetained, Rule: rules.DShut1, Fault: "shutdown closes the regions it labels retained"},
	{Name: CancelledPublishLands, Rule: rules.DStatus, Fault: "cancel reports PUBLISH rows NOT_ATTEMPTED but lets them store"},
	{Name: BusyCloseForgets, Rule: rules.DReg6, Fault: "a close refused as busy lets the same memory register again"},
	{Name: FullLookupAnyPresent, Rule: rules.DLook1, Fault: "a full-size lookup answers present for every key when one is"},
	{Name: CachesAbsence, Rule: rules.DLook2, Fault: `a key once looked up absent is answered "absent" for ever`},
}

// All lists every broken driver, in the order of the SPEC §7 table.
func All() []Spec { return append([]Spec(nil), specs...) }

// Lookup finds a broken driver by its Name, with or without [Prefix].
func Lookup(name string) (Spec, bool) {
	name = strings.TrimPrefix(name, Prefix)
	for _, s := range specs {
		if string(s.Name) == name {
			return s, true
		}
	}
	return Spec{}, false
}

// Names lists every Name, sorted.
func Names() []Name {
	out := make([]Name, len(specs))
	for i, s := range specs {
		out[i] = s.Name
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

// Reference is cfg as the broken driver runs it, without the bug: the
// capabilities and fault rates raised as the spec asks (see [Spec]) and no
// hooks — the reference driver under the same capabilities and faults,
// which must pass every check the broken one fails.
func (s Spec) Reference(cfg memdriver.Config) memdriver.Config {
	if s.AbsentIsMiss {
		if cfg.Caps == (drivers.Capabilities{}) {
			cfg.Caps = memdriver.DefaultCaps
		}
		cfg.Caps.AbsentIsMiss = true
	}
	cfg.Faults = raise(cfg.Faults, s.Provoke)
	cfg.Hooks = nil
	return cfg
}

// New builds the broken driver name over store on rt: memdriver.New (or
// NewTogether when the spec says Together) with s.Reference(cfg) and the
// bug's hooks, behind the bug's wrapper.
func New(name Name, rt sim.Runtime, store *memdriver.Store, cfg memdriver.Config) (drivers.Driver, error) {
	s, ok := Lookup(string(name))
	if !ok {
		return nil, fmt.Errorf("%w %q", ErrUnknown, name)
	}
	cfg = s.Reference(cfg)
	w := newDriver(rt, store, cfg, s.Name)
	w.install(s.Name)
	cfg.Hooks = w.hooks
	if s.Together {
		t := memdriver.NewTogether(rt, store, cfg)
		w.Driver = t.Driver
		return &togetherDriver{driver: w, t: t}, nil
	}
	w.Driver = memdriver.New(rt, store, cfg)
	return w, nil
}

// raise returns m with every rate at least the one in floor. It goes
// through the mix's text form, the only view of every fault kind that
// package memdriver exports.
func raise(m, floor memdriver.FaultMix) memdriver.FaultMix {
	if floor == (memdriver.FaultMix{}) {
		return m
	}
	rates := map[string]float64{}
	for _, mix := range []memdriver.FaultMix{m, floor} {
		for _, line := range strings.Split(mix.String(), "\n") {
			f := strings.Fields(line) // "fault <name> rate=<r>"
			if len(f) != 3 {
				continue
			}
			r, err := strconv.ParseFloat(strings.TrimPrefix(f[2], "rate="), 64)
			if err == nil && r > rates[f[1]] {
				rates[f[1]] = r
			}
		}
	}
	var lines []string
	for _, name := range memdriver.FaultNames() {
		if r, ok := rates[name]; ok {
			lines = append(lines, "fault "+name+" rate="+strconv.FormatFloat(r, 'g', -1, 64))
		}
	}
	out, err := memdriver.ParseFaultMix(strings.Join(lines, "\n"))
	if err != nil {
		return m // cannot happen: the lines are what String printed
	}
	return out
}

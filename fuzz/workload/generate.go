package workload

import (
	"strconv"
	"time"

	"github.com/storesim/storesim/sim"
)

// GenConfig shapes generated workloads. Zero fields take defaults.
type GenConfig struct {
	// Ops is the number of publish/fetch/cancel ops (default 100); final
	// shutdown ops come on top.
	Ops int
	// Driver names every endpoint's driver (default "memory"). Mixed draws
	// each endpoint's driver from the seed: "memory" or "together", so one
	// swarm covers both ways of registering.
	Driver string
	// Evicting selects the evicting store profile.
	Evicting bool
	// Faults returns the fault lines of an endpoint (nil: no faults).
	Faults func(seed uint64, endpoint string) []string
	// MaxPerKey bounds ops on one key within Window (default 8, 200µs): it
	// keeps per-key concurrency, and so porcupine's cost, bounded.
	MaxPerKey int
	Window    time.Duration
	// Probes is the chance, per generated op, of a driver probe on one
	// endpoint (see [ProbeKind]) besides it (0: 0.08; negative: none); at
	// the end, each endpoint gets an after-shutdown probe with chance 1/2.
	Probes float64
	_      struct{}
}

func (c GenConfig) withDefaults() GenConfig {
	if c.Ops <= 0 {
		c.Ops = 100
	}
	if c.Driver == "" {
		c.Driver = "memory"
	}
	if c.MaxPerKey <= 0 {
		c.MaxPerKey = 8
	}
	if c.Window <= 0 {
		c.Window = 200 * time.Microsecond
	}
	if c.Probes == 0 {
		c.Probes = 0.08
	}
	return c
}

// A generated workload has up to maxEndpoints endpoints ("A", "B", ...),
// each with up to maxRegions regions ("A0", "A1", ...).
const maxEndpoints, maxRegions = 3, 3

// genNames are the endpoint names and region labels Generate gives, made
// once for every log (strings, never written).
var genNames = func() (names [maxEndpoints]struct {
	endpoint string
	regions  [maxRegions]string
}) {
	for i := range names {
		names[i].endpoint = string(rune('A' + i))
		for j := range names[i].regions {
			names[i].regions[j] = names[i].endpoint + strconv.Itoa(j)
		}
	}
	return names
}()

// Mixed is the GenConfig.Driver that draws every endpoint's driver from
// the seed.
const Mixed = "mixed"

// endpointDriver is an endpoint's driver: cfg's, or for Mixed a draw of its
// own (a stream apart, so the rest of the workload is what it would be with
// either driver).
func endpointDriver(seed uint64, driver, name string) string {
	if driver != Mixed {
		return driver
	}
	if sim.NewRand(sim.SubSeed(seed, "workload/driver/"+name)).Chance(0.5) {
		return "together"
	}
	return "memory"
}

// Generate derives a workload from a seed: endpoints, their capabilities and
// memory, overlapping publishes and fetches with keys repeated inside and
// across views, cancels at random points, an occasional mid-flight shutdown,
// and a shutdown of every endpoint at the end. Now and then a view has more
// than 64 rows (bigViewChance: the backend indexes the slots of such a view
// instead of scanning them), and in a quarter of the runs an endpoint's
// regions after its first have slot sizes of their own.
func Generate(seed uint64, cfg GenConfig) *Log {
	cfg = cfg.withDefaults()
	r := sim.NewRand(sim.SubSeed(seed, "workload"))
	l := &Log{Seed: seed, Store: "durable"}
	if cfg.Evicting {
		l.Store = "evicting"
	}
	nEnd := 1 + r.Intn(maxEndpoints)
	// One slot size for the whole run: objects move between endpoints, and a
	// fetch into a slot of another size is a (legal) FAULT, not a test of much.
	slotBytes := 16 << r.Intn(3)
	// In a quarter of the runs the regions after an endpoint's first have
	// slot sizes of their own (a stream apart, so the rest of the workload
	// is what it would be without): a view spanning regions then mixes
	// sizes, and an object fetched into a slot of another size is a legal
	// FAULT.
	sizes := sim.NewRand(sim.SubSeed(seed, "workload/sizes"))
	mixedSizes := sizes.Chance(0.25)
	// Now and then an endpoint leaves a backend bound at zero (the
	// backend's default, SPEC §3) or has a driver of one direction only
	// (dirs=), from a stream of their own.
	shape := sim.NewRand(sim.SubSeed(seed, "workload/shape"))
	l.Endpoints = make([]Endpoint, 0, nEnd)
	for i := range nEnd {
		e := Endpoint{
			Name:         genNames[i].endpoint,
			Driver:       endpointDriver(seed, cfg.Driver, genNames[i].endpoint),
			MaxRows:      1 + r.Intn(6),
			AbsentIsMiss: r.Chance(0.6),
			InFlight:     1 + r.Intn(6),
			Queued:       2 + r.Intn(31),
			Unprovable:   1 + r.Intn(16),
		}
		for _, v := range []*int{&e.InFlight, &e.Queued, &e.Unprovable} {
			if shape.Chance(defaultBoundChance) {
				*v = 0
			}
		}
		if shape.Chance(oneDirChance) {
			e.Dirs = []string{"fetch", "publish"}[shape.Intn(2)]
		}
		nReg := 1 + r.Intn(maxRegions)
		e.Regions = make([]RegionSpec, 0, nReg)
		for j := range nReg {
			sb := slotBytes
			if mixedSizes && j > 0 {
				sb = 16 << sizes.Intn(3)
			}
			e.Regions = append(e.Regions, RegionSpec{
				Label: genNames[i].regions[j], Slots: 16 + r.Intn(33), SlotBytes: sb,
			})
		}
		if cfg.Faults != nil {
			e.Faults = cfg.Faults(seed, e.Name)
		}
		l.Endpoints = append(l.Endpoints, e)
	}
	nkeys := 4 + r.Intn(cfg.Ops/2+1)
	g := gen{cfg: cfg, keys: nkeys, views: cfg.Ops, recent: make([][]time.Duration, nkeys)}
	// Every key's window starts with room for MaxPerKey times, all in one
	// allocation (a repeat inside a view may still grow one past it).
	times := make([]time.Duration, nkeys*cfg.MaxPerKey)
	for k := range g.recent {
		g.recent[k] = times[k*cfg.MaxPerKey : k*cfg.MaxPerKey : (k+1)*cfg.MaxPerKey]
	}
	down := map[string]bool{}
	midShutdown := -1
	if nEnd > 1 && r.Chance(0.15) {
		midShutdown = cfg.Ops/2 + r.Intn(cfg.Ops/2+1)
	}
	var at time.Duration
	rowOps := make([]int, 0, cfg.Ops)
	l.Ops = make([]Op, 0, cfg.Ops+cfg.Ops/8+len(l.Endpoints)+8) // the ops, a few Quiesce and probes, the shutdowns
	// Rare paths come from a stream of their own, so the rest of the
	// workload is what it would be without them: a malformed view now and
	// then, and Quiesce questions about recent attempts.
	rare := sim.NewRand(sim.SubSeed(seed, "workload/rare"))
	// Driver probes too, so adding them changed nothing else either.
	probes := probeGen{r: sim.NewRand(sim.SubSeed(seed, "workload/probe")), rate: cfg.Probes, evicting: cfg.Evicting}
	for i := 0; i < cfg.Ops; i++ {
		if len(rowOps) > 0 && rare.Chance(0.05) {
			last := l.Ops[rowOps[len(rowOps)-1]].Endpoint
			var targets [3]int
			n := 0
			for j := len(rowOps) - 1; j >= 0 && n < len(targets); j-- {
				if l.Ops[rowOps[j]].Endpoint == last && rare.Chance(0.7) {
					targets[n] = rowOps[j]
					n++
				}
			}
			if n > 0 {
				l.Ops = append(l.Ops, Op{At: at, Kind: Quiesce, Endpoint: last, Targets: g.ints(targets[:n])})
			}
		}
		at += time.Duration(r.Intn(21)) * time.Microsecond
		if op, ok := probes.during(at, l.Endpoints, down); ok {
			l.Ops = append(l.Ops, op)
		}
		if i == midShutdown {
			e := l.Endpoints[r.Intn(nEnd)].Name
			down[e] = true
			l.Ops = append(l.Ops, Op{At: at, Kind: Shutdown, Endpoint: e})
			continue
		}
		if len(rowOps) > 0 && r.Chance(0.15) {
			from := max(0, len(rowOps)-10)
			l.Ops = append(l.Ops, Op{At: at, Kind: Cancel, Target: rowOps[from+r.Intn(len(rowOps)-from)]})
			continue
		}
		ep := &l.Endpoints[r.Intn(nEnd)]
		op := Op{At: at, Kind: Publish, Endpoint: ep.Name}
		if r.Chance(0.5) {
			op.Kind = Fetch
		}
		// An endpoint of one direction is mostly asked for that one; the
		// rest must be refused as malformed.
		if ep.Dirs != "" && op.Kind.String() != ep.Dirs && shape.Chance(0.85) {
			op.Kind = Fetch + Publish - op.Kind
		}
		big := rare.Chance(bigViewChance)
		if big {
			// A view longer than the backend scans for a repeated slot
			// (it indexes one), from the rare stream: it needs more free
			// slots than most endpoints have left, so many are not lent.
			op.Keys, op.Mask = g.view(at, rare, bigViewRows+1+rare.Intn(bigViewRows/2))
		} else {
			op.Keys, op.Mask = g.view(at, r, 1+r.Intn(8))
		}
		switch {
		case big && rare.Chance(0.3): // what a big view's map is for: a slot used twice, masked in or out
			op.Bad = []Bad{DupSlot, MaskedDupSlot}[rare.Intn(2)]
		case rare.Chance(0.03):
			op.Bad = Bads[rare.Intn(len(Bads))]
		}
		rowOps = append(rowOps, len(l.Ops))
		l.Ops = append(l.Ops, op)
	}
	for _, e := range l.Endpoints {
		if !down[e.Name] {
			at += time.Duration(r.Intn(21)) * time.Microsecond
			l.Ops = append(l.Ops, Op{At: at, Kind: Shutdown, Endpoint: e.Name})
			if rare.Chance(0.2) { // the owner asks again, while the drain may still run
				at += time.Duration(rare.Intn(3)) * time.Microsecond
				l.Ops = append(l.Ops, Op{At: at, Kind: Shutdown, Endpoint: e.Name})
			}
		}
	}
	l.Ops = append(l.Ops, probes.after(at, l.Endpoints)...)
	return l
}

// probeGen draws the driver probes of a workload from a stream of its own.
type probeGen struct {
	r        *sim.Rand
	rate     float64
	evicting bool
}

// during is the probe (if any) issued at at, on an endpoint still up.
func (g probeGen) during(at time.Duration, eps []Endpoint, down map[string]bool) (Op, bool) {
	if g.rate <= 0 || !g.r.Chance(g.rate) {
		return Op{}, false
	}
	// The draws pick the e-th endpoint still up and the k-th kind that can
	// run, counted in place: a probe allocates nothing here.
	up := 0
	for _, e := range eps {
		if !down[e.Name] {
			up++
		}
	}
	usable := func(k ProbeKind) bool {
		return k != ProbeAfterShutdown && (k != ProbeEvictDuringFetch || g.evicting)
	}
	kinds := 0
	for _, k := range ProbeKinds {
		if usable(k) {
			kinds++
		}
	}
	e, k := g.r.Intn(max(1, up)), g.r.Intn(kinds)
	if up == 0 {
		return Op{}, false
	}
	op := Op{At: at, Kind: Probe}
	for _, ep := range eps {
		if !down[ep.Name] {
			if e == 0 {
				op.Endpoint = ep.Name
				break
			}
			e--
		}
	}
	for _, kind := range ProbeKinds {
		if usable(kind) {
			if k == 0 {
				op.Probe = kind
				break
			}
			k--
		}
	}
	return op, true
}

// after is the after-shutdown probes, past the last op at.
func (g probeGen) after(at time.Duration, eps []Endpoint) []Op {
	var out []Op
	for _, e := range eps {
		if g.rate > 0 && g.r.Chance(0.5) {
			at += time.Duration(1+g.r.Intn(20)) * time.Microsecond
			out = append(out, Op{At: at, Kind: Probe, Endpoint: e.Name, Probe: ProbeAfterShutdown})
		}
	}
	return out
}

type gen struct {
	cfg    GenConfig
	keys   int
	recent [][]time.Duration // op times per key number, for MaxPerKey
	names  []string          // "k<n>" per key number past keyNames, made once (nil until one is)

	views    int      // views still to make, at most (one per op): slab's chunks are no larger
	keySlab  []string // storage of the views' keys (slab)
	maskSlab []bool
	intSlab  []int // storage of the Quiesce ops' targets (ints)
}

// keyNames are the first key names, made once for every log: most logs
// have fewer keys.
var keyNames = func() (names [64]string) {
	for i := range names {
		names[i] = "k" + strconv.Itoa(i)
	}
	return names
}()

// slab hands out room for a view of n rows (at most 8) from storage shared
// by the log's views (one allocation per 64 views, not two per view, and
// room for no more views than are left to make); each slice's capacity ends
// at n, so an append to one never writes into the next.
func (g *gen) slab(n int) ([]string, []bool) {
	if n > 8 { // a big view: storage of its own
		return make([]string, 0, n), make([]bool, 0, n)
	}
	if len(g.keySlab)+n > cap(g.keySlab) {
		rows := 8 * min(64, max(1, g.views))
		g.keySlab, g.maskSlab = make([]string, 0, rows), make([]bool, 0, rows)
	}
	g.views--
	i := len(g.keySlab)
	g.keySlab, g.maskSlab = g.keySlab[:i+n], g.maskSlab[:i+n]
	return g.keySlab[i : i : i+n], g.maskSlab[i : i : i+n]
}

// ints copies v into storage shared by the log's Quiesce ops; the copy's
// capacity ends at its length.
func (g *gen) ints(v []int) []int {
	if len(g.intSlab)+len(v) > cap(g.intSlab) {
		g.intSlab = make([]int, 0, max(48, len(v)))
	}
	i := len(g.intSlab)
	g.intSlab = append(g.intSlab, v...)
	return g.intSlab[i : i+len(v) : i+len(v)]
}

func (g *gen) name(i int) string {
	if i < len(keyNames) {
		return keyNames[i]
	}
	if g.names == nil {
		g.names = make([]string, g.keys)
	}
	if g.names[i] == "" {
		g.names[i] = "k" + strconv.Itoa(i)
	}
	return g.names[i]
}

// defaultBoundChance is the chance, per endpoint and bound (in flight,
// queued, UNPROVABLE), that the bound is left zero: the backend's default.
// oneDirChance is the chance an endpoint's driver supports one direction
// only.
const (
	defaultBoundChance = 0.06
	oneDirChance       = 0.08
)

// bigViewChance is the chance of a view of more than bigViewRows rows (the
// backend's smallView: longer views index their slots in a map).
const (
	bigViewChance = 0.01
	bigViewRows   = 64
)

// view draws a view of up to n rows from r.
func (g *gen) view(at time.Duration, r *sim.Rand, n int) ([]string, []bool) {
	keys, mask := g.slab(n)
	var idxBuf [8]int
	idx := idxBuf[:0]
	for len(keys) < n {
		var k int
		if len(keys) > 0 && r.Chance(0.2) {
			k = idx[r.Intn(len(keys))] // a key repeated inside one view
		} else if k = g.freshKey(at, r); k < 0 {
			break
		}
		idx = append(idx, k)
		keys = append(keys, g.name(k))
		mask = append(mask, r.Chance(0.85))
		g.recent[k] = append(g.recent[k], at)
	}
	if len(keys) == 0 { // every key is busy: a view of one masked-out row
		keys, mask = append(keys, "k0"), append(mask, false)
	}
	return keys, mask
}

// freshKey picks a key number with fewer than MaxPerKey ops in the
// window, or -1.
func (g *gen) freshKey(at time.Duration, r *sim.Rand) int {
	for range 8 {
		k := r.Intn(g.keys)
		times := g.recent[k]
		drop := 0
		for drop < len(times) && times[drop] < at-g.cfg.Window {
			drop++
		}
		if drop > 0 { // in place: the storage is kept for the next appends
			times = times[:copy(times, times[drop:])]
		}
		g.recent[k] = times
		if len(times) < g.cfg.MaxPerKey {
			return k
		}
	}
	return -1
}

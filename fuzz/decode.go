package fuzz

import (
	"fmt"
	"strings"
	"time"

	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/fuzz/workload"
	"github.com/storesim/storesim/sim"
)

// Bounds of a decoded log: they keep one fuzz execution short and the
// porcupine check cheap (per-key concurrency bounded, PERF-NOTES).
const (
	// MaxOps is the most publish/fetch/cancel/shutdown ops decoded from one
	// input; later bytes are ignored. The final shutdowns come on top.
	MaxOps = 200
	// MaxViewRows is the most rows of one decoded view.
	MaxViewRows = 8
	// MaxPerKey bounds the rows on one key within KeyWindow; a row over
	// the bound is left out of its view.
	MaxPerKey = 8
	KeyWindow = 200 * time.Microsecond
	// HeaderBytes is the length of the header; shorter inputs are padded
	// with zeros.
	HeaderBytes = 7
)

// Decode turns arbitrary bytes into a valid op log: every input decodes, to
// at most MaxOps ops. It reports false when the log has nothing runnable (no
// publish or fetch), which a fuzz target treats as an invalid input, never as
// a failure.
//
// Layout (bit 0 is the least significant):
//
//	byte 0   bit 0: two endpoints (else one); bit 1: evicting store;
//	         bits 2-3: faults (0 calm, 1-2 memdriver.Swarm of the endpoint's
//	         sub-seed, as engine.Plan derives it, 3 memdriver.Default);
//	         bits 4-7: key space 2..17 (k0, k1, …)
//	byte 1-2 the seed (little-endian): scheduler policy, contents, fault draws
//	byte 3-4 endpoint A: see decodeEndpoint
//	byte 5-6 endpoint B (ignored with one endpoint)
//	then one op per group:
//	  b: kind = b&15 (0-5 publish, 6-11 fetch, 12-14 cancel, 15 shutdown),
//	     the op comes b>>4 µs after the previous one;
//	  publish/fetch: n (rows 1+n&7, endpoint (n>>3)&1), then one byte per row:
//	     key (k&31) mod key space, masked out when k>>5 == 7;
//	  cancel: t, the target is the (t mod 16)-th most recent publish/fetch;
//	  shutdown: e, endpoint e&1.
//
// An op group cut short by the end of the input is dropped; a cancel with no
// earlier publish/fetch is dropped; a row over MaxPerKey is left out of its
// view and a view left empty is dropped. Every endpoint that was not shut
// down gets a shutdown op at the end.
func Decode(data []byte) (*workload.Log, bool) {
	var h [HeaderBytes]byte
	copy(h[:], data)
	nEnd := 1 + int(h[0]&1)
	keys := 2 + int(h[0]>>4)
	d := decoder{data: data[min(len(data), HeaderBytes):], recent: make([][]time.Duration, keys)}
	times := make([]time.Duration, keys*MaxPerKey) // one array for every key's window
	for i := range d.recent {
		d.recent[i] = times[i*MaxPerKey : i*MaxPerKey : (i+1)*MaxPerKey]
	}
	// Every row takes at least one input byte: the rows of all views fit
	// in one array of keys and one of mask bits, carved view by view (each
	// view's slices are full, so an append to one copies).
	rowKeys, rowMask := make([]string, 0, len(d.data)), make([]bool, 0, len(d.data))
	l := &workload.Log{Seed: uint64(h[1]) | uint64(h[2])<<8, Store: "durable", Ops: make([]workload.Op, 0, min(MaxOps, len(d.data)/2)+nEnd)}
	if h[0]&2 != 0 {
		l.Store = "evicting"
	}
	for i := range nEnd {
		e := decodeEndpoint(string(rune('A'+i)), h[3+2*i], h[4+2*i])
		e.Faults = faultLines(int(h[0]>>2)&3, l.Seed, e.Name)
		l.Endpoints = append(l.Endpoints, e)
	}
	var at time.Duration
	var rowOps []int
	down := map[string]bool{}
	runnable := false
	for len(l.Ops) < MaxOps {
		b, ok := d.next()
		if !ok {
			break
		}
		at += time.Duration(b>>4) * time.Microsecond
		arg, ok := d.next()
		if !ok {
			break
		}
		switch kind := b & 15; {
		case kind < 12:
			op := workload.Op{At: at, Kind: workload.Publish, Endpoint: l.Endpoints[int(arg>>3&1)%nEnd].Name}
			if kind >= 6 {
				op.Kind = workload.Fetch
			}
			n := 1 + int(arg&7)
			first := len(rowKeys)
			cut := false
			for range n {
				k, ok := d.next()
				if !ok {
					cut = true
					break
				}
				key := int(k&31) % keys
				if !d.admit(key, at) {
					continue
				}
				rowKeys = append(rowKeys, keyNames[key])
				rowMask = append(rowMask, k>>5 != 7)
			}
			if cut || len(rowKeys) == first {
				rowKeys, rowMask = rowKeys[:first], rowMask[:first]
				continue
			}
			op.Keys, op.Mask = rowKeys[first:len(rowKeys):len(rowKeys)], rowMask[first:len(rowMask):len(rowMask)]
			rowOps = append(rowOps, len(l.Ops))
			l.Ops = append(l.Ops, op)
			runnable = runnable || !down[op.Endpoint]
		case kind < 15:
			if len(rowOps) == 0 {
				continue
			}
			back := int(arg%16) % len(rowOps)
			l.Ops = append(l.Ops, workload.Op{At: at, Kind: workload.Cancel, Target: rowOps[len(rowOps)-1-back]})
		default:
			e := l.Endpoints[int(arg&1)%nEnd].Name
			down[e] = true
			l.Ops = append(l.Ops, workload.Op{At: at, Kind: workload.Shutdown, Endpoint: e})
		}
	}
	for _, e := range l.Endpoints {
		at += time.Microsecond
		l.Ops = append(l.Ops, workload.Op{At: at, Kind: workload.Shutdown, Endpoint: e.Name})
	}
	return l, runnable
}

// decodeEndpoint reads two bytes:
//
//	e0 bit 0: together driver (else memory); bit 1: AbsentIsMiss;
//	   bits 2-3: rows 1..4; bits 4-5: in flight 1..4; bits 6-7: regions 1..4
//	e1 bits 0-3: queued 0..15; bits 4-6: unprovable 1..8;
//	   bit 7: 8 slots per region (else 32)
func decodeEndpoint(name string, e0, e1 byte) workload.Endpoint {
	e := workload.Endpoint{
		Name:         name,
		Driver:       "memory",
		MaxRows:      1 + int(e0>>2&3),
		AbsentIsMiss: e0&2 != 0,
		InFlight:     1 + int(e0>>4&3),
		Queued:       int(e1 & 15),
		Unprovable:   1 + int(e1>>4&7),
	}
	if e0&1 != 0 {
		e.Driver = "together"
	}
	slots := 32
	if e1&0x80 != 0 {
		slots = 8
	}
	for j := range 1 + int(e0>>6) {
		e.Regions = append(e.Regions, workload.RegionSpec{Label: fmt.Sprintf("%s%d", name, j), Slots: slots, SlotBytes: 16})
	}
	return e
}

// faultLines is the fault mix of an endpoint, as fault lines.
func faultLines(sel int, seed uint64, endpoint string) []string {
	var mix memdriver.FaultMix
	switch sel {
	case 0:
		return nil
	case 1, 2:
		mix = memdriver.Swarm(sim.SubSeed(seed, "faults/"+endpoint))
	case 3:
		mix = memdriver.Default()
	}
	text := strings.TrimSpace(mix.String())
	if text == "" {
		return nil
	}
	return strings.Split(text, "\n")
}

// keyNames are the decoded keys, k0 … k17, made once.
var keyNames = func() []string {
	out := make([]string, 18)
	for i := range out {
		out[i] = fmt.Sprintf("k%d", i)
	}
	return out
}()

type decoder struct {
	data   []byte
	recent [][]time.Duration // row times per key number, for MaxPerKey
}

func (d *decoder) next() (byte, bool) {
	if len(d.data) == 0 {
		return 0, false
	}
	b := d.data[0]
	d.data = d.data[1:]
	return b, true
}

// admit reports whether key may take one more row at time at (MaxPerKey
// within KeyWindow) and, if so, counts it.
func (d *decoder) admit(key int, at time.Duration) bool {
	times := d.recent[key]
	old := 0
	for old < len(times) && times[old] < at-KeyWindow {
		old++
	}
	times = times[:copy(times, times[old:])] // keeps the capacity
	if len(times) >= MaxPerKey {
		d.recent[key] = times
		return false
	}
	d.recent[key] = append(times, at)
	return true
}

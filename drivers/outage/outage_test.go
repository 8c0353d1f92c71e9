package outage

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memcachedriver"
	"github.com/storesim/storesim/drivers/monitor"
	"github.com/storesim/storesim/drivers/monitor/realprobe"
	"github.com/storesim/storesim/drivers/redisdriver"
	"github.com/storesim/storesim/fuzz/engine"
	"github.com/storesim/storesim/fuzz/registry"
	"github.com/storesim/storesim/model"
	"github.com/storesim/storesim/sim/arena"
	"github.com/storesim/storesim/sim/realtime"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const slotBytes = 64

// newDriver is the driver under test on s, with short timeouts so a paused
// server turns into answers within the test: Redis bounds each call
// (Timeout); memcached gives up on a call before its socket times out
// (Timeout < NetTimeout), so a FETCH worker still inside the client leaves
// its call UNPROVABLE until it returns.
func newDriver(s *server, prefix string, caps drivers.Capabilities) (drivers.Driver, error) {
	if s.kind == "memcached" {
		return memcachedriver.New(memcachedriver.Config{Addr: s.addr, Prefix: prefix, Caps: caps, Timeout: 200 * time.Millisecond, NetTimeout: 600 * time.Millisecond})
	}
	return redisdriver.New(redisdriver.Config{Addr: s.addr, Prefix: prefix, Caps: caps, Timeout: 300 * time.Millisecond})
}

// rig is one driver behind the contract monitor and the history recorder,
// on real time, with arena memory whose every touch the memory oracle sees.
type rig struct {
	t     *testing.T
	s     *server
	rt    *realtime.Runtime
	ep    *engine.Endpoint
	d     drivers.Driver
	a     *arena.Arena
	h     drivers.Handle
	next  int
	kick  chan struct{}
	calls []*tracked
	repro string
}

// tracked is one call and what the test knows about when it was made.
type tracked struct {
	c      drivers.Call
	b      drivers.RowBatch
	during bool // made after the outage began: the server could answer none of it
	seen   map[drivers.Access]bool
}

func newRig(t *testing.T, s *server) *rig {
	r := &rig{t: t, s: s, rt: realtime.New(1), kick: make(chan struct{}, 1),
		repro: fmt.Sprintf("(repro: go test ./drivers/outage -run '^%s$')", strings.ReplaceAll(t.Name(), "/", "$/^"))}
	t.Cleanup(r.rt.Close)
	var seq atomic.Int64
	prefix := fmt.Sprintf("storesim-outage/%d/%d/", os.Getpid(), time.Now().UnixNano())
	ep, err := engine.NewEndpoint(engine.EndpointOptions{
		Name: "out", RT: r.rt, Seed: 1,
		New:      func(_ string, env registry.Env) (drivers.Driver, error) { return newDriver(s, prefix, env.Caps) },
		Recorder: model.RecorderOptions{Sequence: &seq},
		Monitor:  monitor.Options{LockProbe: realprobe.LockProbe(0), CancelBound: realprobe.Stopwatch(0)},
	})
	if err != nil {
		t.Fatalf("building the %s driver: %v %s", s.kind, err, r.repro)
	}
	r.ep, r.d = ep, ep.Monitor.Driver()
	r.a = arena.New("outage", 4096, slotBytes, arena.Options{Clock: r.rt, OnTouch: ep.Recorder.OnTouch})
	for i := range 4096 {
		r.a.Lend(i, 1) // every slot is the test's: a touch is legal until the end (the oracle judges touches after ENDED)
	}
	ep.AddArena(r.a)
	if r.h, err = r.d.Register(r.a.Region()); err != nil {
		t.Fatalf("Register: %v %s", err, r.repro)
	}
	return r
}

// submit makes one call of keys on fresh slots; a PUBLISH carries an
// object per key.
func (r *rig) submit(dir drivers.Direction, during bool, keys ...string) {
	b := drivers.RowBatch{Dir: dir}
	for i, k := range keys {
		slot := r.next
		r.next++
		if dir == drivers.Publish {
			obj := make([]byte, slotBytes)
			copy(obj, fmt.Sprintf("object of %s @%d", k, slot))
			r.a.Fill(slot, obj)
		}
		b.Rows = append(b.Rows, drivers.Row{Key: k, Handle: r.h, Slot: slot, Position: i})
	}
	c, err := r.d.Submit(b, func() {
		select {
		case r.kick <- struct{}{}:
		default:
		}
	})
	if err != nil {
		// Closed, Rejected: nothing escaped; anything else: the rows may
		// have escaped (D-SUB-2). Neither is an answer to judge here.
		return
	}
	r.calls = append(r.calls, &tracked{c: c, b: b, during: during, seen: map[drivers.Access]bool{}})
}

// settle waits until every call's rows are final and its access evidenced,
// or the bound passes (a bound on a stuck driver, not a timing
// assertion: what is still pending then must be labelled at Shutdown).
func (r *rig) settle(bound time.Duration) {
	deadline := time.Now().Add(bound)
	for time.Now().Before(deadline) {
		done := true
		for _, tc := range r.calls {
			tc.seen[tc.c.Access()] = true
			if !over(tc.c) {
				done = false
			}
		}
		if done {
			return
		}
		select {
		case <-r.kick:
		case <-time.After(5 * time.Millisecond):
		}
	}
}

func over(c drivers.Call) bool {
	if !c.Access().Evidenced() {
		return false
	}
	for _, s := range c.Results() {
		if !s.Final() {
			return false
		}
	}
	return true
}

// TestOutage: a private Redis and a private memcached, killed (SIGKILL) or
// paused (SIGSTOP, then SIGCONT) while calls are in flight. What the driver
// answers for every call made during the outage is judged: no row OK (the
// server answered nothing), no MISS (an outage is never a miss,
// D-MISS-HONEST), every lookup an error (never "absent", D-LOOK-2), every
// call ends with final rows and access evidence (ENDED only where the
// memory oracle finds no later touch, D-ACCESS-END; UNPROVABLE otherwise)
// or is labelled by Shutdown (D-SHUT-1); the contract monitor and the
// memory oracle find nothing over the whole run; after SIGCONT the driver
// serves again. Nothing here asserts a duration: the waits are bounds.
func TestOutage(t *testing.T) {
	for _, kind := range []string{"redis", "memcached"} {
		for _, how := range []string{"killed", "paused"} {
			t.Run(kind+"-"+how, func(t *testing.T) {
				s := start(t, kind)
				r := newRig(t, s)
				// Healthy: eight keys stored and read back.
				for i := range 4 {
					r.submit(drivers.Publish, false, fmt.Sprintf("held/%d", 2*i), fmt.Sprintf("held/%d", 2*i+1))
				}
				r.settle(10 * time.Second)
				for _, tc := range r.calls {
					for i, st := range tc.c.Results() {
						if st != drivers.OK {
							t.Fatalf("healthy PUBLISH %s: %v, want OK %s", tc.b.Rows[i].Key, st, r.repro)
						}
					}
				}
				// In flight when the outage begins: anything legal.
				for i := range 6 {
					r.submit(drivers.Fetch, false, fmt.Sprintf("held/%d", i), fmt.Sprintf("held/%d", i+1))
					r.submit(drivers.Publish, false, fmt.Sprintf("new/%d", i))
				}
				if how == "killed" {
					s.kill()
				} else {
					s.pause(t)
				}
				// During the outage: the server can answer none of these.
				for i := range 6 {
					r.submit(drivers.Fetch, true, fmt.Sprintf("held/%d", i), fmt.Sprintf("held/%d", i+2))
					r.submit(drivers.Publish, true, fmt.Sprintf("late/%d", i), fmt.Sprintf("late/%d", i+6))
				}
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				found, err := r.d.Contains(ctx, []string{"held/0", "held/1"})
				cancel()
				if err == nil || !errors.Is(err, drivers.ErrLookupFailed) {
					t.Fatalf("a lookup during the outage answered %v, %v: want an error wrapping ErrLookupFailed, never an answer (D-LOOK-2) %s", found, err, r.repro)
				}
				r.settle(10 * time.Second)
				if how == "paused" {
					s.resume() // late replies to the abandoned commands arrive now
					r.recovers(t)
				}
				r.judge(t)
			})
		}
	}
}

// recovers: after SIGCONT the driver stores and reads again (bounded
// retries: the driver may need to reconnect).
func (r *rig) recovers(t *testing.T) {
	for try := range 50 {
		key := fmt.Sprintf("after/%d", try)
		first := len(r.calls)
		r.submit(drivers.Publish, false, key)
		r.submit(drivers.Fetch, false, key)
		r.settle(5 * time.Second)
		ok := len(r.calls) == first+2
		for _, tc := range r.calls[first:] {
			ok = ok && over(tc.c) && tc.c.Results()[0] == drivers.OK
		}
		if ok {
			return
		}
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("the %s driver never served again after SIGCONT %s", r.s.kind, r.repro)
}

// judge checks every call made during the outage, shuts the driver down,
// and runs the engine's checks over the whole run.
func (r *rig) judge(t *testing.T) {
	counts := map[string]int{}
	for _, tc := range r.calls {
		res := tc.c.Results()
		if !tc.during {
			continue
		}
		for i, st := range res {
			counts[tc.b.Dir.String()+" "+st.String()]++
			if st == drivers.OK || st == drivers.Miss {
				t.Errorf("call %d (%v, made during the outage) row %d key %s answered %v: the server answered nothing, so only FAULT or NOT_ATTEMPTED can be true (D-STATUS, D-MISS-HONEST) %s",
					tc.c.ID(), tc.b.Dir, i, tc.b.Rows[i].Key, st, r.repro)
			}
		}
		for a := range tc.seen {
			counts["access "+a.String()]++
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	labels := r.d.Shutdown(ctx)
	cancel()
	for _, tc := range r.calls {
		if !over(tc.c) {
			if a := tc.c.Access(); a != drivers.AccessUnprovable {
				t.Errorf("call %d has access %v and rows %v after Shutdown returned: a call the driver stopped waiting for is UNPROVABLE %s", tc.c.ID(), a, tc.c.Results(), r.repro)
			}
		}
	}
	cr := engine.Check(engine.CheckInput{
		Endpoints: []*engine.Endpoint{r.ep}, Finished: true, Idle: true,
		At: r.rt.Now(), Seed: 1, StoreModel: model.EvictingStore, LinTimeout: 5 * time.Second, Lin: engine.LinIfClean,
	})
	for _, v := range cr.Violations {
		t.Errorf("%s %s", v, r.repro)
	}
	t.Logf("%s: %d calls; during the outage: %v; shutdown labels %v", r.s.kind, len(r.calls), counts, labels)
}

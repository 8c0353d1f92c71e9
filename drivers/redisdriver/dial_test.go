package redisdriver

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"testing"

	"github.com/redis/rueidis"

	"github.com/storesim/storesim/drivers"
)

// setupAborted is a rueidis.Client whose next `fails` pipelines fail the
// way rueidis fails every command queued on a connection whose lazy dial
// was started by another caller whose context then ended: each reply is
// the dial error of a cancelled context ("dial tcp …: operation was
// canceled"), nothing is written, and the caller's own context is alive.
// That is what made `storesim certify --driver redis://…` fail
// D-MISS-HONEST on loaded machines (a FETCH of an absent key answered
// FAULT).
type setupAborted struct {
	rueidis.Client
	err   error
	fails atomic.Int64
	sent  atomic.Int64 // pipelines passed through to the server
}

func abortSetup(t *testing.T, r *rig, fails int) *setupAborted {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := (&net.Dialer{}).DialContext(ctx, "tcp", redisAddr(t))
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("a dial with a cancelled context failed with %v, want an error that is context.Canceled %s", err, repro(t))
	}
	s := &setupAborted{Client: r.d.client, err: err}
	s.fails.Store(int64(fails))
	r.d.client = s
	return s
}

func (s *setupAborted) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	if s.fails.Add(-1) >= 0 {
		out := make([]rueidis.RedisResult, len(multi))
		for i := range out {
			out[i] = rueidis.NewErrorResult(s.err)
		}
		return out
	}
	s.sent.Add(1)
	return s.Client.DoMulti(ctx, multi...)
}

// TestForeignSetupAbort: a pipeline that failed only because another
// call's cancellation aborted the shared connection set-up is sent again,
// so an uncancelled FETCH of an absent key is MISS (D-MISS-HONEST), of a
// present key OK, a PUBLISH OK and stored, a lookup answered; a set-up that
// keeps failing is FAULT after a bounded number of tries (the store was
// never asked), with access still ENDED.
func TestForeignSetupAbort(t *testing.T) {
	t.Run("fetch", func(t *testing.T) {
		r := newRig(t, Config{})
		a, h := r.arena("a", 2, slotBytes)
		r.rawSet("present", content("present", slotBytes))
		s := abortSetup(t, r, 3)
		c, w := r.submit(drivers.Fetch, rows(h, "absent", "present")...)
		wantStatuses(t, "fetch after 3 aborted set-ups", await(t, c, w), Miss, OK)
		if string(a.Peek(1)) != string(content("present", slotBytes)) {
			t.Fatalf("the OK row's slot does not hold the object %s", repro(t))
		}
		if s.fails.Load() >= 0 || s.sent.Load() != 1 {
			t.Fatalf("%d aborted set-ups left, %d pipelines sent; want 0 left and 1 sent %s", s.fails.Load()+1, s.sent.Load(), repro(t))
		}
	})
	t.Run("publish", func(t *testing.T) {
		r := newRig(t, Config{})
		a, h := r.arena("a", 1, slotBytes)
		a.Fill(0, content("k", slotBytes))
		abortSetup(t, r, 2)
		c, w := r.submit(drivers.Publish, rows(h, "k")...)
		wantStatuses(t, "publish after 2 aborted set-ups", await(t, c, w), OK)
		if v, ok := r.rawGet("k"); !ok || v != string(content("k", slotBytes)) {
			t.Fatalf("the published object is not stored (present %v) %s", ok, repro(t))
		}
	})
	t.Run("contains", func(t *testing.T) {
		r := newRig(t, Config{})
		r.rawSet("present", content("present", slotBytes))
		abortSetup(t, r, 1)
		found, err := r.d.Contains(context.Background(), []string{"absent", "present"})
		if err != nil || len(found) != 2 || found[0] || !found[1] {
			t.Fatalf("lookup after an aborted set-up: %v, %v; want [false true] %s", found, err, repro(t))
		}
	})
	t.Run("bounded", func(t *testing.T) {
		r := newRig(t, Config{})
		a, h := r.arena("a", 1, slotBytes)
		s := abortSetup(t, r, maxSetupRetries+1)
		c, w := r.submit(drivers.Fetch, rows(h, "absent")...)
		wantStatuses(t, "fetch whose set-up never succeeds", await(t, c, w), Fault)
		if c.Access() != drivers.AccessEnded || len(touchesBy(a, c.ID())) != 0 || s.sent.Load() != 0 {
			t.Fatalf("access %v, %d touches, %d pipelines sent; want ENDED, none, none %s", c.Access(), len(touchesBy(a, c.ID())), s.sent.Load(), repro(t))
		}
	})
	t.Run("own-cancel", func(t *testing.T) {
		// A set-up aborted by the call's own cancellation is not sent
		// again: the rows never started (NOT_ATTEMPTED).
		r := newRig(t, Config{})
		_, h := r.arena("a", 1, slotBytes)
		s := abortSetup(t, r, 1)
		g := &gated{setupAborted: s, entered: make(chan struct{}), release: make(chan struct{})}
		r.d.client = g
		c, w := r.submit(drivers.Fetch, rows(h, "absent")...)
		<-g.entered
		c.Cancel()
		close(g.release)
		wantStatuses(t, "fetch cancelled during its own set-up", await(t, c, w), NotAttempted)
		if n := g.calls.Load(); n != 1 {
			t.Fatalf("%d pipelines tried, want 1: the call's own cancellation was retried %s", n, repro(t))
		}
	})
}

// gated holds the first pipeline until release, so a test can cancel the
// call while its connection is being set up.
type gated struct {
	*setupAborted
	entered, release chan struct{}
	calls            atomic.Int64
}

func (g *gated) DoMulti(ctx context.Context, multi ...rueidis.Completed) []rueidis.RedisResult {
	if g.calls.Add(1) == 1 {
		close(g.entered)
		<-g.release
	}
	return g.setupAborted.DoMulti(ctx, multi...)
}

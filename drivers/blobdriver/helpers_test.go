package blobdriver_test

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/blobdriver"
	"github.com/storesim/storesim/drivers/blobdriver/blobtest"
	"github.com/storesim/storesim/sim/arena"
)

func TestMain(m *testing.M) {
	// Every s3:// bucket of these tests is opened with fake static
	// credentials and nowhere else to look for any (blobtest.FakeCredentials).
	for k, v := range blobtest.FakeCredentials {
		os.Setenv(k, v)
	}
	goleak.VerifyTestMain(m)
}

// repro is the suffix of every failure message: the command that reruns t.
func repro(t testing.TB) string {
	return fmt.Sprintf("(repro: go test ./drivers/blobdriver -run '^%s$' -v)", strings.ReplaceAll(t.Name(), "/", "$/^"))
}

// startS3 starts a gofakes3 server for t (closed at cleanup).
func startS3(t testing.TB, opts blobtest.Options) *blobtest.S3 {
	t.Helper()
	s, err := blobtest.StartS3(opts)
	if err != nil {
		t.Fatalf("start S3: %v %s", err, repro(t))
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("close S3: %v %s", err, repro(t))
		}
	})
	return s
}

// store is one backend a test runs against: a file bucket on a temporary
// directory, or the S3 protocol against gofakes3.
type store struct {
	name string
	url  string
	dir  string // the file bucket's directory ("" for S3)
	s3   *blobtest.S3
}

func fileStore(t testing.TB) store {
	dir := t.TempDir()
	return store{name: "file", url: "file://" + dir, dir: dir}
}

func s3Store(t testing.TB) store {
	s := startS3(t, blobtest.Options{})
	return store{name: "s3", url: s.URL(), s3: s}
}

// stores runs f once per backend, as subtests named file and s3.
func stores(t *testing.T, f func(t *testing.T, st store)) {
	for _, mk := range []func(testing.TB) store{fileStore, s3Store} {
		st := mk(t)
		t.Run(st.name, func(t *testing.T) { f(t, st) })
	}
}

var prefixSeq atomic.Int64

// newDriver builds a driver on url with a fresh prefix and shuts it down
// at cleanup.
func newDriver(t testing.TB, url string, cfg blobdriver.Config) *blobdriver.Driver {
	t.Helper()
	cfg.URL = url
	if cfg.Prefix == "" {
		cfg.Prefix = fmt.Sprintf("storesim-test/%d/%d/", os.Getpid(), prefixSeq.Add(1))
	}
	d, err := blobdriver.New(cfg)
	if err != nil {
		t.Fatalf("New(%s): %v %s", url, err, repro(t))
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		d.Shutdown(ctx)
	})
	return d
}

type wallClock struct{ start time.Time }

func (c wallClock) Now() time.Duration { return time.Since(c.start) }

// register registers an arena region of slots×slotBytes, every slot lent.
func register(t testing.TB, d drivers.Driver, label string, slots, slotBytes int) (*arena.Arena, drivers.Handle) {
	t.Helper()
	a := arena.New(label, slots, slotBytes, arena.Options{Clock: wallClock{start: time.Now()}, Log: true})
	h, err := d.Register(a.Region())
	if err != nil {
		t.Fatalf("register %s: %v %s", label, err, repro(t))
	}
	a.SetRegistered(true)
	for s := range slots {
		a.Lend(s, 1)
	}
	return a, h
}

// run submits a batch and waits (bounded) until every row is final and
// access is evidenced, waking on callbacks.
func run(t testing.TB, d drivers.Driver, dir drivers.Direction, rows ...drivers.Row) drivers.Call {
	t.Helper()
	c, wake := submit(t, d, dir, rows...)
	await(t, c, wake)
	return c
}

// submit submits a batch; the channel receives (without blocking) on every
// callback.
func submit(t testing.TB, d drivers.Driver, dir drivers.Direction, rows ...drivers.Row) (drivers.Call, chan struct{}) {
	t.Helper()
	ch := make(chan struct{}, 1)
	c, err := d.Submit(drivers.RowBatch{Dir: dir, Rows: rows}, func() {
		select {
		case ch <- struct{}{}:
		default:
		}
	})
	if err != nil {
		t.Fatalf("submit %v: %v %s", dir, err, repro(t))
	}
	return c, ch
}

// await waits, checking after each callback, until c is settled; a last
// change without a callback fails it after 20 s (D-CB-2).
func await(t testing.TB, c drivers.Call, wake chan struct{}) {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	for !settled(c) {
		select {
		case <-wake:
		case <-deadline.C:
			t.Fatalf("D-CB-2: call %d not settled 20s after submit, or its last change had no callback: results %v access %v %s",
				c.ID(), c.Results(), c.Access(), repro(t))
		}
	}
}

func settled(c drivers.Call) bool {
	for _, st := range c.Results() {
		if !st.Final() {
			return false
		}
	}
	return c.Access().Evidenced()
}

func rows(h drivers.Handle, keys ...string) []drivers.Row {
	rs := make([]drivers.Row, len(keys))
	for i, k := range keys {
		rs[i] = drivers.Row{Key: k, Handle: h, Slot: i, Position: i}
	}
	return rs
}

func wantStatuses(t testing.TB, what string, got []drivers.Status, want ...drivers.Status) {
	t.Helper()
	if len(want) == 1 && len(got) > 1 {
		for range len(got) - 1 {
			want = append(want, want[0])
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("%s: results %v, want %v %s", what, got, want, repro(t))
	}
}

package blobdriver_test

import (
	"context"
	"fmt"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/blobdriver"
	"github.com/storesim/storesim/drivers/drivertest"
)

// certRig is what a certification of a blob driver needs: a fresh prefix,
// an admin driver on it (MakeAbsent deletes through it; cleanup flushes
// the prefix) and a count of the keys made absent.
type certRig struct {
	url, prefix string
	admin       *blobdriver.Driver
	made        atomic.Int64
}

func newCertRig(t testing.TB, url, tag string) *certRig {
	t.Helper()
	r := &certRig{url: url, prefix: fmt.Sprintf("storesim-certify/%d/%s/", os.Getpid(), tag)}
	var err error
	if r.admin, err = blobdriver.New(blobdriver.Config{URL: url, Prefix: r.prefix}); err != nil {
		t.Fatalf("admin driver: %v %s", err, repro(t))
	}
	t.Cleanup(func() {
		c, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := r.admin.Flush(c); err != nil {
			t.Errorf("cleanup: flush: %v %s", err, repro(t))
		}
		r.admin.Shutdown(c)
	})
	return r
}

// harness certifies the driver newDriver builds on the rig's prefix, on
// the durable store model: a bucket never drops an object by itself.
func (r *certRig) harness(name string, newDriver func(blobdriver.Config) (drivers.Driver, error)) drivertest.Harness {
	return drivertest.Harness{
		Name: name, RealTime: true, ExternalStore: true,
		New: func(env drivertest.Env) (drivers.Driver, error) {
			return newDriver(blobdriver.Config{URL: r.url, Prefix: r.prefix, Caps: env.Caps})
		},
		MakeAbsent: func(key string) error {
			r.made.Add(1)
			c, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			return r.admin.Delete(c, key)
		},
		Ping: func(c context.Context) error { return r.admin.Ping(c) },
	}
}

func realDriver(cfg blobdriver.Config) (drivers.Driver, error) { return blobdriver.New(cfg) }

// certOptions: -short's scale unless STORESIM_DRIVERTEST_FULL=1 asks for
// the CLI's default (12 seeds per case in real time).
func certOptions() drivertest.Options {
	if os.Getenv("STORESIM_DRIVERTEST_FULL") == "1" {
		return drivertest.Options{}
	}
	return drivertest.Options{Short: true}
}

func tally(rep drivertest.Report) (passed, skipped int) {
	for _, rr := range rep.Rules {
		switch rr.Verdict {
		case drivertest.Pass:
			passed++
		case drivertest.Skip:
			skipped++
		}
	}
	return passed, skipped
}

// TestCertify certifies the blob driver in real time on both real
// backends: a file bucket on a temporary directory, and the S3 protocol
// over loopback HTTP against gofakes3, through the AWS SDK client s3blob
// uses. STORESIM_DRIVERTEST_FULL=1 runs the CLI's default scale.
func TestCertify(t *testing.T) {
	stores(t, func(t *testing.T, st store) {
		r := newCertRig(t, st.url, "durable")
		start := time.Now()
		rep := drivertest.Certify(r.harness("blob:"+st.name, realDriver), certOptions())
		passed, skipped := tally(rep)
		t.Logf("\n%s", rep.Table())
		t.Logf("blob:%s certified=%v in %v: %d rule groups passed, %d skipped, %d failed; %d keys made absent",
			st.name, rep.Certified, time.Since(start).Round(time.Millisecond), passed, skipped, len(rep.Failed()), r.made.Load())
		if st.s3 != nil {
			puts, cond := st.s3.Puts()
			t.Logf("the S3 server saw %d PutObject requests, %d of them with If-None-Match", puts, cond)
		}
		if !rep.Certified || r.made.Load() == 0 {
			t.Fatalf("blob:%s in real time: not certified: failed %v, gaps %v, %d keys made absent:\n%s%s",
				st.name, rep.Failed(), rep.Gaps, r.made.Load(), rep.Table(), repro(t))
		}
	})
}

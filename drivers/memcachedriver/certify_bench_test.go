package memcachedriver_test

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/drivertest"
	"github.com/storesim/storesim/drivers/memcachedriver"
)

// BenchmarkCertify is the certification time of the memcached driver against
// the private server of scripts/with-memcached.sh, in real time: one whole
// certification per iteration, at the CLI's scale (`storesim certify
// --driver memcached://…`: every rule group, 12 seeds per case) and at
// -short's. It reports seconds per certification and fails unless the
// driver is certified.
//
//	scripts/with-memcached.sh go test -run '^$' -bench Certify -benchtime 1x ./drivers/memcachedriver
func BenchmarkCertify(b *testing.B) {
	addr := os.Getenv("STORESIM_MEMCACHED_ADDR")
	if addr == "" {
		b.Skip("STORESIM_MEMCACHED_ADDR is not set (run: scripts/with-memcached.sh go test -run '^$' -bench Certify -benchtime 1x ./drivers/memcachedriver)")
	}
	for _, sc := range []struct {
		name string
		opts drivertest.Options
	}{{"scale=cli", drivertest.Options{}}, {"scale=short", drivertest.Options{Short: true}}} {
		b.Run(sc.name, func(b *testing.B) {
			prefix := fmt.Sprintf("storesim-bench-certify-mc/%d/%d/", os.Getpid(), time.Now().UnixNano())
			admin, err := memcachedriver.New(memcachedriver.Config{Addr: addr, Prefix: prefix})
			if err != nil {
				b.Fatalf("admin driver: %v", err)
			}
			defer func() {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				admin.Flush(ctx)
				admin.Shutdown(ctx)
			}()
			h := drivertest.Harness{
				Name: "memcached://" + addr, RealTime: true, ExternalStore: true,
				New: func(env drivertest.Env) (drivers.Driver, error) {
					return memcachedriver.New(memcachedriver.Config{Addr: addr, Prefix: prefix, Caps: env.Caps})
				},
				MakeAbsent: func(key string) error {
					ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
					defer cancel()
					return admin.Delete(ctx, key)
				},
			}
			b.ResetTimer()
			for range b.N {
				if rep := drivertest.Certify(h, sc.opts); !rep.Certified {
					b.Fatalf("memcached:// not certified: failed %v, gaps %v\n%s(repro: scripts/with-memcached.sh go test -run '^$' -bench 'Certify/%s' -benchtime 1x ./drivers/memcachedriver)", rep.Failed(), rep.Gaps, rep.Table(), sc.name)
				}
			}
			b.ReportMetric(b.Elapsed().Seconds()/float64(b.N), "s/certification")
		})
	}
}

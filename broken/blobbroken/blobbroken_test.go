package blobbroken_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/storesim/storesim/broken/blobbroken"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/blobdriver"
	"github.com/storesim/storesim/drivers/blobdriver/blobtest"
	"github.com/storesim/storesim/drivers/drivertest"
)

func TestMain(m *testing.M) {
	for k, v := range blobtest.FakeCredentials {
		os.Setenv(k, v)
	}
	goleak.VerifyTestMain(m)
}

// repro is the suffix of every failure message: the command that reruns t.
func repro(t testing.TB) string {
	return fmt.Sprintf("(repro: go test ./broken/blobbroken -run '^%s$' -v)", strings.ReplaceAll(t.Name(), "/", "$/^"))
}

// TestBrokenCertify shows that certification fails each broken blob driver
// on its rule, in real time, on both backends: a file bucket on a
// temporary directory and the S3 protocol against gofakes3 on loopback.
func TestBrokenCertify(t *testing.T) {
	s3, err := blobtest.StartS3(blobtest.Options{})
	if err != nil {
		t.Fatalf("start S3: %v %s", err, repro(t))
	}
	defer s3.Close()
	backends := []struct{ name, url string }{
		{"file", "file://" + t.TempDir()},
		{"s3", s3.URL()},
	}
	for _, be := range backends {
		for _, bug := range blobbroken.Names() {
			t.Run(be.name+"/"+string(bug), func(t *testing.T) {
				prefix := fmt.Sprintf("storesim-broken/%d/%s/", os.Getpid(), bug)
				admin, err := blobdriver.New(blobdriver.Config{URL: be.url, Prefix: prefix})
				if err != nil {
					t.Fatalf("admin driver: %v %s", err, repro(t))
				}
				defer func() {
					ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
					defer cancel()
					admin.Flush(ctx)
					admin.Shutdown(ctx)
				}()
				h := drivertest.Harness{
					Name: "blob:" + be.name + ":" + string(bug), RealTime: true, ExternalStore: true,
					New: func(env drivertest.Env) (drivers.Driver, error) {
						return blobbroken.New(bug, blobdriver.Config{URL: be.url, Prefix: prefix, Caps: env.Caps})
					},
					MakeAbsent: func(key string) error {
						ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
						defer cancel()
						return admin.Delete(ctx, key)
					},
				}
				rule := bug.Rule()
				start := time.Now()
				rep := drivertest.Certify(h, drivertest.Options{Short: true, Rules: []string{rule}})
				rr, _ := rep.Rule(rule)
				t.Logf("%s on %s: %s %s in %v (failed %v), %d violation(s); first: %s", bug, be.name, rule, rr.Verdict,
					time.Since(start).Round(time.Millisecond), rep.Failed(), rr.Found, strings.Join(rr.Violations[:min(1, len(rr.Violations))], ""))
				if !slices.Contains(rep.Failed(), rule) {
					t.Fatalf("broken blob driver %s on %s: want %s failed, got failed %v:\n%s%s", bug, be.name, rule, rep.Failed(), rep.Table(), repro(t))
				}
			})
		}
	}
}

// TestUnknown: an unknown name is ErrUnknown, listing the known ones.
func TestUnknown(t *testing.T) {
	_, err := blobbroken.New("Nope", blobdriver.Config{URL: "file://" + t.TempDir()})
	if err == nil || !strings.Contains(err.Error(), "TornPublish") {
		t.Fatalf("New(Nope): %v; want ErrUnknown listing the known names %s", err, repro(t))
	}
}

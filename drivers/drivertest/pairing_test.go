package drivertest

import (
	"slices"
	"strings"
	"testing"

	"github.com/storesim/storesim/broken"
)

// TestPairing tests the tester: both reference drivers certify with no
// failed rule and no gap, and every broken driver of SPEC §7 fails
// certification on (at least) the rule its spec names.
func TestPairing(t *testing.T) {
	// 31 certifications must fit the package's time budget: 12 seeds per
	// case (3 with -short) instead of the default 200; the full-size runs are
	// the CLI's and BenchmarkCertify's. With -v it logs which rules each
	// broken driver failed.
	opts := Options{Seeds: 12}
	if testing.Short() {
		opts = Options{Short: true}
	}
	for _, name := range []string{"memory", "together"} {
		t.Run(name, func(t *testing.T) {
			rep := Certify(Registered(name), opts)
			if !rep.Certified {
				t.Fatalf("reference driver %s is not certified:\n%s(repro: %s)", name, rep.Table(), reproOf(t))
			}
		})
	}
	for _, s := range broken.All() {
		t.Run(string(s.Name), func(t *testing.T) {
			rep := Certify(Registered(s.RegistryName()), opts)
			failed := rep.Failed()
			if rep.Certified {
				t.Fatalf("%s (%s, breaks %s) was certified (repro: %s)", s.Name, s.Fault, s.Rule, reproOf(t))
			}
			if !slices.Contains(failed, s.Rule.String()) && (s.Alt == 0 || !slices.Contains(failed, s.Alt.String())) {
				t.Fatalf("%s breaks %s, but the suite failed only %v (gaps %v) (repro: %s)", s.Name, s.Rule, failed, rep.Gaps, reproOf(t))
			}
			t.Logf("%s: %s → failed %s", s.Name, s.Rule, strings.Join(failed, " "))
		})
	}
}

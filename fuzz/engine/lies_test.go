package engine

import (
	"errors"
	"strings"
	"testing"

	"github.com/storesim/storesim/fuzz/workload"
)

// TestLies: each lie, told on every chance, makes the clean backend fail
// (or refuse) what it must — and the run passes: the lie is the driver
// boundary's, the backend's answer to it is right, and every oracle agrees.
func TestLies(t *testing.T) {
	const base = workload.Header + `
seed 7
store durable
endpoint A driver=DRIVER rows=2 absent-is-miss=false inflight=2 queued=8 unprovable=8 regions=A0:8x16,A1:8x16
fault A fault LIE rate=1
op at=0us publish A keys=k1,k2,k3 mask=111
op at=5us fetch A keys=k1,k2 mask=11
op at=90us shutdown A
end
`
	for _, c := range []struct {
		lie, driver string
		delivered   int // Delivered attempts at most
		admitted    int // attempts admitted at least
	}{
		{"lie-lookup-short", "memory", 0, 2},
		{"lie-lookup-long", "memory", 0, 2},
		{"lie-results-short", "memory", 0, 2},
		{"lie-submit-escapes", "memory", 1, 2}, // the fetch may find nothing stored yet: Delivered(nothing)
		{"lie-submit-panics", "memory", 1, 2},
		{"lie-register-unknown", "memory", 0, 0},
		{"lie-together-short", "together", 0, 0},
		{"lie-shutdown-labels", "memory", 2, 2}, // the backend names what it holds itself
	} {
		t.Run(c.lie, func(t *testing.T) {
			repro := "(repro: go test ./fuzz/engine -run 'TestLies/" + c.lie + "')"
			text := replaceAll(base, map[string]string{"DRIVER": c.driver, "LIE": c.lie})
			log, err := workload.Parse(text)
			if err != nil {
				t.Fatal(err)
			}
			res := Run(log, Config{})
			if res.Verdict != Pass {
				t.Fatalf("verdict %v (%v), want pass: the clean backend answers the lie rightly %s\n%v", res.Verdict, res.Err, repro, res.Failures)
			}
			if res.Delivered > c.delivered || res.Attempts < c.admitted {
				t.Fatalf("%d of %d attempts Delivered (%d admitted); want at most %d Delivered, at least %d admitted: the lie was not told %s",
					res.Delivered, res.Attempts, res.Attempts, c.delivered, c.admitted, repro)
			}
		})
	}
	t.Run("bad lie", func(t *testing.T) {
		log, err := workload.Parse(replaceAll(base, map[string]string{"DRIVER": "memory", "LIE": "lie-frob"}))
		if err != nil {
			t.Fatal(err)
		}
		if res := Run(log, Config{}); res.Verdict != HarnessError || !errors.Is(res.Err, ErrBadLog) {
			t.Fatalf("verdict %v, err %v; want a bad log (repro: go test ./fuzz/engine -run 'TestLies/bad_lie')", res.Verdict, res.Err)
		}
	})
}

func replaceAll(s string, r map[string]string) string {
	var pairs []string
	for k, v := range r {
		pairs = append(pairs, k, v)
	}
	return strings.NewReplacer(pairs...).Replace(s)
}

// TestSplitLies: the lies are parsed into their fields, the other lines
// kept in order; without a lie the lines come back as they are.
func TestSplitLies(t *testing.T) {
	plain := []string{"fault fail rate=0.1", "fault slow rate=0.2"}
	if l, rest, err := splitLies(plain); err != nil || l.any() || len(rest) != 2 || &rest[0] != &plain[0] {
		t.Fatalf("splitLies(%q) = %+v, %q, %v; want no lies and the lines themselves (repro: go test ./fuzz/engine -run TestSplitLies)", plain, l, rest, err)
	}
	mixed := []string{"fault lie-lookup-long rate=0.5", "fault fail rate=0.1", "fault lie-shutdown-labels rate=1", "fault slow rate=0.2"}
	l, rest, err := splitLies(mixed)
	if err != nil || l != (Lies{LookupLong: 0.5, ShutdownLabels: 1}) || strings.Join(rest, "|") != "fault fail rate=0.1|fault slow rate=0.2" {
		t.Fatalf("splitLies(%q) = %+v, %q, %v (repro: go test ./fuzz/engine -run TestSplitLies)", mixed, l, rest, err)
	}
	seen := map[Lies]string{}
	for i, k := range lieKinds {
		got, _, err := splitLies([]string{"fault " + k.name + " rate=0.25"})
		var want Lies
		*want.rate(i) = 0.25
		if err != nil || got != want || seen[got] != "" {
			t.Fatalf("%s: %+v, %v; want %+v, a field of its own (repro: go test ./fuzz/engine -run TestSplitLies)", k.name, got, err, want)
		}
		seen[got] = k.name
	}
}

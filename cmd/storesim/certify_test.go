package main

import (
	"encoding/json"
	"strings"
	"testing"
)

// TestCertifyCommand: a reference driver certifies (exit 0), a broken one
// fails on its rule (exit 1) with a JSON certificate that states the
// version, the declared capabilities and what was skipped; usage errors
// and a driver that cannot be reached are exit 2 with one line.
func TestCertifyCommand(t *testing.T) {
	cases := []struct {
		name   string
		args   []string
		code   int
		stdout string
		stderr string
	}{
		{"memory", []string{"certify", "--driver", "memory", "--short", "--rule", "D-ACCESS-END,D-STATUS"}, 0, "D-ACCESS-END    pass", "memory certified"},
		{"together", []string{"certify", "--driver", "together", "--short", "--rule", "D-TOG-1"}, 0, "D-TOG-1         pass", "together certified"},
		{"broken", []string{"certify", "--driver", "broken:LiesAboutAccess", "--short", "--rule", "D-ACCESS-END"}, 1, "D-ACCESS-END    fail",
			"NOT certified: failed D-ACCESS-END"},
		{"broken-repro", []string{"certify", "--driver", "broken:LiesAboutAccess", "--short", "--seed", "7", "--rule", "D-ACCESS-END"}, 1,
			"repro: storesim certify --driver broken:LiesAboutAccess --rule D-ACCESS-END --seed 7 --short", ""},
		{"no-driver", []string{"certify"}, 2, "", "give --driver NAME"},
		{"unknown-driver", []string{"certify", "--driver", "nope"}, 2, "", `unknown driver "nope"`},
		{"unknown-rule", []string{"certify", "--driver", "memory", "--rule", "D-NOPE"}, 2, "", `unknown rule group "D-NOPE"`},
		{"bad-redis", []string{"certify", "--driver", "redis://nohost"}, 2, "", "want redis://HOST:PORT"},
		{"unreachable-redis", []string{"certify", "--driver", "redis://127.0.0.1:1", "--wait", "200ms"}, 2, "", "127.0.0.1:1"},
		{"evicting-memory", []string{"certify", "--driver", "memory", "--evicting"}, 2, "", "memcached:// and redis:// drivers only"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got := storesim(tc.args...)
			if got.code != tc.code || !strings.Contains(got.stdout, tc.stdout) || !strings.Contains(got.stderr, tc.stderr) {
				t.Fatalf("storesim %q: exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit %d, %q, %q %s", tc.args, got.code, got.stdout, got.stderr, tc.code, tc.stdout, tc.stderr, repro(t))
			}
			if tc.code == 2 && strings.Count(strings.TrimSpace(got.stderr), "\n") != 0 {
				t.Fatalf("storesim %q: want one error line, got:\n%s %s", tc.args, got.stderr, repro(t))
			}
		})
	}
	t.Run("json", func(t *testing.T) {
		got := storesim("certify", "--driver", "broken:LiesAboutAccess", "--short", "--rule", "D-ACCESS-END", "--json")
		var cert struct {
			Driver    string         `json:"driver"`
			Version   string         `json:"version"`
			Certified bool           `json:"certified"`
			Caps      map[string]any `json:"capabilities"`
			Rules     []struct {
				Rule, Verdict, Reason string
			} `json:"rules"`
		}
		if err := json.Unmarshal([]byte(got.stdout), &cert); err != nil || got.code != 1 {
			t.Fatalf("exit %d, not a JSON certificate: %v\n%s %s", got.code, err, got.stdout, repro(t))
		}
		verdicts := map[string]string{}
		for _, r := range cert.Rules {
			verdicts[r.Rule] = r.Verdict
			if r.Verdict == "skip" && r.Reason == "" {
				t.Fatalf("rule %s skipped without a reason %s", r.Rule, repro(t))
			}
		}
		if cert.Driver != "broken:LiesAboutAccess" || cert.Version != version || cert.Certified || len(cert.Caps) == 0 ||
			verdicts["D-ACCESS-END"] != "fail" || verdicts["D-TOG-1"] != "skip" {
			t.Fatalf("certificate %+v %s", cert, repro(t))
		}
	})
}

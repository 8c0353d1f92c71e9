package drivertest

import (
	"encoding/json"
	"testing"
)

// TestSwarmWorkersSameReport: the swarm's runs are judged in seed order,
// so a certification played on one worker and on three gives the same
// report — for a conforming driver and for one the swarm catches.
func TestSwarmWorkersSameReport(t *testing.T) {
	for _, tc := range []struct {
		name   string
		failed bool // the swarm must catch it
	}{{"memory", false}, {"broken:LostWakeup", true}} {
		name := tc.name
		t.Run(name, func(t *testing.T) {
			repro := "go test ./drivers/drivertest -run 'TestSwarmWorkersSameReport/" + name + "'"
			var reports [2][]byte
			for i, w := range []int{1, 3} {
				rep := Certify(Registered(name), Options{Short: true, Swarm: 24, Workers: w})
				if rep.Swarm.Runs == 0 || (rep.Swarm.Failed > 0) != tc.failed {
					t.Fatalf("workers %d: %d swarm runs, %d failed; want failures: %v (repro: %s)", w, rep.Swarm.Runs, rep.Swarm.Failed, tc.failed, repro)
				}
				b, err := json.Marshal(rep)
				if err != nil {
					t.Fatal(err)
				}
				reports[i] = b
			}
			if string(reports[0]) != string(reports[1]) {
				t.Fatalf("one worker and three gave different reports:\n%s\n%s\n(repro: %s)", reports[0], reports[1], repro)
			}
		})
	}
}

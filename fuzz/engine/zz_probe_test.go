package engine

import "testing"

func TestZZSteps(t *testing.T) {
	var max uint64
	for _, p := range []Profile{Calm, Default, Evicting} {
		for s := uint64(0); s < 200; s++ {
			r := RunSeed(s, Config{Profile: p})
			if r.Steps > max {
				max = r.Steps
			}
		}
	}
	t.Log("max steps", max)
	r := RunSeed(3, Config{Ops: 100000})
	t.Log("100k ops steps", r.Steps, r.Verdict)
}

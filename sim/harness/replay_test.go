package harness

import "github.com/storesim/storesim/sim/workload"

func parseBack(r *Result) (*workload.Log, error) { return workload.Parse(r.Log.String()) }

package engine

import "github.com/storesim/storesim/fuzz/workload"

func parseBack(r *Result) (*workload.Log, error) { return workload.Parse(r.Log.String()) }

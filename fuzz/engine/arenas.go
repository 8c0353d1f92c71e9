package engine

import "github.com/storesim/storesim/sim/arena"

func arenasOf(ep *endpoint) []*arena.Arena {
	var out []*arena.Arena
	for _, rs := range ep.spec.Regions {
		out = append(out, ep.lender.Arena(rs.Label))
	}
	return out
}

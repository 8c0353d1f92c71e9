package engine

import (
	"github.com/storesim/storesim/drivers/monitor"
	"github.com/storesim/storesim/drivers/rules"
	"github.com/storesim/storesim/model"
)

// Oracle is a check an endpoint carries beyond the recorder, the lender and
// the monitor: it watches the driver boundary as a monitor.Observer (events
// may come from a real driver's goroutines, so it guards its own state) and
// judges the endpoint once the run is over.
type Oracle interface {
	monitor.Observer
	// Judge returns what the oracle found on ep; in says how the run ended
	// (Idle, Finished) and which attempts it admitted.
	Judge(ep *Endpoint, in *CheckInput) []rules.Violation
}

// endpointOracles is THE place a new oracle plugs in: every endpoint that
// NewEndpoint builds — in the run function (simulated and real time), the
// scenario files, the conformance suite and the rapid state machine —
// carries these, observing its monitor, and Check judges them all. The
// reference model of the backend (model/refine: B-MODEL) is added here as
// one more line, e.g.
//
//	if ep.Lender != nil { out = append(out, refine.NewOracle(…)) }
//
// and nowhere else.
func endpointOracles(ep *Endpoint) []Oracle {
	var out []Oracle
	if ep.Lender != nil { // the backend's boundary checks need its memory
		out = append(out, newBackendCheck(ep))
	}
	if ep.opts.Model { // the reference model of the backend (model/refine)
		out = append(out, refineOracle{ep: ep})
	}
	if p := ep.opts.probes; p != nil { // the driver probes (probe.go)
		p.ep, ep.probes = ep, p
		out = append(out, p)
	}
	return out
}

// blindOracle is an oracle that watches nothing at the boundary: its
// Observer methods are empty (it judges from elsewhere). NewEndpoint leaves
// it off the monitor's observers, so no boundary event calls it.
type blindOracle interface {
	Oracle
	blind()
}

// The recorder and the oracles are monitor observers.
var (
	_ monitor.Observer = (*model.Recorder)(nil)
	_ Oracle           = (*backendCheck)(nil)
	_ blindOracle      = refineOracle{}
	_ blindOracle      = (*prober)(nil)
)

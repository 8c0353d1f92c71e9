// Package proctest certifies a driver process (package procdriver) with the
// conformance suite (drivers/drivertest), in real time: every case run
// starts a fresh process, MakeAbsent deletes through the process the case
// runs on, and an incident of any process — one that died, hung, flooded
// or wrote garbage — is reported once, as it happens, and again in the
// report as a gap (a certification with an incident is not certified).
package proctest

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/drivertest"
	"github.com/storesim/storesim/drivers/procdriver"
)

// Rig builds the driver processes of one certification.
type Rig struct {
	cfg procdriver.Config
	// OnIncident, when set, is told of every incident as it happens (the
	// CLI prints it).
	OnIncident func(procdriver.Incident)

	mu        sync.Mutex
	current   procdriver.Process // the process the running case is on
	incidents []procdriver.Incident
	started   int
	deleted   int
	// Kill, when set, is asked after every start whether to kill the
	// process it started (the n-th, from 1) mid-run: a test hook for "a
	// child killed mid-certification".
	Kill func(n int, p procdriver.Process)
}

// New is a rig for processes made from cfg (its OnIncident is the rig's).
func New(cfg procdriver.Config) *Rig { return &Rig{cfg: cfg} }

// Harness is the conformance suite's harness for the rig's processes.
func (r *Rig) Harness(name string) drivertest.Harness {
	return drivertest.Harness{
		Name: name, RealTime: true, ExternalStore: true,
		SharedMemory: true, // the process maps the suite's arenas themselves
		New: func(env drivertest.Env) (drivers.Driver, error) {
			cfg := r.cfg
			cfg.OnIncident = r.incident
			p, err := procdriver.New(cfg)
			if err != nil {
				return nil, err
			}
			r.mu.Lock()
			r.current = p
			r.started++
			n, kill := r.started, r.Kill
			r.mu.Unlock()
			if kill != nil {
				kill(n, p)
			}
			return p, nil
		},
		MakeAbsent: func(key string) error {
			r.mu.Lock()
			p := r.current
			r.deleted++
			r.mu.Unlock()
			if p == nil {
				return nil
			}
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			return p.Delete(ctx, key)
		},
	}
}

func (r *Rig) incident(in procdriver.Incident) {
	r.mu.Lock()
	r.incidents = append(r.incidents, in)
	f := r.OnIncident
	r.mu.Unlock()
	if f != nil {
		f(in)
	}
}

// Incidents lists every incident so far, in the order they happened.
func (r *Rig) Incidents() []procdriver.Incident {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]procdriver.Incident(nil), r.incidents...)
}

// Started counts the processes started; Deleted the keys made absent.
func (r *Rig) Started() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.started
}

// Deleted counts the MakeAbsent calls.
func (r *Rig) Deleted() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.deleted
}

// Report adds the rig's incidents to rep as gaps: a certification during
// which a process died, hung, flooded or wrote garbage is not certified,
// whatever the rule groups say.
func (r *Rig) Report(rep *drivertest.Report) {
	for _, in := range r.Incidents() {
		rep.Gaps = append(rep.Gaps, fmt.Sprintf("driver process incident: %s", in))
		rep.Certified = false
	}
}

// Certify certifies the rig's processes with opts and adds the incidents.
func (r *Rig) Certify(name string, opts drivertest.Options) drivertest.Report {
	rep := drivertest.Certify(r.Harness(name), opts)
	r.Report(&rep)
	return rep
}

// Current is the process the running case is on (the last one started).
func (r *Rig) Current() procdriver.Process {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.current
}

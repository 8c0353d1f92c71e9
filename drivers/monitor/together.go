package monitor

import (
	"errors"
	"fmt"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/rules"
)

// Together is the monitored driver when the wrapped driver implements
// drivers.TogetherRegisterer: a [Monitor] plus checked together-registration
// (D-TOG-1 … D-TOG-4). [Monitor.Driver] returns it; a driver without
// together-registration is never wrapped in it, so a backend's type
// assertion stays honest.
type Together struct{ *Monitor }

var (
	_ drivers.Driver             = (*Monitor)(nil)
	_ drivers.TogetherRegisterer = (*Together)(nil)
)

// RegisterTogether implements drivers.TogetherRegisterer (D-TOG-1, D-TOG-2,
// D-REG-1, D-REG-5, D-QUAR).
func (t *Together) RegisterTogether(regions []drivers.Region) ([]drivers.Handle, error) {
	m := t.Monitor
	m.mu.Lock()
	must := m.mustRefuseLocked(regions)
	m.mu.Unlock()
	hs, err := m.together.RegisterTogether(regions)
	if err != nil {
		if _, ok := errors.AsType[*drivers.InDoubtError](err); ok {
			m.mu.Lock()
			m.quarantined = true
			m.mu.Unlock()
		}
		if len(hs) > 0 {
			m.violate(rules.Violation{Rule: rules.DTog1, Row: -1,
				Detail: fmt.Sprintf("a failed together-registration (%v) returned %d handles; failure must leave nothing registered", err, len(hs))})
		}
		if len(regions) > 0 {
			m.refused(regions, err, must.geom != nil, rules.DTog1)
		}
		return hs, err
	}
	m.mu.Lock()
	label := ""
	if len(regions) > 0 {
		label = regions[0].Label
	}
	if must.rule != 0 {
		m.violateLocked(rules.Violation{Rule: must.rule, Row: -1, Region: label, Detail: "RegisterTogether succeeded although " + must.String()})
	}
	if len(hs) != len(regions) {
		m.violateLocked(rules.Violation{Rule: rules.DTog1, Row: -1, Region: label,
			Detail: fmt.Sprintf("RegisterTogether returned %d handles for %d regions", len(hs), len(regions))})
	}
	n := min(len(hs), len(regions))
	for i := range n {
		m.addRegLocked(hs[i], regions[i])
	}
	m.mu.Unlock()
	for i := range n {
		setRegistered(regions[i], true)
	}
	return hs, nil
}

// UnregisterTogether implements drivers.TogetherRegisterer (D-TOG-3,
// D-TOG-4, D-REG-3). With an *InDoubtError exactly the regions it names
// stay live; any other error is taken as "nothing released".
func (t *Together) UnregisterTogether(hs []drivers.Handle) error {
	m := t.Monitor
	m.mu.Lock()
	var inl [4]closeCtx // a together-batch is a few regions: no allocation
	ctxs := inl[:0]
	for _, h := range hs {
		ctxs = append(ctxs, m.beginCloseLocked(h))
	}
	m.mu.Unlock()
	err := m.together.UnregisterTogether(hs)
	var failed map[string]bool
	if ind, ok := errors.AsType[*drivers.InDoubtError](err); ok {
		failed = map[string]bool{}
		for _, l := range ind.Labels {
			failed[l] = true
		}
	}
	for _, c := range ctxs {
		released := err == nil
		if failed != nil && c.rec != nil {
			released = !failed[c.rec.r.Label]
		}
		m.endClose(c, released, err, rules.DTog4, rules.DTog3)
	}
	return err
}

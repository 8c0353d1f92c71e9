// Package registry maps driver names to drivers, so the CLI, the harness and
// the conformance suite agree on what "memory", "together" and
// "broken:<Name>" mean.
package registry

import (
	"errors"
	"fmt"
	"strings"

	"github.com/storesim/storesim/broken"
	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/sim"
)

// ErrUnknownDriver is returned for a name no factory knows.
var ErrUnknownDriver = errors.New("unknown driver")

// Env is what a simulated driver is built from.
type Env struct {
	RT     sim.Runtime
	Store  *memdriver.Store
	Name   string // instance name, unique per runtime (picks random streams)
	Caps   drivers.Capabilities
	Faults memdriver.FaultMix
	_      struct{}
}

// Factory builds a driver instance.
type Factory func(env Env) (drivers.Driver, error)

// New builds the driver called name.
func New(name string, env Env) (drivers.Driver, error) {
	cfg := memdriver.Config{Name: env.Name, Caps: env.Caps, Faults: env.Faults}
	switch name {
	case "memory":
		return memdriver.New(env.RT, env.Store, cfg), nil
	case "together":
		return memdriver.NewTogether(env.RT, env.Store, cfg), nil
	}
	if s, ok := broken.Lookup(name); ok && strings.HasPrefix(name, broken.Prefix) {
		return broken.New(s.Name, env.RT, env.Store, cfg)
	}
	return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownDriver, name, strings.Join(Names(), ", "))
}

// Names lists every known simulated driver name: the reference drivers
// "memory" and "together", then "broken:<Name>" for every broken driver of
// SPEC §7, sorted.
func Names() []string {
	names := []string{"memory", "together"}
	for _, n := range broken.Names() {
		names = append(names, broken.Prefix+string(n))
	}
	return names
}

package drivertest

import (
	"sync"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
)

// Canary is a harness the suite must always fail, so that a suite that was
// silently disabled (no case running, a check that can no longer fire)
// shows up as a certified canary. Its driver is the reference MemoryDriver
// except for one lie per instance: the first FETCH row that the store
// answers MISS is reported OK, without the slot being written — a breach of
// D-STATUS (OK means the whole object is in the slot) that the suite's own
// status checks and S-LIN both see. It is not a registry driver; the CLI
// may offer it as "canary".
var Canary = Harness{Name: "canary", New: newCanary}

func newCanary(env Env) (drivers.Driver, error) {
	cfg := memdriver.Config{Name: env.Name, Caps: env.Caps, Faults: env.Faults}
	if cfg.Caps == (drivers.Capabilities{}) {
		cfg.Caps = memdriver.DefaultCaps
	}
	cfg.Caps.AbsentIsMiss = true // so an absent key is a MISS to lie about
	return &canaryDriver{Driver: memdriver.New(env.RT, env.Store, cfg)}, nil
}

// canaryDriver embeds the reference driver, so every optional probe of the
// monitor (Locked, Live, Bound, PendingCalls) still works.
type canaryDriver struct {
	*memdriver.Driver
	mu   sync.Mutex
	lied bool
	call drivers.CallID
	row  int
}

func (d *canaryDriver) Submit(b drivers.RowBatch, onChange func()) (drivers.Call, error) {
	c, err := d.Driver.Submit(b, onChange)
	if err != nil || b.Dir != drivers.Fetch {
		return c, err
	}
	return &canaryCall{Call: c, d: d}, nil
}

type canaryCall struct {
	drivers.Call
	d *canaryDriver
}

// Results reports the chosen MISS row as OK, from the moment it is final
// on (so the lie is consistent: D-CB-3 stays kept).
func (c *canaryCall) Results() []drivers.Status {
	res := c.Call.Results()
	c.d.mu.Lock()
	defer c.d.mu.Unlock()
	for i, s := range res {
		if s == drivers.Miss && !c.d.lied {
			c.d.lied, c.d.call, c.d.row = true, c.ID(), i
		}
		if c.d.lied && c.d.call == c.ID() && c.d.row == i {
			res[i] = drivers.OK
		}
	}
	return res
}

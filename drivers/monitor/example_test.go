package monitor_test

import (
	"context"
	"fmt"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/drivers/monitor"
	"github.com/storesim/storesim/sim"
	"github.com/storesim/storesim/sim/arena"
)

// Wrap a driver, use the wrapper as the driver, and ask Finish for every
// contract violation at the end of the run.
func Example() {
	s := sim.New(sim.Options{Seed: 42})
	store, _ := memdriver.NewStore(memdriver.StoreOptions{})
	m := monitor.Wrap(memdriver.New(s, store, memdriver.Config{}), monitor.Options{Clock: s, Seed: 42})
	d := m.Driver() // hand this to the backend

	a := arena.New("r", 4, 16, arena.Options{Clock: s})
	a.Lend(0, 1)
	h, _ := d.Register(a.Region())
	fmt.Println("registered:", a.Registered())

	var c drivers.Call
	c, _ = d.Submit(drivers.RowBatch{Dir: drivers.Publish, Rows: []drivers.Row{{Key: "k", Handle: h}}},
		s.Wake("onChange", func() { fmt.Println("results", c.Results(), "access", c.Access()) }))
	_ = s.RunUntilIdle(0)

	fmt.Println("labels:", d.Shutdown(context.Background()), "registered:", a.Registered())
	fmt.Println("violations:", m.Finish())
	// Output:
	// registered: true
	// results [OK] access ENDED
	// labels: [] registered: false
	// violations: []
}

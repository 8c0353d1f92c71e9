package backend_test

import (
	"bytes"
	"fmt"

	"github.com/storesim/storesim/backend"
	"github.com/storesim/storesim/backend/keys"
	"github.com/storesim/storesim/drivers/memdriver"
	"github.com/storesim/storesim/model/lender"
	"github.com/storesim/storesim/sim"
)

// node is one endpoint: its own memory (a lender's arenas), its own driver
// and its own backend, on a store shared with other nodes.
type node struct {
	l *lender.Lender
	b *backend.Backend
}

func newNode(rt *sim.Scheduler, store *memdriver.Store, name string) node {
	l, _ := lender.New(rt, lender.Spec{Label: name + "/kv", Slots: 8, SlotBytes: 32})
	d := memdriver.New(rt, store, memdriver.Config{Name: name})
	b, err := backend.New(rt, d, l.Regions(), backend.Config{Name: name, OnChange: l.OnChange})
	if err != nil {
		panic(err)
	}
	l.Bound(b)
	return node{l, b}
}

func (n node) shutdown(rt *sim.Scheduler) []string {
	var labels []string
	n.b.Shutdown(func(l []string) { labels = l; n.l.ShutdownReturned(l) })
	_ = rt.RunUntilIdle(0)
	return labels
}

// Two endpoints share one store: A publishes KV pages, B fetches them plus
// one page nobody published. B gets exactly the known pages, byte for byte;
// both shut down with nothing left over, so both lenders release their hold,
// and no memory was touched late.
func Example() {
	rt := sim.New(sim.Options{Seed: 42})
	store, _ := memdriver.NewStore(memdriver.StoreOptions{})
	scheme, _ := keys.NewScheme("llm-kv", 1, 4)
	key := func(page uint32) string {
		k, _ := scheme.Key([]byte{byte(page >> 24), byte(page >> 16), byte(page >> 8), byte(page)})
		return k
	}
	pages := [][]byte{[]byte("page 7: attention keys, layer 0!"), []byte("page 8: attention keys, layer 1!")}

	a := newNode(rt, store, "A")
	b := newNode(rt, store, "B")

	_, pub, _ := a.l.Publish(a.b, []string{key(7), key(8)}, pages)
	_ = rt.RunUntilIdle(0)
	fmt.Println("A publish:", pub.Outcome())

	loan, fetch, _ := b.l.Fetch(b.b, []string{key(7), key(9), key(8)})
	_ = rt.RunUntilIdle(0)
	fmt.Println("B fetch:", fetch.Outcome(), "served", fetch.Outcome().Served, "access", fetch.Access())
	fmt.Println("B bytes equal:", bytes.Equal(loan.Data(0), pages[0]), loan.Data(1) == nil, bytes.Equal(loan.Data(2), pages[1]))
	fmt.Println("B slots:", loan.State())

	fmt.Println("A labels:", a.shutdown(rt), "held:", a.l.Held())
	fmt.Println("B labels:", b.shutdown(rt), "held:", b.l.Held())
	fmt.Println("violations:", len(a.l.Violations())+len(b.l.Violations()))
	// Output:
	// A publish: DELIVERED(2/2 served)
	// B fetch: DELIVERED(2/3 served) served [true false true] access ENDED
	// B bytes equal: true true true
	// B slots: released
	// A labels: [] held: false
	// B labels: [] held: false
	// violations: 0
}

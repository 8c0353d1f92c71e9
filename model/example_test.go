package model_test

import (
	"fmt"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/model"
)

// A publish stores v; a later read finds the key absent. A durable store
// cannot do that; an evicting one can.
func ExampleCheck() {
	v := model.Digest([]byte("page 1"))
	h := model.History{
		{Kind: model.KindPublish, Key: "k", Value: v, Status: drivers.OK, Call: 1, Return: 2, CallID: 1},
		{Kind: model.KindFetch, Key: "k", Status: drivers.Miss, Call: 3, Return: 4, CallID: 2},
	}
	for _, p := range []model.StoreModel{model.DurableStore, model.EvictingStore} {
		res := model.Check(h, p, 0)
		fmt.Println(p, res.Outcome)
		for _, v := range res.Violations(42) {
			fmt.Println(" ", v.Rule, v.Class, "key", v.Key, "call", v.Call)
		}
	}
	// Output:
	// durable Illegal
	//   S-LIN safety key k call 2
	// evicting Ok
}

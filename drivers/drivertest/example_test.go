package drivertest_test

import (
	"fmt"
	"testing"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/drivertest"
	"github.com/storesim/storesim/drivers/memdriver"
)

// Certify your own driver from your own module's test (here the reference
// MemoryDriver stands in for yours; the README's snippet, a whole file, is
// built as written by TestReadmeOutOfTree in cmd/storesim/cli).
func ExampleRun() {
	TestConformance := func(t *testing.T) {
		drivertest.Run(t, drivertest.Harness{Name: "mine", New: func(env drivertest.Env) (drivers.Driver, error) {
			return memdriver.New(env.RT, env.Store, memdriver.Config{Name: env.Name, Caps: env.Caps, Faults: env.Faults}), nil
		}})
	}
	_ = TestConformance
}

// Certify without *testing.T, as `storesim certify` does.
func ExampleCertify() {
	rep := drivertest.Certify(drivertest.Registered("memory"), drivertest.Options{Short: true})
	fmt.Println("certified:", rep.Certified)
	rr, _ := rep.Rule("D-TOG-1")
	fmt.Println("D-TOG-1:", rr.Verdict, "—", rr.Reason)
	// Output:
	// certified: true
	// D-TOG-1: skip — the driver does not offer together-registration (drivers.TogetherRegisterer)
}

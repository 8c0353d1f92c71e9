package targets

import "github.com/storesim/storesim/fuzz/machine"

// Machine runs the backend state machine of fuzz/machine (two endpoints on
// one store, the reference drivers) with every draw — the endpoints'
// configuration, the operations, the faults and the schedule — read from
// the bytes (machine.Bytes: every input decodes), the invariants after
// every action and every check of SPEC §5 at the end. It returns 1: every
// input runs.
func Machine(data []byte) int {
	if err := CheckMachine(data, machine.Options{}); err != nil {
		fail("Machine", data, err.Error())
	}
	return 1
}

// CheckMachine is Machine without the panic (opts plant a driver bug in
// tests); a panic inside the run is returned as a failure with its stack.
func CheckMachine(data []byte, opts machine.Options) error {
	return machine.RunBytes(data, opts)
}

package targets

import (
	"fmt"
	"reflect"

	"github.com/storesim/storesim/fuzz/workload"
)

// ParseOpLog reads the bytes as op log text: workload.Parse must never
// panic, and whatever it accepts must print (Log.String) and parse back to
// the same log. Text Parse refuses returns 0.
func ParseOpLog(data []byte) int {
	ok, err := guard(func() (bool, error) { return CheckParseOpLog(data) })
	if err != nil {
		fail("ParseOpLog", data, err.Error())
	}
	if !ok {
		return 0
	}
	return 1
}

// CheckParseOpLog is ParseOpLog without the panic: whether Parse accepted
// the text, and the round-trip failure. A panic of Parse propagates
// (ParseOpLog reports it as the failure).
func CheckParseOpLog(data []byte) (parsed bool, err error) {
	text := string(data)
	l, err := workload.Parse(text)
	if err != nil {
		return false, nil // refusing is fine; panicking is not
	}
	printed := l.String()
	back, err := workload.Parse(printed)
	if err != nil {
		return true, fmt.Errorf("a parsed log prints to text Parse refuses: %v\ninput:\n%q\nprinted:\n%s", err, text, printed)
	}
	if !reflect.DeepEqual(l, back) || back.String() != printed {
		return true, fmt.Errorf("round trip changed the log\ninput:\n%q\nprinted:\n%s\nreprinted:\n%s", text, printed, back.String())
	}
	return true, nil
}

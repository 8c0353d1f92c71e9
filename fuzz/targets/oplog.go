package targets

import (
	"errors"
	"strings"

	"github.com/storesim/storesim/fuzz"
	"github.com/storesim/storesim/fuzz/engine"
)

// OpLog decodes the bytes to an op log (fuzz.Decode: every input decodes)
// and runs it on the reference drivers through every check of SPEC §5
// (engine.Run); any verdict but pass is a failure. An input that decodes to
// nothing runnable returns 0.
func OpLog(data []byte) int {
	engine.TuneFuzzGC() // once per process: a fuzz worker's GC target
	engine.GrowStack()  // go test -fuzz runs each input on a new goroutine
	ran, err := guard(func() (bool, error) { return CheckOpLog(data, engine.Config{}) })
	if err != nil {
		fail("OpLog", data, err.Error())
	}
	if !ran {
		return 0
	}
	return 1
}

// CheckOpLog is OpLog without the panic: whether the input ran, and its
// failure report (the decoded op log included: storesim replay FILE runs
// it). cfg is the harness config (its Factory plants a driver in tests).
func CheckOpLog(data []byte, cfg engine.Config) (ran bool, err error) {
	log, ok := fuzz.Decode(data)
	if !ok {
		return false, nil
	}
	cfg.Lean = true // a failing input is played again in full for its report
	res := engine.Run(log, cfg)
	if res.Verdict == engine.Pass {
		return true, nil
	}
	var b strings.Builder
	res.WriteReport(&b)
	b.WriteString("(that repro line is for generated seeds; this log was decoded from fuzz bytes: save the op log below to FILE and storesim replay FILE runs it)\nop log:\n")
	b.WriteString(res.Log.String())
	return true, errors.New(b.String())
}

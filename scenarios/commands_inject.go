package scenarios

// The inject command: a fault of the endpoint's driver, a stale lookup or a
// failing together-registration.

// faultSetter is what `inject` needs of a driver: the reference drivers
// (and the broken drivers built on them) have it.
type faultSetter interface {
	SetFault(kind string, rate float64) error
	InjectStaleLookup(key string)
	InjectTogetherFailure(label string)
}

func cmdInject(w *scenarioRun, b *block) error {
	ep, err := w.endpointArg(b, b.pos[0])
	if err != nil {
		return err
	}
	fs, ok := ep.Driver.(faultSetter)
	if !ok {
		w.printf("%s driver %s takes no injected faults", ep.name, ep.driver)
		return nil
	}
	kind := b.pos[1]
	switch {
	case kind == "stale-lookup" && b.args["key"] != "":
		fs.InjectStaleLookup(b.args["key"])
		w.printf("%s next FETCH of %s finds it evicted (stale lookup)", ep.name, b.args["key"])
		return nil
	case kind == "together-fail" && b.args["region"] != "":
		fs.InjectTogetherFailure(b.args["region"])
		w.printf("%s next together-registration fails at region %s", ep.name, b.args["region"])
		return nil
	case b.args["key"] != "" || b.args["region"] != "":
		return w.fail(b, "key= goes with stale-lookup and region= with together-fail")
	}
	rate, err := w.floatArg(b, "rate", 1)
	if err != nil {
		return err
	}
	if err := fs.SetFault(kind, rate); err != nil {
		return w.fail(b, "bad argument %q: %v", kind, err)
	}
	if rate > 0 {
		ep.faulty = true
	}
	w.printf("%s fault %s rate=%v", ep.name, kind, rate)
	return nil
}

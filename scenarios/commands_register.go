package scenarios

// The register command: an endpoint defined with register=later registers its
// backend.

func cmdRegister(w *scenarioRun, b *block) error {
	ep, err := w.endpointArg(b, b.pos[0])
	if err != nil {
		return err
	}
	if ep.Backend != nil {
		return w.fail(b, "endpoint %s already has a backend (register it once, with register=later)", ep.name)
	}
	w.register(ep)
	return nil
}

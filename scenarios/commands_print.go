package scenarios

// The commands of what a scenario prints: stats (the backend's and the
// lender's counters) and set touches=BOOL.

func cmdStats(w *scenarioRun, b *block) error {
	ep, err := w.endpointArg(b, b.pos[0])
	if err != nil {
		return err
	}
	if ep.Backend == nil {
		w.printf("%s has no backend", ep.name)
		return nil
	}
	s := ep.Backend.Stats()
	w.printf("%s attempts=%d delivered=%d failed=%d cancelled=%d rejected=%d invalid=%d", ep.name, s.Attempts, s.Delivered, s.Failed, s.Cancelled, s.Rejected, s.Invalid)
	w.printf("%s served=%d missed=%d declined=%d raced=%d calls=%d lookups=%d", ep.name, s.Served, s.Missed, s.Declined, s.Raced, s.Calls, s.Lookups)
	w.printf("%s inflight=%d queued=%d unprovable=%d unprovable-total=%d retained-bytes=%d", ep.name, s.InFlight, s.Queued, s.Unprovable, s.UnprovableTotal, s.RetainedBytes)
	l := ep.Lender.Stats()
	w.printf("%s slots lent=%d released=%d retained=%d retained-bytes=%d held=%v", ep.name, l.Lent, l.Released, l.Retained, l.RetainedBytes, ep.Lender.Held())
	return nil
}

func cmdSet(w *scenarioRun, b *block) error {
	t, err := w.boolArg(b, "touches", w.touches)
	if err != nil {
		return err
	}
	w.touches = t
	w.printf("touches=%v", t)
	return nil
}

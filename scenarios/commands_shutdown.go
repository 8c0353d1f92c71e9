package scenarios

import (
	"strconv"
	"strings"
)

// The commands of an endpoint's end: drain and shutdown.

func cmdDrain(w *scenarioRun, b *block) error {
	ep, err := w.endpointArg(b, b.pos[0])
	if err != nil {
		return err
	}
	st := ep.Monitor.Drain()
	if st.Done {
		w.printf("%s drain done", ep.name)
		return nil
	}
	ids := make([]string, len(st.Pending))
	for i, id := range st.Pending {
		ids[i] = strconv.FormatUint(uint64(id), 10)
	}
	w.printf("%s drain not done: calls pending [%s]", ep.name, strings.Join(ids, " "))
	return nil
}

func cmdShutdown(w *scenarioRun, b *block) error {
	ep, err := w.endpointArg(b, b.pos[0])
	if err != nil {
		return err
	}
	if ep.Backend == nil {
		w.printf("%s has no backend: driver shutdown only", ep.name)
		ep.Monitor.Shutdown(cancelled())
		return nil
	}
	ep.Asked = true
	ep.shutN++
	n := ep.shutN
	w.printf("%s shutdown %d requested", ep.name, n)
	ep.Backend.Shutdown(func(labels []string) {
		ep.Down = true
		w.printf("%s shutdown %d returned labels [%s]", ep.name, n, strings.Join(labels, " "))
		ep.Lender.ShutdownReturned(labels)
		if ep.Lender.Held() {
			w.printf("%s lender keeps its regions", ep.name)
		} else {
			w.printf("%s lender released its regions", ep.name)
		}
	})
	return nil
}

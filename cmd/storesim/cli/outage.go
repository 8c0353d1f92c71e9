package cli

import (
	"context"
	"fmt"
	"time"
)

// stillAnswering is asked after a real-time seed that did not pass: a
// store that no longer answers one PING (memcached: version) within the
// wait (default 2 s) is lost — the swarm stops after the seeds in flight,
// and the run ends with the one line "store unreachable: ADDR (…)", exit
// 2, as certify does: the failures of the seeds the outage hit are not
// verdicts on the driver. A driver process (exec:) reports its own
// incidents instead.
func (f *realFlags) stillAnswering(seed uint64) {
	if isExec(f.url) || f.lost.Load() != nil {
		return
	}
	wait := f.wait
	if wait <= 0 {
		wait = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	err := storePing(ctx, f.url, f.addr)
	if err == nil {
		return
	}
	msg := fmt.Sprintf("store unreachable: %v; it stopped answering during seed %d, so that seed's failures and the seeds not run are the outage's, not verdicts (rerun when %s answers again)", err, seed, f.url)
	if f.lost.CompareAndSwap(nil, &msg) && f.stopRun != nil {
		f.stopRun()
	}
}

package scenarios

import (
	"strings"

	"github.com/storesim/storesim/drivers"
)

// commands is the scenario language. Each command runs synchronously; only
// deliver, tick and stabilize run queued events. The commands live one per
// file or in small groups: commands_<topic>.go, endpoint in endpoint.go,
// check in check.go.
var commands map[string]cmdSpec

func init() {
	commands = map[string]cmdSpec{
		"store": {usage: "store durable|evicting [seed=N] [wake-delay=DUR] [coalesce=P] [evict-chance=P] [order=seed|fifo]", minPos: 1, maxPos: 1,
			keys: []string{"seed", "wake-delay", "coalesce", "evict-chance", "order"}, run: cmdStore},
		"endpoint": {usage: "endpoint NAME [driver=memory|together|broken:<Name>] [rows=N] [absent-is-miss=BOOL] [cancel=BOOL] [regions=LABEL:SLOTSxBYTES,…] [inflight=N] [queued=N] [unprovable=N] [drain-timeout=DUR] [faults=KIND:RATE,…] [register=now|later]",
			minPos: 1, maxPos: 1, keys: []string{"driver", "rows", "absent-is-miss", "cancel", "regions", "inflight", "queued", "unprovable", "drain-timeout", "faults", "register"}, run: cmdEndpoint},
		"register":  {usage: "register EP", minPos: 1, maxPos: 1, run: cmdRegister},
		"publish":   {usage: "publish EP keys=a,b [mask=11] [as=NAME]", minPos: 1, maxPos: 1, keys: []string{"keys", "mask", "as"}, run: cmdSubmit(drivers.Publish)},
		"fetch":     {usage: "fetch EP keys=a,b [mask=11] [as=NAME]", minPos: 1, maxPos: 1, keys: []string{"keys", "mask", "as"}, run: cmdSubmit(drivers.Fetch)},
		"deliver":   {usage: "deliver [EVENT-ID | LABEL SUBSTRING]", minPos: 0, maxPos: -1, run: cmdDeliver},
		"queue":     {usage: "queue", run: cmdQueue},
		"tick":      {usage: "tick DURATION", minPos: 1, maxPos: 1, run: cmdTick},
		"stabilize": {usage: "stabilize [only=EP,…] [max=N]", keys: []string{"only", "max"}, run: cmdStabilize},
		"inject":    {usage: "inject EP FAULT [rate=P] | inject EP stale-lookup key=K | inject EP together-fail region=L", minPos: 2, maxPos: 2, keys: []string{"rate", "key", "region"}, run: cmdInject},
		"evict":     {usage: "evict KEY", minPos: 1, maxPos: 1, run: cmdEvict},
		"cancel":    {usage: "cancel NAME", minPos: 1, maxPos: 1, run: cmdCancel},
		"drain":     {usage: "drain EP", minPos: 1, maxPos: 1, run: cmdDrain},
		"shutdown":  {usage: "shutdown EP", minPos: 1, maxPos: 1, run: cmdShutdown},
		"check":     {usage: "check", run: cmdCheck},
		"stats":     {usage: "stats EP", minPos: 1, maxPos: 1, run: cmdStats},
		"set":       {usage: "set touches=BOOL", keys: []string{"touches"}, run: cmdSet},
		"driver-register": {usage: "driver-register EP LABEL:SLOTSxBYTES [over=REGION]", minPos: 2, maxPos: 2,
			keys: []string{"over"}, run: cmdDriverRegister},
		"driver-unregister": {usage: "driver-unregister EP h=HANDLE", minPos: 1, maxPos: 1, keys: []string{"h"}, run: cmdDriverUnregister},
		"driver-submit": {usage: "driver-submit EP fetch|publish h=HANDLE keys=a,b slots=0,1 [as=NAME]", minPos: 2, maxPos: 2,
			keys: []string{"h", "keys", "slots", "as"}, run: cmdDriverSubmit},
	}
}

func (w *scenarioRun) needStore(b *block) error {
	if w.s == nil {
		return w.fail(b, "no store yet: a scenario starts with `store durable` or `store evicting`")
	}
	return nil
}

func (w *scenarioRun) endpointArg(b *block, name string) (*endpoint, error) {
	if err := w.needStore(b); err != nil {
		return nil, err
	}
	ep := w.byName[name]
	if ep == nil {
		return nil, w.fail(b, "unknown endpoint %q (defined: %s)", name, strings.Join(sortedKeys(w.byName), " "))
	}
	return ep, nil
}

package scenarios

import (
	"fmt"
	"strings"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/model/lender"
)

// The commands of one attempt: publish and fetch (through the backend), and
// cancel (of an attempt, or of a raw driver-submit call).

func cmdSubmit(dir drivers.Direction) func(w *scenarioRun, b *block) error {
	return func(w *scenarioRun, b *block) error {
		ep, err := w.endpointArg(b, b.pos[0])
		if err != nil {
			return err
		}
		keys := listArg(b, "keys")
		if len(keys) == 0 {
			return w.fail(b, "missing argument keys=a,b,…")
		}
		mask, err := w.maskArg(b, len(keys))
		if err != nil {
			return err
		}
		w.counter[dir]++
		name := b.args["as"]
		if name == "" {
			name = fmt.Sprintf("%c%d", strings.ToLower(dir.String())[0], w.counter[dir])
		}
		if w.named[name] != nil || w.raws[name] != nil {
			return w.fail(b, "name %q used twice", name)
		}
		r := &attemptRec{name: name, ep: ep, dir: dir, keys: keys}
		w.named[name] = r
		if ep.Backend == nil {
			w.printf("%s %s: endpoint %s has no backend", ep.name, name, ep.name)
			return nil
		}
		loan, err := ep.Lender.Lend(len(keys))
		if err != nil {
			w.printf("%s %s: no slots: %v", ep.name, name, err)
			return nil
		}
		if dir == drivers.Publish {
			for i := range keys {
				if a := ep.Lender.Arena(loan.Slots()[i].Region); a != nil {
					ep.Lender.Fill(loan, i, content(objectID(name, keys, i), a.Region().SlotBytes))
				}
			}
		}
		v, err := loan.View(ep.Backend, keys, mask)
		if err != nil {
			_ = ep.Lender.Return(loan)
			w.printf("%s %s: %v", ep.name, name, err)
			return nil
		}
		var shown []string
		for i, row := range v.Rows {
			s := ep.row(row)
			if !mask[i] {
				s = "-" + s
			}
			shown = append(shown, s)
		}
		w.printf("%s %s %v [%s]", ep.name, name, dir, strings.Join(shown, " "))
		if dir == drivers.Publish {
			r.a, err = ep.Backend.Publish(v)
		} else {
			r.a, err = ep.Backend.Fetch(v)
		}
		if err != nil {
			r.a = nil
			if rerr := ep.Lender.Return(loan); rerr != nil {
				return w.fail(b, "lender: %v", rerr)
			}
			w.printf("%s %s rejected: %v", ep.name, name, err)
			return nil
		}
		r.loan = loan
		if err := ep.Lender.Attach(loan, r.a); err != nil {
			return w.fail(b, "lender: %v", err)
		}
		w.attempts = append(w.attempts, r)
		r.loanS = lender.Lent
		w.printf("%s %s admitted: attempt %d, %d batch(es)", ep.name, name, r.a.ID(), r.a.Batches())
		return nil
	}
}

// objectID names the object a publish writes for row i: "<attempt>/<key>",
// with "#<row>" when the key repeats in the view, so every object is unique
// (the store model assumes it, S-LIN).
func objectID(name string, keys []string, i int) string {
	id := name + "/" + keys[i]
	for j, k := range keys {
		if k == keys[i] && j != i {
			return fmt.Sprintf("%s#%d", id, i)
		}
	}
	return id
}

func cmdCancel(w *scenarioRun, b *block) error {
	if err := w.needStore(b); err != nil {
		return err
	}
	name := b.pos[0]
	if rc := w.raws[name]; rc != nil {
		if rc.call == nil {
			w.printf("%s: nothing to cancel (the submit was refused)", name)
			return nil
		}
		w.printf("%s %s cancel: %v", rc.ep.name, name, rc.call.Cancel())
		w.poll()
		return nil
	}
	r := w.named[name]
	if r == nil {
		return w.fail(b, "unknown attempt %q (named: %s)", name, strings.Join(sortedKeys(w.named), " "))
	}
	if r.a == nil {
		w.printf("%s %s: nothing to cancel (admission was refused)", r.ep.name, name)
		return nil
	}
	if r.a.Cancel() {
		w.printf("%s %s cancel committed", r.ep.name, name)
	} else {
		w.printf("%s %s cancel not committed: outcome was already %v", r.ep.name, name, r.a.State())
	}
	return nil
}

package diff

import (
	"errors"
	"fmt"
	"slices"

	"github.com/storesim/storesim/fuzz/workload"
)

// Run plays log on side a and on side b, one after the other, and compares
// their answers row by row (see the package doc). cfg.Repro is the command
// every report ends with.
func Run(log *workload.Log, a, b Side, cfg Config) *Result {
	res := &Result{Seed: log.Seed, Log: log, Repro: cfg.Repro}
	if err := CheckLog(log); err != nil {
		res.Err = err
		res.cleanup(a, b)
		return res
	}
	objs, first := objects(log), firstPublishes(log)
	var ps [2]*player
	for i, s := range [2]Side{a, b} {
		res.Sides[i] = SideResult{Name: s.Name}
		p, err := newPlayer(log, s, objs, first)
		if err != nil {
			res.Err = errors.Join(res.Err, err)
			continue
		}
		ps[i] = p
	}
	if res.Err != nil {
		for _, p := range ps {
			if p != nil {
				p.shutdown()
				p.close()
			}
		}
		res.cleanup(a, b)
		return res
	}
	for i, p := range ps {
		p.play()
		p.judge(cfg.LinTimeout)
		p.close()
		res.Sides[i] = p.res
		if p.stalled != "" {
			res.Err = errors.Join(res.Err, fmt.Errorf("%w %s: %s", ErrSide, p.side.Name, p.stalled))
		}
	}
	res.cleanup(a, b)
	res.compare(ps)
	return res
}

func (r *Result) cleanup(sides ...Side) {
	for _, s := range sides {
		if s.Cleanup != nil {
			if err := s.Cleanup(); err != nil {
				r.Err = errors.Join(r.Err, err)
			}
		}
	}
}

// compare walks every answered row in play order: a row both sides
// answered counts as compared (and as differing when the answers do, both
// allowed); an answer the contract forbids is a divergence, whichever side
// gave it.
func (r *Result) compare(ps [2]*player) {
	var ids []rowID
	for _, p := range ps {
		for id := range p.ans {
			if !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
		}
	}
	slices.SortFunc(ids, func(x, y rowID) int {
		switch {
		case x.less(y):
			return -1
		case y.less(x):
			return 1
		}
		return 0
	})
	for _, id := range ids {
		a0, ok0 := ps[0].ans[id]
		a1, ok1 := ps[1].ans[id]
		if ok0 && ok1 {
			r.Rows++
			if a0.text != a1.text && a0.v.rule == 0 && a1.v.rule == 0 {
				r.Differ++
			}
		}
		texts := [2]string{"not played", "not played"}
		if ok0 {
			texts[0] = a0.text
		}
		if ok1 {
			texts[1] = a1.text
		}
		for side, a := range [2]answer{a0, a1} {
			if !(side == 0 && ok0 || side == 1 && ok1) || a.v.rule == 0 {
				continue
			}
			r.Diverged++
			if len(r.Divergences) < maxDivergences {
				r.Divergences = append(r.Divergences, Divergence{
					Op: id.op, Row: id.pos, Key: a.key, Endpoint: a.endpoint, What: id.what,
					Answers: texts, Side: side, Rule: a.v.rule, Why: a.v.why,
				})
			}
		}
	}
}

// FinalOp is the op index a Divergence of the final store content names.
func FinalOp(log *workload.Log) int { return len(log.Ops) }

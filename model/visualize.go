package model

import (
	"fmt"
	"io"
	"slices"

	"github.com/anishathalye/porcupine"
	"github.com/storesim/storesim/drivers"
)

// Porcupine's HTML view of an S-LIN check, with the recorder's notes as
// annotations.

// WriteVisualization writes porcupine's HTML view of the check: for an
// Illegal result only the failing keys, else the whole history. Notes whose
// call or key appears in the view (and notes about neither, like shutdown)
// are drawn as annotations: callbacks, faults, access changes, cancels,
// region lifecycle.
func WriteVisualization(w io.Writer, res CheckResult, notes []Note) error {
	if res.Err != nil {
		return fmt.Errorf("model: no visualization: %w", res.Err)
	}
	if res.model.Step == nil {
		return fmt.Errorf("model: no visualization of a CheckResult that Check did not return")
	}
	ops := res.ops
	if len(res.IllegalKeys) > 0 {
		ops = nil
		for _, o := range res.ops {
			if slices.Contains(res.IllegalKeys, opOf(o).Key) {
				ops = append(ops, o)
			}
		}
	}
	_, info := porcupine.CheckOperationsVerbose(res.model, ops, res.timeout)
	info.AddAnnotations(annotations(ops, notes))
	return porcupine.Visualize(res.model, info, w)
}

var tagColors = map[string][2]string{ // text, background
	TagFault:    {"#ffffff", "#c0392b"},
	TagCallback: {"", "#d6eaf8"},
	TagAccess:   {"", "#d5f5e3"},
	TagCancel:   {"", "#fdebd0"},
	TagRegion:   {"", "#e5e7e9"},
	TagShutdown: {"#ffffff", "#6c3483"},
	TagStore:    {"", "#fcf3cf"},
	TagLookup:   {"", "#ebdef0"},
}

func annotations(ops []porcupine.Operation, notes []Note) []porcupine.Annotation {
	keys, calls := map[string]bool{}, map[drivers.CallID]bool{}
	for _, o := range ops {
		op := opOf(o)
		keys[op.Key] = true
		calls[op.CallID] = true
	}
	var out []porcupine.Annotation
	for _, n := range notes {
		if !(keys[n.Key] || (n.Call != 0 && calls[n.Call]) || (n.Key == "" && n.Call == 0)) {
			continue
		}
		c := tagColors[n.Tag]
		desc := n.Text
		if n.Call != 0 {
			desc = fmt.Sprintf("call %d: %s", n.Call, n.Text)
		}
		out = append(out, porcupine.Annotation{
			Tag: n.Tag, Start: n.Seq, Description: desc,
			Details:   n.String(),
			TextColor: c[0], BackgroundColor: c[1],
		})
	}
	return out
}

package workload

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"
)

// Parse reads a log in the text form. Errors wrap ErrSyntax and name the
// line; a v2 log cut short anywhere is reported as truncated (ErrTruncated).
// A log over the limits (CheckLimits) is refused before anything is built.
func Parse(text string) (*Log, error) {
	p := parser{log: &Log{Store: "durable"}, endpoints: map[string]int{}}
	lines := strings.Split(text, "\n")
	first, v1 := -1, false
header:
	for i, raw := range lines {
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		p.line = i + 1
		switch {
		case line == Header:
		case line == HeaderV1:
			v1 = true
		case i == len(lines)-1 && (strings.HasPrefix(Header, line) || strings.HasPrefix(HeaderV1, line)):
			return nil, p.truncf("the file ends inside its header line %q", line)
		default:
			return nil, p.errf("first line must be %q, got %q", Header, line)
		}
		first = i
		break header
	}
	if first < 0 {
		return nil, fmt.Errorf("%w: %w: empty input, or only comments (want %q on the first line)", ErrSyntax, ErrTruncated, Header)
	}
	body := lines[first+1:]
	if !v1 {
		var err error
		if body, err = p.checkEnd(lines, first); err != nil {
			return nil, err
		}
	}
	for i, raw := range body {
		line := strings.TrimSpace(raw)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		p.line = first + i + 2
		if line == End && v1 {
			return nil, p.errf("%q in a %s log (only v2 logs end with it)", End, HeaderV1)
		}
		if err := p.parseLine(line); err != nil {
			return nil, err
		}
	}
	if len(p.log.Endpoints) == 0 {
		return nil, fmt.Errorf("%w: no endpoint line", ErrSyntax)
	}
	if err := CheckLimits(p.log); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrSyntax, err)
	}
	return p.log, nil
}

// ErrTruncated is wrapped by the error of a log that was cut short: no
// final newline, no end line, a header cut mid-line, or nothing at all.
var ErrTruncated = errors.New("truncated")

// checkEnd finds the end line of a v2 log whose header is lines[first]: the
// text must end with a newline, and the last line that is not blank or a
// comment must be "end". It returns the lines between header and end.
func (p *parser) checkEnd(lines []string, first int) ([]string, error) {
	last := len(lines) - 1
	if lines[last] != "" {
		p.line = last + 1
		return nil, p.truncf("the file ends mid-line, without its final newline (a v2 op log ends with the line %q)", End)
	}
	for i := last - 1; i > first; i-- {
		line := strings.TrimSpace(lines[i])
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		if line != End {
			p.line = i + 1
			return nil, p.truncf("no %q line after the last line %q: the log was cut short", End, line)
		}
		return lines[first+1 : i], nil
	}
	p.line = first + 1
	return nil, p.truncf("nothing after the header, not even the %q line", End)
}

type parser struct {
	log       *Log
	line      int
	endpoints map[string]int
	budget    Budget
	// schedLines counts sched lines; policySet: a sched random|pct line.
	schedLines int
	policySet  bool
}

func (p *parser) errf(format string, args ...any) error {
	return fmt.Errorf("%w line %d: %s", ErrSyntax, p.line, fmt.Sprintf(format, args...))
}

func (p *parser) truncf(format string, args ...any) error {
	return fmt.Errorf("%w line %d: %w: %s", ErrSyntax, p.line, ErrTruncated, fmt.Sprintf(format, args...))
}

func (p *parser) parseLine(line string) error {
	verb, rest, _ := strings.Cut(line, " ")
	switch verb {
	case "seed":
		v, err := strconv.ParseUint(rest, 10, 64)
		if err != nil {
			return p.errf("bad seed %q", rest)
		}
		p.log.Seed = v
	case "store":
		if rest != "durable" && rest != "evicting" {
			return p.errf("store must be durable or evicting, got %q", rest)
		}
		p.log.Store = rest
	case "endpoint":
		return p.parseEndpoint(rest)
	case "fault":
		name, f, ok := strings.Cut(rest, " ")
		idx, known := p.endpoints[name]
		if !ok || !known {
			return p.errf("fault line must name a declared endpoint and a fault, got %q", rest)
		}
		p.log.Endpoints[idx].Faults = append(p.log.Endpoints[idx].Faults, strings.TrimSpace(f))
	case "op":
		if len(p.log.Ops) >= MaxOps {
			return p.errf("more than %d ops (the limit of ops per log, see docs/FORMATS.md)", MaxOps)
		}
		return p.parseOp(rest)
	case "sched":
		return p.parseSched(rest)
	case End:
		return p.errf("%q before the last line (only comments may follow it)", End)
	default:
		return p.errf("unknown line kind %q (want seed, store, endpoint, fault, op, sched or end)", verb)
	}
	return nil
}

func (p *parser) parseEndpoint(rest string) error {
	fields := strings.Fields(rest)
	if len(fields) == 0 {
		return p.errf("endpoint without a name")
	}
	e := Endpoint{Name: fields[0], Driver: "memory", MaxRows: 4, AbsentIsMiss: true, InFlight: 4, Queued: 16, Unprovable: 8}
	if _, dup := p.endpoints[e.Name]; dup {
		return p.errf("endpoint %q declared twice", e.Name)
	}
	for _, f := range fields[1:] {
		k, v, ok := strings.Cut(f, "=")
		if !ok {
			return p.errf("endpoint %s: want key=value, got %q", e.Name, f)
		}
		var err error
		switch k {
		case "driver":
			e.Driver = v
		case "rows":
			e.MaxRows, err = setting(v, 1)
		case "absent-is-miss":
			e.AbsentIsMiss, err = strconv.ParseBool(v)
		case "inflight":
			e.InFlight, err = setting(v, 0)
		case "dirs":
			switch v {
			case "fetch", "publish":
				e.Dirs = v
			case "both":
				e.Dirs = ""
			default:
				err = errors.New("want fetch, publish or both")
			}
		case "queued":
			e.Queued, err = setting(v, 0)
		case "unprovable":
			e.Unprovable, err = setting(v, 0)
		case "regions":
			e.Regions, err = parseRegions(v)
		default:
			return p.errf("endpoint %s: unknown setting %q", e.Name, k)
		}
		if err != nil {
			return p.errf("endpoint %s: %s=%q: %v", e.Name, k, v, err)
		}
	}
	if len(e.Regions) == 0 {
		return p.errf("endpoint %s: no regions=", e.Name)
	}
	if len(p.log.Endpoints) >= MaxEndpoints {
		return p.errf("endpoint %s: more than %d endpoints (the limit per log, see %s)", e.Name, MaxEndpoints, LimitsDoc)
	}
	if len(e.Regions) > MaxRegions {
		return p.errf("endpoint %s: %d regions; at most %d per endpoint (%s)", e.Name, len(e.Regions), MaxRegions, LimitsDoc)
	}
	for _, r := range e.Regions {
		what := fmt.Sprintf("%s:%dx%d", r.Label, r.Slots, r.SlotBytes)
		if err := CheckRegion(what, r.Slots, r.SlotBytes); err != nil {
			return p.errf("endpoint %s: %v", e.Name, err)
		}
		if err := p.budget.Add(what, r.Slots, r.SlotBytes); err != nil {
			return p.errf("endpoint %s: %v", e.Name, err)
		}
	}
	p.endpoints[e.Name] = len(p.log.Endpoints)
	p.log.Endpoints = append(p.log.Endpoints, e)
	return nil
}

func parseRegions(v string) ([]RegionSpec, error) {
	var out []RegionSpec
	for _, r := range strings.Split(v, ",") {
		label, shape, ok := strings.Cut(r, ":")
		slots, bytes, ok2 := strings.Cut(shape, "x")
		if !ok || !ok2 || label == "" {
			return nil, fmt.Errorf("region %q: want label:SLOTSxBYTES", r)
		}
		s, err1 := positive(slots)
		b, err2 := positive(bytes)
		if err := errors.Join(err1, err2); err != nil {
			return nil, fmt.Errorf("region %q: %v", r, err)
		}
		out = append(out, RegionSpec{Label: label, Slots: s, SlotBytes: b})
	}
	return out, nil
}

func (p *parser) parseOp(rest string) error {
	fields := strings.Fields(rest)
	if len(fields) < 2 || !strings.HasPrefix(fields[0], "at=") || !strings.HasSuffix(fields[0], "us") {
		return p.errf("op must start with at=<N>us and a kind, got %q", rest)
	}
	us, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(fields[0], "at="), "us"), 10, 64)
	if err != nil || us < 0 || us > maxMicros {
		return p.errf("bad op time %q (want 0..%dus)", fields[0], maxMicros)
	}
	op := Op{At: time.Duration(us) * time.Microsecond}
	if n := len(p.log.Ops); n > 0 && op.At < p.log.Ops[n-1].At {
		return p.errf("op time %v goes back before the previous op's %v", op.At, p.log.Ops[n-1].At)
	}
	args := fields[2:]
	switch fields[1] {
	case "publish", "fetch":
		op.Kind = Publish
		if fields[1] == "fetch" {
			op.Kind = Fetch
		}
		if err := p.parseRowsOp(&op, args); err != nil {
			return err
		}
	case "cancel":
		op.Kind = Cancel
		if len(args) != 1 {
			return p.errf("cancel takes one op number")
		}
		t, err := strconv.Atoi(args[0])
		if err != nil || t < 0 || t >= len(p.log.Ops) {
			return p.errf("cancel target %q is not an earlier op number", args[0])
		}
		op.Target = t
	case "shutdown":
		op.Kind = Shutdown
		if len(args) != 1 {
			return p.errf("shutdown takes one endpoint")
		}
		if _, ok := p.endpoints[args[0]]; !ok {
			return p.errf("shutdown of undeclared endpoint %q", args[0])
		}
		op.Endpoint = args[0]
	case "quiesce":
		op.Kind = Quiesce
		if len(args) != 2 {
			return p.errf("quiesce takes an endpoint and op numbers (quiesce A 3,5)")
		}
		if _, ok := p.endpoints[args[0]]; !ok {
			return p.errf("quiesce of undeclared endpoint %q", args[0])
		}
		op.Endpoint = args[0]
		for _, f := range strings.Split(args[1], ",") {
			t, err := strconv.Atoi(f)
			if err != nil || t < 0 || t >= len(p.log.Ops) {
				return p.errf("quiesce target %q is not an earlier op number", f)
			}
			op.Targets = append(op.Targets, t)
		}
	case "probe":
		op.Kind = Probe
		if len(args) != 2 {
			return p.errf("probe takes an endpoint and a kind (probe A stale-close; kinds: %s)", probeNames())
		}
		if _, ok := p.endpoints[args[0]]; !ok {
			return p.errf("probe of undeclared endpoint %q", args[0])
		}
		k := ProbeKind(args[1])
		if !slices.Contains(ProbeKinds, k) {
			return p.errf("unknown probe kind %q (want one of %s)", args[1], probeNames())
		}
		op.Endpoint, op.Probe = args[0], k
	default:
		return p.errf("unknown op kind %q (want publish, fetch, cancel, quiesce, shutdown or probe)", fields[1])
	}
	p.log.Ops = append(p.log.Ops, op)
	return nil
}

func (p *parser) parseRowsOp(op *Op, args []string) error {
	if len(args) == 4 && strings.HasPrefix(args[3], "bad=") {
		bad := Bad(strings.TrimPrefix(args[3], "bad="))
		if !slices.Contains(Bads, bad) {
			return p.errf("unknown bad= %q (want one of %s)", bad, badNames())
		}
		op.Bad, args = bad, args[:3]
	}
	if len(args) != 3 || !strings.HasPrefix(args[1], "keys=") || !strings.HasPrefix(args[2], "mask=") {
		return p.errf("%s takes ENDPOINT keys=K1,K2 mask=10 [bad=KIND]", op.Kind)
	}
	if _, ok := p.endpoints[args[0]]; !ok {
		return p.errf("%s on undeclared endpoint %q", op.Kind, args[0])
	}
	op.Endpoint = args[0]
	op.Keys = strings.Split(strings.TrimPrefix(args[1], "keys="), ",")
	if len(op.Keys) > MaxKeysPerOp {
		return p.errf("%s names %d keys; at most %d per op (%s)", op.Kind, len(op.Keys), MaxKeysPerOp, LimitsDoc)
	}
	for _, k := range op.Keys {
		if k == "" {
			return p.errf("empty key in %q", args[1])
		}
	}
	mask := strings.TrimPrefix(args[2], "mask=")
	if len(mask) != len(op.Keys) {
		return p.errf("mask %q has %d bits for %d keys", mask, len(mask), len(op.Keys))
	}
	for _, c := range mask {
		if c != '0' && c != '1' {
			return p.errf("mask %q: bits must be 0 or 1", mask)
		}
		op.Mask = append(op.Mask, c == '1')
	}
	return nil
}

func positive(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n <= 0 {
		return 0, fmt.Errorf("want a positive integer")
	}
	return n, nil
}

// setting reads an endpoint setting: an integer from least to MaxSetting.
func setting(s string, least int) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil || n < least || n > MaxSetting {
		return 0, fmt.Errorf("want an integer from %d to %d (%s)", least, MaxSetting, LimitsDoc)
	}
	return n, nil
}

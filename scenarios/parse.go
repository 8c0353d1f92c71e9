package scenarios

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"
)

// ErrBadScenario is wrapped by every *Error: a scenario file that cannot be
// run as written (truncated block, unknown command, bad argument, a name
// that was never defined).
var ErrBadScenario = errors.New("bad scenario")

// Error is a malformed scenario file: the file, the 1-based line and what is
// wrong. The CLI prints it as one line and exits 2.
type Error struct {
	File string
	Line int
	Msg  string
}

func (e *Error) Error() string { return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg) }

// Unwrap makes errors.Is(err, ErrBadScenario) true.
func (e *Error) Unwrap() error { return ErrBadScenario }

// item is one piece of a scenario file: a line kept verbatim (comment or
// blank) or a command block.
type item struct {
	verbatim string
	block    *block
}

// block is one command, its "----" line and the expected output below it.
type block struct {
	line int // 1-based line of the command
	text string
	cmd  string
	pos  []string          // positional arguments, in order
	args map[string]string // key=value arguments
	want []string
}

// parse splits a scenario file into items and checks every command's name
// and argument syntax before anything runs, so a malformed file fails
// without running half of it.
func parse(file, text string) ([]item, error) {
	lines := strings.Split(strings.ReplaceAll(text, "\r\n", "\n"), "\n")
	if n := len(lines); n > 0 && lines[n-1] == "" {
		lines = lines[:n-1] // the file's final newline
	}
	var items []item
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		trimmed := strings.TrimSpace(line)
		switch {
		case trimmed == "" || strings.HasPrefix(trimmed, "#"):
			items = append(items, item{verbatim: line})
			continue
		case trimmed == "----":
			return nil, &Error{file, i + 1, "\"----\" without a command above it"}
		}
		b, err := parseCommand(file, i+1, trimmed)
		if err != nil {
			return nil, err
		}
		switch {
		case i+1 >= len(lines):
			return nil, &Error{file, i + 1, fmt.Sprintf("truncated block: command %q has no \"----\" line below it", b.cmd)}
		case strings.TrimSpace(lines[i+1]) != "----":
			return nil, &Error{file, i + 2, fmt.Sprintf("want \"----\" below command %q on line %d, found %q (one command per block)", b.cmd, i+1, lines[i+1])}
		}
		i += 2
		for ; i < len(lines) && strings.TrimSpace(lines[i]) != ""; i++ {
			if strings.TrimSpace(lines[i]) == "----" {
				return nil, &Error{file, i + 1, fmt.Sprintf("second \"----\" in the block of command %q on line %d (a blank line ends a block)", b.cmd, b.line)}
			}
			b.want = append(b.want, lines[i])
		}
		i-- // the blank line (or EOF) is kept verbatim
		items = append(items, item{block: b})
	}
	blocks := 0
	for _, it := range items {
		if it.block != nil {
			blocks++
		}
	}
	if blocks == 0 {
		// An empty file runs nothing and checks nothing: a pass it has not
		// earned (a file emptied by a bad merge or a failed copy).
		return nil, &Error{file, max(1, len(lines)), "no command block: the file is empty or holds only comments (a scenario starts with a block like \"store durable\" and its \"----\" line)"}
	}
	if text != "" && !strings.HasSuffix(text, "\n") {
		// Every scenario file ends with a newline (-rewrite writes one); a
		// file that stops mid-line was cut off, maybe inside an expected
		// block, where it would otherwise read as a mere mismatch.
		return nil, &Error{file, len(lines), "truncated: the file ends mid-line, without its final newline"}
	}
	return items, nil
}

func parseCommand(file string, line int, text string) (*block, error) {
	fields := strings.Fields(text)
	b := &block{line: line, text: text, cmd: fields[0], args: map[string]string{}}
	spec, ok := commands[b.cmd]
	if !ok {
		return nil, &Error{file, line, fmt.Sprintf("unknown command %q (known: %s)", b.cmd, strings.Join(commandNames(), " "))}
	}
	for _, f := range fields[1:] {
		k, v, isArg := strings.Cut(f, "=")
		if !isArg {
			b.pos = append(b.pos, f)
			continue
		}
		switch {
		case k == "":
			return nil, &Error{file, line, fmt.Sprintf("%s: bad argument %q: empty key", b.cmd, f)}
		case !spec.allows(k):
			return nil, &Error{file, line, fmt.Sprintf("%s: bad argument %q: unknown key %q (allowed: %s)", b.cmd, f, k, spec.keyList())}
		}
		if _, dup := b.args[k]; dup {
			return nil, &Error{file, line, fmt.Sprintf("%s: bad argument %q: key %q given twice", b.cmd, f, k)}
		}
		b.args[k] = v
	}
	if len(b.pos) < spec.minPos || (spec.maxPos >= 0 && len(b.pos) > spec.maxPos) {
		return nil, &Error{file, line, fmt.Sprintf("%s: %d positional arguments, want %s (usage: %s)", b.cmd, len(b.pos), spec.posRange(), spec.usage)}
	}
	return b, nil
}

// cmdSpec is the syntax of one command.
type cmdSpec struct {
	usage          string
	minPos, maxPos int // maxPos -1: any number
	keys           []string
	run            func(w *scenarioRun, b *block) error
}

func (s cmdSpec) allows(k string) bool {
	for _, x := range s.keys {
		if x == k {
			return true
		}
	}
	return false
}

func (s cmdSpec) keyList() string {
	if len(s.keys) == 0 {
		return "none"
	}
	return strings.Join(s.keys, " ")
}

func (s cmdSpec) posRange() string {
	switch {
	case s.maxPos < 0:
		return fmt.Sprintf("at least %d", s.minPos)
	case s.minPos == s.maxPos:
		return strconv.Itoa(s.minPos)
	}
	return fmt.Sprintf("%d to %d", s.minPos, s.maxPos)
}

func commandNames() []string {
	names := make([]string, 0, len(commands))
	for n := range commands {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// argument accessors: each failure is a bad-argument error naming the line.

func (w *scenarioRun) fail(b *block, format string, args ...any) error {
	return &Error{w.file, b.line, b.cmd + ": " + fmt.Sprintf(format, args...)}
}

func (w *scenarioRun) badArg(b *block, key, want string) error {
	return w.fail(b, "bad argument %s=%q: want %s", key, b.args[key], want)
}

func (w *scenarioRun) intArg(b *block, key string, def int) (int, error) {
	v, ok := b.args[key]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return 0, w.badArg(b, key, "a non-negative integer")
	}
	return n, nil
}

func (w *scenarioRun) boolArg(b *block, key string, def bool) (bool, error) {
	v, ok := b.args[key]
	if !ok {
		return def, nil
	}
	x, err := strconv.ParseBool(v)
	if err != nil {
		return false, w.badArg(b, key, "true or false")
	}
	return x, nil
}

func (w *scenarioRun) floatArg(b *block, key string, def float64) (float64, error) {
	v, ok := b.args[key]
	if !ok {
		return def, nil
	}
	x, err := strconv.ParseFloat(v, 64)
	if err != nil || x < 0 || x > 1 {
		return 0, w.badArg(b, key, "a number in [0, 1]")
	}
	return x, nil
}

func (w *scenarioRun) durArg(b *block, key string, def time.Duration) (time.Duration, error) {
	v, ok := b.args[key]
	if !ok {
		return def, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return 0, w.badArg(b, key, "a duration like 10us or 1ms")
	}
	return d, nil
}

// listArg splits a comma-separated value; an absent key is nil.
func listArg(b *block, key string) []string {
	v, ok := b.args[key]
	if !ok || v == "" {
		return nil
	}
	return strings.Split(v, ",")
}

// maskArg reads mask=1101 for n rows (absent: all ones).
func (w *scenarioRun) maskArg(b *block, n int) ([]bool, error) {
	v, ok := b.args["mask"]
	if !ok {
		m := make([]bool, n)
		for i := range m {
			m[i] = true
		}
		return m, nil
	}
	if len(v) != n {
		return nil, w.badArg(b, "mask", fmt.Sprintf("%d bits of 0 or 1, one per key", n))
	}
	m := make([]bool, n)
	for i, c := range v {
		switch c {
		case '1':
			m[i] = true
		case '0':
		default:
			return nil, w.badArg(b, "mask", fmt.Sprintf("%d bits of 0 or 1, one per key", n))
		}
	}
	return m, nil
}

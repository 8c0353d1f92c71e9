package main

import (
	"io"
	"os"
	"strings"
	"testing"
)

// captureStderr runs f with os.Stderr on a pipe and returns what it wrote.
func captureStderr(t *testing.T, f func()) string {
	t.Helper()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	saved := os.Stderr
	os.Stderr = w
	f()
	os.Stderr = saved
	w.Close()
	b, _ := io.ReadAll(r)
	return string(b)
}

// TestStatusOnlyOnTerminal: the zoo's hunts redraw a status line when
// stderr is a terminal (scripts/zoo.sh run by hand) and write nothing of
// the kind into a log.
func TestStatusOnlyOnTerminal(t *testing.T) {
	saved := stderrIsTerminal
	defer func() { stderrIsTerminal = saved }()
	stderrIsTerminal = false
	if got := captureStderr(t, func() { status("realhunt swarm: %s: hunt %d/%d", "x", 1, 5) }); got != "" {
		t.Fatalf("off a terminal, status wrote %q (repro: go test ./broken/zoo/realhunt -run TestStatusOnlyOnTerminal)", got)
	}
	stderrIsTerminal = true
	if got := captureStderr(t, func() { status("realhunt swarm: %s: hunt %d/%d", "x", 1, 5) }); !strings.HasPrefix(got, "\r\033[K") || !strings.Contains(got, "hunt 1/5") {
		t.Fatalf("on a terminal, status wrote %q, want the redrawn line (repro: go test ./broken/zoo/realhunt -run TestStatusOnlyOnTerminal)", got)
	}
}

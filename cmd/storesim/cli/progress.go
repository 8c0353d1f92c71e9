package cli

import (
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// Progress: every long command (run, certify, shrink, scenario) redraws one
// status line on stderr while it works — only when stderr is a terminal and
// --quiet was not given; off a terminal (a pipe, a file, CI) it prints
// nothing of the kind, so logs hold only results.

// quietFlag registers --quiet on a command.
func quietFlag(fs *flag.FlagSet) *bool {
	return fs.Bool("quiet", false, "no progress line on the terminal (it is drawn only when stderr is a terminal anyway)")
}

// liveLine is a status line redrawn in place, at most ten times a second.
// A nil *liveLine draws nothing. It is safe for concurrent use.
type liveLine struct {
	mu    sync.Mutex
	w     io.Writer
	last  time.Time
	shown bool
	width int
}

// newLiveLine is a live line on w, or nil when w is not a terminal or
// quiet is set.
func newLiveLine(w io.Writer, quiet bool) *liveLine {
	if quiet || !isTerminal(w) {
		return nil
	}
	return &liveLine{w: w}
}

// draw shows text, unless the line was drawn less than 100 ms ago (force
// draws anyway).
func (l *liveLine) draw(text string, force bool) {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shown && !force && time.Since(l.last) < 100*time.Millisecond {
		return
	}
	if len(text) > 150 {
		text = text[:147] + "…"
	}
	l.last, l.shown = time.Now(), true
	fmt.Fprintf(l.w, "\r\033[K%s", strings.ReplaceAll(text, "\n", " "))
}

// clear removes the line, so what is printed next starts clean.
func (l *liveLine) clear() {
	if l == nil {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shown {
		fmt.Fprint(l.w, "\r\033[K")
		l.shown = false
	}
}

// ticking redraws text() now and then every 250 ms until the returned stop
// is called (stop clears the line and waits for the ticker to end). For
// work that reports no progress of its own (certify): it says what runs and
// for how long. On a nil line it starts nothing.
func (l *liveLine) ticking(text func() string) (stop func()) {
	if l == nil {
		return func() {}
	}
	l.draw(text(), true)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				l.draw(text(), true)
			}
		}
	}()
	return func() {
		close(done)
		wg.Wait()
		l.clear()
	}
}

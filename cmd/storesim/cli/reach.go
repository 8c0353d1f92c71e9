package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/storesim/storesim/drivers/drivertest"
)

// A real store (redis:// or memcached://) that does not answer is "store
// unreachable: ADDR", exit 2, once — before any case (preflight, bounded
// by --wait) and when it stops answering mid-certification (drivertest's
// bail-out, through Harness.Ping) — never a table of rule failures.

// storePing dials addr and asks the store of url's scheme one question
// within ctx: PING for Redis, version for memcached. Any reply (+PONG,
// -NOAUTH, -LOADING, VERSION …, even ERROR) is an answer. The error starts
// with addr.
func storePing(ctx context.Context, url, addr string) error {
	if isBlob(url) {
		return blobPing(ctx, addr)
	}
	cmd := "PING"
	if strings.HasPrefix(url, memcachedScheme) {
		cmd = "version"
	}
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Err != nil {
			err = op.Err
		}
		return fmt.Errorf("%s (%v)", addr, err)
	}
	defer conn.Close()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	if _, err := io.WriteString(conn, cmd+"\r\n"); err != nil {
		return fmt.Errorf("%s (%v)", addr, err)
	}
	var buf [64]byte
	if _, err := conn.Read(buf[:]); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return fmt.Errorf("%s (connected, but no answer to %s in time)", addr, cmd)
		}
		return fmt.Errorf("%s (no answer to %s: %v)", addr, cmd, err)
	}
	return nil
}

// preflight is the bounded check before anything is built: a store that
// does not answer within wait (default 2s) is an unreachableError.
func preflight(url, addr string, wait time.Duration) error {
	if wait <= 0 {
		wait = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := storePing(ctx, url, addr); err != nil {
		return unreachableError{err.Error()}
	}
	return nil
}

// unreachableError prints as the one line of an unreachable store.
type unreachableError struct{ what string }

func (e unreachableError) Error() string { return "store unreachable: " + e.what }

// unreachable finds the gap of a store that stopped answering.
func unreachable(rep drivertest.Report) (string, bool) {
	for _, g := range rep.Gaps {
		if i := strings.Index(g, "store unreachable: "); i >= 0 {
			return g[i:], true
		}
	}
	return "", false
}

// certifyProgress is what certify's live line says: the rule group that
// runs ("rule group n of N", from drivertest.Options.Progress) and for how
// long the suite has run. It is safe for concurrent use.
type certifyProgress struct {
	mu       sync.Mutex
	driver   string
	start    time.Time
	n, total int
	rule     string
	line     *liveLine
}

func newCertifyProgress(line *liveLine, driver string) *certifyProgress {
	return &certifyProgress{line: line, driver: driver, start: time.Now()}
}

// group is drivertest.Options.Progress: group n of total begins; the line
// shows it at once.
func (p *certifyProgress) group(n, total int, rule string) {
	p.mu.Lock()
	p.n, p.total, p.rule = n, total, rule
	p.mu.Unlock()
	p.line.draw(p.text(), true)
}

// text is the line: before the first group, that the suite runs.
func (p *certifyProgress) text() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	took := time.Since(p.start).Round(time.Second)
	if p.n == 0 {
		return fmt.Sprintf("certify: %s: running the conformance suite… %v", p.driver, took)
	}
	return fmt.Sprintf("certify: %s: rule group %d of %d (%s)… %v", p.driver, p.n, p.total, p.rule, took)
}

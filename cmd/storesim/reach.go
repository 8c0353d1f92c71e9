package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/storesim/storesim/drivers/drivertest"
)

// A Redis server that does not answer is "store unreachable: ADDR", exit 2,
// once — before any case (preflight, bounded by --wait) and when it stops
// answering mid-certification (drivertest's bail-out, through
// Harness.Ping) — never a table of rule failures.

// redisPing dials addr and sends one PING within ctx; any reply (+PONG,
// -NOAUTH, -LOADING …) is an answer. The error starts with addr.
func redisPing(ctx context.Context, addr string) error {
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
	if _, err := io.WriteString(conn, "PING\r\n"); err != nil {
		return fmt.Errorf("%s (%v)", addr, err)
	}
	var buf [64]byte
	if _, err := conn.Read(buf[:]); err != nil {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return fmt.Errorf("%s (connected, but no answer to PING in time)", addr)
		}
		return fmt.Errorf("%s (no answer to PING: %v)", addr, err)
	}
	return nil
}

// preflight is the bounded check before anything is built: a store that
// does not answer is an unreachableError.
func preflight(addr string, wait time.Duration) error {
	if wait <= 0 {
		wait = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(context.Background(), wait)
	defer cancel()
	if err := redisPing(ctx, addr); err != nil {
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

// progressTo shows "rule group n of N" on one rewritten line of w when
// term is true; otherwise (a file, a pipe, a test) it shows nothing. done
// clears the line.
func progressTo(w io.Writer, term bool, driver string) (progress func(n, total int, rule string), done func()) {
	if !term {
		return nil, func() {}
	}
	shown := false
	return func(n, total int, rule string) {
			fmt.Fprintf(w, "\r\033[Kcertify %s: rule group %d of %d (%s)", driver, n, total, rule)
			shown = true
		}, func() {
			if shown {
				io.WriteString(w, "\r\033[K")
			}
		}
}

package memcachedriver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/bradfitz/gomemcache/memcache"
)

// The client speaks only the storage and retrieval commands; the
// administrative ones below (stats, lru_crawler metadump) go over a
// connection of their own, one command each.

// rawCommand sends cmd on a fresh connection and returns the lines of the
// answer up to (not including) the terminating "END". An "ERROR",
// "CLIENT_ERROR …", "SERVER_ERROR …" or "BUSY …" line is an error.
// ctx bounds the whole exchange; without a deadline, each read waits at
// most NetTimeout.
func (d *Driver) rawCommand(ctx context.Context, cmd string, maxLines int) ([]string, error) {
	dialer := net.Dialer{Timeout: d.cfg.NetTimeout}
	nc, err := dialer.DialContext(ctx, "tcp", d.cfg.Addr)
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	deadline := func() time.Time {
		if dl, ok := ctx.Deadline(); ok {
			return dl
		}
		return time.Now().Add(d.cfg.NetTimeout)
	}
	nc.SetDeadline(deadline())
	if _, err := fmt.Fprintf(nc, "%s\r\n", cmd); err != nil {
		return nil, err
	}
	r := bufio.NewReader(nc)
	var lines []string
	for range maxLines + 1 {
		nc.SetReadDeadline(deadline())
		line, err := r.ReadString('\n')
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cmd, err)
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "END":
			return lines, nil
		case line == "ERROR", strings.HasPrefix(line, "CLIENT_ERROR"), strings.HasPrefix(line, "SERVER_ERROR"), strings.HasPrefix(line, "BUSY"):
			return nil, fmt.Errorf("%s: server answered %q", cmd, line)
		}
		lines = append(lines, line)
	}
	return nil, fmt.Errorf("%s: more than %d lines in the answer", cmd, maxLines)
}

// Stats returns the server's general statistics (`stats`): name → value,
// e.g. "evictions", "curr_items", "limit_maxbytes".
func (d *Driver) Stats(ctx context.Context) (map[string]string, error) {
	lines, err := d.rawCommand(ctx, "stats", 1000)
	if err != nil {
		return nil, fmt.Errorf("memcachedriver: %w", err)
	}
	out := make(map[string]string, len(lines))
	for _, l := range lines {
		f := strings.SplitN(l, " ", 3)
		if len(f) != 3 || f[0] != "STAT" {
			return nil, fmt.Errorf("memcachedriver: stats: unexpected line %q", l)
		}
		out[f[1]] = f[2]
	}
	return out, nil
}

// Evictions is the server's `stats` evictions counter: how many items it
// has evicted (least recently used, to make room) since it started.
func (d *Driver) Evictions(ctx context.Context) (uint64, error) {
	st, err := d.Stats(ctx)
	if err != nil {
		return 0, err
	}
	n, err := strconv.ParseUint(st["evictions"], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("memcachedriver: stats: evictions %q: %w", st["evictions"], err)
	}
	return n, nil
}

// Flush deletes every item under the driver's prefix: the suite's "forget
// everything" hook. Memcached has no key scan; this lists the keys with
// `lru_crawler metadump all` (memcached 1.5+) and deletes the ones under the
// prefix. The crawler walks each LRU once and can miss an item the server
// moves between two of them meanwhile, so Flush lists again until a listing
// finds nothing under the prefix (at most flushPasses listings; more is an
// error). It refuses an empty prefix, which would wipe the whole server.
func (d *Driver) Flush(ctx context.Context) error {
	if d.cfg.Prefix == "" {
		return fmt.Errorf("%w: Flush needs a non-empty Prefix", ErrConfig)
	}
	for range flushPasses {
		keys, err := d.listPrefix(ctx)
		if err != nil {
			return fmt.Errorf("memcachedriver: flush: %w", err)
		}
		if len(keys) == 0 {
			return nil
		}
		for _, k := range keys {
			if err := ctx.Err(); err != nil {
				return fmt.Errorf("memcachedriver: flush: %w", err)
			}
			if err := d.client.Delete(k); err != nil && !errors.Is(err, memcache.ErrCacheMiss) {
				return fmt.Errorf("memcachedriver: flush: delete %q: %w", k, err)
			}
		}
	}
	return fmt.Errorf("memcachedriver: flush: keys under %q still listed after %d passes", d.cfg.Prefix, flushPasses)
}

const flushPasses = 5

// listPrefix lists the keys under the prefix (`lru_crawler metadump all`).
func (d *Driver) listPrefix(ctx context.Context) ([]string, error) {
	var lines []string
	var err error
	for range 50 { // the crawler serves one request at a time: BUSY means retry
		lines, err = d.rawCommand(ctx, "lru_crawler metadump all", 10_000_000)
		if err == nil || !strings.Contains(err.Error(), "BUSY") || ctx.Err() != nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		return nil, err
	}
	var keys []string
	for _, l := range lines {
		k, ok := strings.CutPrefix(strings.SplitN(l, " ", 2)[0], "key=")
		if !ok {
			continue
		}
		if k, err = url.PathUnescape(k); err == nil && strings.HasPrefix(k, d.cfg.Prefix) {
			keys = append(keys, k)
		}
	}
	return keys, nil
}

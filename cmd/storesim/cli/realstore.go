package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"gocloud.dev/blob"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/blobdriver"
	"github.com/storesim/storesim/drivers/drivertest"
	"github.com/storesim/storesim/drivers/memcachedriver"
	"github.com/storesim/storesim/drivers/procdriver"
	"github.com/storesim/storesim/drivers/procdriver/proctest"
	"github.com/storesim/storesim/drivers/redisdriver"
)

// memcachedScheme names a real memcached server: memcached://HOST:PORT.
const memcachedScheme = "memcached://"

// execScheme names a driver process: exec:COMMAND [ARGS…], a driver in any
// language speaking docs/PROTOCOL.md on its stdin/stdout (package
// procdriver).
const execScheme = "exec:"

// blobScheme names an object store bucket: blob:URL, any bucket URL
// gocloud.dev/blob opens (blob:file:///DIR, blob:s3://BUCKET?endpoint=…;
// package blobdriver).
const blobScheme = "blob:"

// isRealStore: the driver name is a real store's URL (redis://,
// memcached://, blob:) or a driver process (exec:), run in real time by run
// and certify and refused by the simulator's commands.
func isRealStore(name string) bool {
	return strings.HasPrefix(name, redisScheme) || strings.HasPrefix(name, memcachedScheme) || isBlob(name) || isExec(name)
}

func isExec(name string) bool { return strings.HasPrefix(name, execScheme) }

func isBlob(name string) bool { return strings.HasPrefix(name, blobScheme) }

// realDriver is a real store's driver with the hooks the CLI uses: Delete
// (certify's MakeAbsent) and Flush (forget a run's key prefix).
type realDriver interface {
	drivers.Driver
	Delete(ctx context.Context, key string) error
	Flush(ctx context.Context) error
}

// newRealDriver connects the driver of url's scheme to addr, storing every
// key under prefix, declaring caps (zero: the driver's defaults).
func newRealDriver(url, addr, prefix string, caps drivers.Capabilities) (realDriver, error) {
	if isExec(url) {
		return newExecDriver(addr, prefix, "", caps, nil)
	}
	if isBlob(url) {
		d, err := blobdriver.New(blobdriver.Config{URL: addr, Prefix: prefix, Caps: caps})
		if err != nil {
			return nil, err
		}
		return d, nil
	}
	if strings.HasPrefix(url, memcachedScheme) {
		d, err := memcachedriver.New(memcachedriver.Config{Addr: addr, Prefix: prefix, Caps: caps})
		if err != nil {
			return nil, err // not a typed nil in the interface
		}
		return d, nil
	}
	d, err := redisdriver.New(redisdriver.Config{Addr: addr, Prefix: prefix, Caps: caps})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// parseRealURL reads redis://HOST:PORT or memcached://HOST:PORT (the
// address), exec:COMMAND (the command line) or blob:URL (the bucket URL).
func parseRealURL(url string) (string, error) {
	if isBlob(url) {
		bucket := strings.TrimPrefix(url, blobScheme)
		opened, _, err := blobdriver.ParseURL(bucket)
		if err != nil {
			return "", usagef("--driver %q: want blob:file:///DIR or blob:s3://BUCKET?endpoint=…: %s", url,
				strings.TrimPrefix(err.Error(), blobdriver.ErrConfig.Error()+": "))
		}
		// Opening a bucket reads its URL's parameters (and, for a
		// directory, that it exists) without a network round trip: a
		// parameter gocloud does not know, a scheme no linked package
		// serves, a missing directory are usage errors here, not a store
		// that does not answer later.
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		b, err := blob.OpenBucket(ctx, opened)
		if err != nil {
			return "", usagef("--driver %q: %v", url, strings.ReplaceAll(err.Error(), "\n", " "))
		}
		b.Close()
		return bucket, nil
	}
	if isExec(url) {
		cmd := strings.TrimSpace(strings.TrimPrefix(url, execScheme))
		if _, err := procdriver.ParseCommand(cmd); err != nil {
			return "", usagef("--driver %q: want exec:COMMAND [ARGS…] (%v)", url, err)
		}
		return cmd, nil
	}
	scheme := redisScheme
	if strings.HasPrefix(url, memcachedScheme) {
		scheme = memcachedScheme
	}
	addr := strings.TrimPrefix(url, scheme)
	if addr == "" || strings.ContainsAny(addr, "/ ") || !strings.Contains(addr, ":") {
		return "", usagef("--driver %q: want %sHOST:PORT", url, scheme)
	}
	return addr, nil
}

// errRealOnly is the usage error of a real-time flag given with a simulated
// driver.
func errRealOnly(flags string) error {
	return usagef("%s apply to memcached:// and redis:// drivers only (and exec: driver processes, blob: buckets)", flags)
}

// newExecDriver starts the driver process of the command line cmd (see
// parseRealURL), handing it prefix, scratch (the directory the run's
// processes share) and caps; onIncident, when set, is told of the incident
// that ends it.
func newExecDriver(cmd, prefix, scratch string, caps drivers.Capabilities, onIncident func(procdriver.Incident)) (realDriver, error) {
	argv, err := procdriver.ParseCommand(cmd)
	if err != nil {
		return nil, err
	}
	d, err := procdriver.New(procdriver.Config{Command: argv, Prefix: prefix, Scratch: scratch, Caps: caps, OnIncident: onIncident, Name: cmd})
	if err != nil {
		return nil, err
	}
	return d, nil
}

// execHarness certifies a driver process: a fresh process per case run,
// MakeAbsent through it, an incident printed as it happens and added to
// the report (report) as a gap.
func execHarness(url string, evicting bool, stderr io.Writer) (drivertest.Harness, func(*drivertest.Report), error) {
	cmd, err := parseRealURL(url)
	if err != nil {
		return drivertest.Harness{}, nil, err
	}
	argv, _ := procdriver.ParseCommand(cmd)
	rig := proctest.New(procdriver.Config{Command: argv, Name: cmd, Prefix: fmt.Sprintf("storesim-certify/%d/", time.Now().UnixNano())})
	var mu sync.Mutex
	rig.OnIncident = func(in procdriver.Incident) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(stderr, "storesim certify: %s\n", in)
	}
	h := rig.Harness(url)
	h.Evicting = evicting
	return h, rig.Report, nil
}

// execIncidents collects the incidents of one real-time run's driver
// processes; its error (Cleanup's) names them, once each.
type execIncidents struct {
	mu  sync.Mutex
	all []procdriver.Incident
}

func (e *execIncidents) add(in procdriver.Incident) {
	e.mu.Lock()
	e.all = append(e.all, in)
	e.mu.Unlock()
}

func (e *execIncidents) err() error {
	e.mu.Lock()
	defer e.mu.Unlock()
	var errs []error
	for _, in := range e.all {
		errs = append(errs, in)
	}
	return errors.Join(errs...)
}

// shellQuote quotes a driver name for a repro line when it has a space
// (exec:python3 driver.py).
func shellQuote(s string) string {
	if !strings.ContainsAny(s, " \t'\"") {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'"'"'`) + "'"
}

// blobPing asks the bucket whether it answers within ctx (storePing for a
// blob: driver): the bucket opened and listed once (Bucket.IsAccessible),
// without the driver's IfNotExist probe. The error starts with the URL.
func blobPing(ctx context.Context, bucket string) error {
	opened, _, err := blobdriver.ParseURL(bucket)
	if err != nil {
		return fmt.Errorf("%s (%v)", bucket, err)
	}
	b, err := blob.OpenBucket(ctx, opened)
	if err != nil {
		return fmt.Errorf("%s (%v)", bucket, err)
	}
	defer b.Close()
	ok, err := b.IsAccessible(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("%s (%v)", bucket, err)
	case !ok:
		return fmt.Errorf("%s (no such bucket)", bucket)
	}
	return nil
}

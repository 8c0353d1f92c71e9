package main

import (
	"context"
	"strings"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/memcachedriver"
	"github.com/storesim/storesim/drivers/redisdriver"
)

// memcachedScheme names a real memcached server: memcached://HOST:PORT.
const memcachedScheme = "memcached://"

// isRealStore: the driver name is a real store's URL (redis:// or
// memcached://), run in real time by run and certify and refused by the
// simulator's commands.
func isRealStore(name string) bool {
	return strings.HasPrefix(name, redisScheme) || strings.HasPrefix(name, memcachedScheme)
}

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

// parseRealURL reads redis://HOST:PORT or memcached://HOST:PORT.
func parseRealURL(url string) (string, error) {
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
	return usagef("%s apply to memcached:// and redis:// drivers only", flags)
}

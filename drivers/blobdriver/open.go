package blobdriver

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"sync"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"

	"github.com/storesim/storesim/drivers"
)

// fileLocks holds one mutex per file bucket directory, for every Driver of
// the process (pubLock).
var fileLocks sync.Map // directory → *sync.Mutex

// probed remembers the bucket URLs whose store was seen honouring
// IfNotExist, so that a certification's hundreds of drivers probe once.
var probed sync.Map // URL → struct{}

// New checks cfg, opens the bucket and, unless this process already did
// for cfg.URL, probes that the store honours IfNotExist: it writes one
// object twice with IfNotExist under the prefix and deletes it. A second
// write that succeeds is ErrNoIfNotExist and no driver is returned (see
// the package doc, "First writer wins").
func New(cfg Config) (*Driver, error) {
	caps := cfg.Caps
	if caps == (drivers.Capabilities{}) {
		caps = DefaultCaps
	}
	if cfg.OpTimeout == 0 {
		cfg.OpTimeout = DefaultOpTimeout
	}
	if cfg.MaxObjectBytes == 0 {
		cfg.MaxObjectBytes = DefaultMaxObjectBytes
	}
	switch {
	case cfg.URL == "":
		return nil, fmt.Errorf("%w: URL is empty", ErrConfig)
	case cfg.Timeout < 0:
		return nil, fmt.Errorf("%w: Timeout %v < 0", ErrConfig, cfg.Timeout)
	case cfg.OpTimeout < 0:
		return nil, fmt.Errorf("%w: OpTimeout %v < 0", ErrConfig, cfg.OpTimeout)
	case cfg.MaxObjectBytes < 0:
		return nil, fmt.Errorf("%w: MaxObjectBytes %d < 0", ErrConfig, cfg.MaxObjectBytes)
	}
	if err := checkPrefix(cfg.Prefix); err != nil {
		return nil, err
	}
	if err := caps.Check(); err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	u, dir, err := ParseURL(cfg.URL)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), cfg.OpTimeout)
	defer cancel()
	bucket, err := blob.OpenBucket(ctx, u)
	if err != nil {
		return nil, fmt.Errorf("blobdriver: open %s: %w", cfg.URL, err)
	}
	d := &Driver{
		cfg: cfg, caps: caps, bucket: bucket,
		regions: map[drivers.Handle]drivers.Region{},
		calls:   map[drivers.CallID]*call{},
	}
	if dir != "" {
		d.dir = dir
		mu, _ := fileLocks.LoadOrStore(dir, new(sync.Mutex))
		d.pubLock = mu.(*sync.Mutex)
	}
	if caps.CanPublish {
		if _, ok := probed.Load(u); !ok {
			if err := d.probe(ctx); err != nil {
				d.closeBucket()
				return nil, err
			}
			probed.Store(u, struct{}{})
		}
	}
	return d, nil
}

// ParseURL checks a bucket URL and returns it as New opens it, with the
// directory of a file bucket ("" for other schemes). A file:// URL gets
// fileblob's no_tmp_dir and metadata=skip unless it sets them: the
// temporary file of a write then lives beside its object, so the rename
// that publishes it never crosses a file system (which would fail every
// write), and no sidecar file is written per object.
func ParseURL(raw string) (opened, dir string, err error) {
	u, err := url.Parse(raw)
	switch {
	case raw == "":
		return "", "", fmt.Errorf("%w: URL is empty (want file:///DIR or s3://BUCKET?…)", ErrConfig)
	case err != nil:
		return "", "", fmt.Errorf("%w: URL %q: %v", ErrConfig, raw, err)
	case u.Scheme == "":
		return "", "", fmt.Errorf("%w: URL %q has no scheme (want file:///DIR or s3://BUCKET?…)", ErrConfig, raw)
	case u.Opaque != "":
		return "", "", fmt.Errorf("%w: URL %q: want %s://…", ErrConfig, raw, u.Scheme)
	}
	if u.Scheme != "file" {
		if u.Host == "" {
			return "", "", fmt.Errorf("%w: URL %q names no bucket (want %s://BUCKET…)", ErrConfig, raw, u.Scheme)
		}
		return raw, "", nil
	}
	if u.Path == "" || u.Path == "/" {
		return "", "", fmt.Errorf("%w: URL %q names no directory (want file:///DIR)", ErrConfig, raw)
	}
	if u.Host != "" && u.Host != "." {
		return "", "", fmt.Errorf("%w: URL %q: a file URL has no host (want file:///DIR, three slashes)", ErrConfig, raw)
	}
	q := u.Query()
	if !q.Has("no_tmp_dir") {
		q.Set("no_tmp_dir", "true")
	}
	if !q.Has("metadata") {
		q.Set("metadata", "skip")
	}
	u.RawQuery = q.Encode()
	dir = filepath.Clean(u.Path)
	if u.Host == "." {
		if dir, err = filepath.Abs(strings.TrimPrefix(u.Path, "/")); err != nil {
			return "", "", fmt.Errorf("%w: URL %q: %v", ErrConfig, raw, err)
		}
	}
	return u.String(), dir, nil
}

// checkPrefix: see Config.Prefix.
func checkPrefix(p string) error {
	switch {
	case len(p) > maxPrefix:
		return fmt.Errorf("%w: Prefix is %d bytes, at most %d", ErrConfig, len(p), maxPrefix)
	case strings.HasPrefix(p, "/"):
		return fmt.Errorf("%w: Prefix %q starts with '/'", ErrConfig, p)
	}
	for i := 0; i < len(p); i++ {
		if c := p[i]; !safeByte(c) && c != '.' && c != '/' {
			return fmt.Errorf("%w: Prefix %q has byte %q (letters, digits, '-', '_', '.' and '/' only)", ErrConfig, p, c)
		}
	}
	for seg := range strings.SplitSeq(p, "/") {
		if seg == ".." || seg == "." {
			return fmt.Errorf("%w: Prefix %q has a %q segment", ErrConfig, p, seg)
		}
	}
	return nil
}

// probe writes one object twice with IfNotExist and deletes it: the second
// write must fail with FailedPrecondition.
func (d *Driver) probe(ctx context.Context) error {
	var b [8]byte
	rand.Read(b[:])
	// "%p" is never an escaped name (escapeName writes '%' only before two
	// hex digits, or in "%h…"), so the probe meets no row key.
	key := d.cfg.Prefix + "%probe-" + hex.EncodeToString(b[:])
	if st, err := d.put(ctx, key, []byte("first")); st != drivers.OK || err != nil {
		d.bucket.Delete(ctx, key)
		return fmt.Errorf("blobdriver: %s: probe for IfNotExist: the first write of %q failed: %w", d.cfg.URL, key, err)
	}
	_, err := d.put(ctx, key, []byte("second"))
	defer d.bucket.Delete(ctx, key)
	switch {
	case err == nil:
		return fmt.Errorf("%w: %s: %q was written twice", ErrNoIfNotExist, d.cfg.URL, key)
	case gcerrors.Code(err) != gcerrors.FailedPrecondition:
		return fmt.Errorf("blobdriver: %s: probe for IfNotExist: the second write of %q: %w", d.cfg.URL, key, err)
	}
	return nil
}

// put writes one object with IfNotExist (D-SUB-4). It answers OK when the
// object was written, and OK too when the store refused because the key
// is there (FailedPrecondition): the store holds the first writer's
// object, which is kept. Any other error is FAULT: the store may or may not
// have stored it. err is the store's error (nil for a written object).
func (d *Driver) put(ctx context.Context, key string, val []byte) (drivers.Status, error) {
	if d.pubLock != nil {
		d.pubLock.Lock()
		defer d.pubLock.Unlock()
	}
	ctx, cancel := context.WithTimeout(ctx, d.cfg.OpTimeout)
	defer cancel()
	err := d.bucket.WriteAll(ctx, key, val, &blob.WriterOptions{IfNotExist: true, ContentType: "application/octet-stream"})
	switch {
	case err == nil:
		return drivers.OK, nil
	case gcerrors.Code(err) == gcerrors.FailedPrecondition:
		return drivers.OK, err
	}
	return drivers.Fault, err
}

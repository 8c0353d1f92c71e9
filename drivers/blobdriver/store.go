package blobdriver

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"gocloud.dev/blob"
	"gocloud.dev/gcerrors"
)

// Bucket is the driver's open bucket (for tests and the broken drivers of
// package broken/blobbroken, which write behind the driver's back).
func (d *Driver) Bucket() *blob.Bucket { return d.bucket }

func (d *Driver) exists(ctx context.Context, key string) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.OpTimeout)
	defer cancel()
	_, err := d.bucket.Attributes(ctx, key)
	switch {
	case err == nil:
		return true, nil
	case d.absent(err):
		return false, nil
	}
	return false, err
}

// absent reports whether a store error means the object is not there: the
// store said NotFound and, for a file bucket, its directory still exists —
// a directory that was removed (or never mounted) makes every path ENOENT,
// which is an outage, not an answer (D-MISS-HONEST, D-LOOK-2). S3's HEAD
// answers 404 for a missing bucket as for a missing key, so there a deleted
// bucket reads as empty.
func (d *Driver) absent(err error) bool {
	if gcerrors.Code(err) != gcerrors.NotFound {
		return false
	}
	if d.dir != "" {
		fi, serr := os.Stat(d.dir)
		return serr == nil && fi.IsDir()
	}
	return true
}

// closeBucket closes the bucket once. (An S3 client's idle connections
// stay with its HTTP transport, which the SDK does not let us close; they
// end when the server closes them or after the transport's idle timeout.)
func (d *Driver) closeBucket() {
	d.mu.Lock()
	closed := d.bucketClosed
	d.bucketClosed = true
	d.mu.Unlock()
	if !closed {
		d.bucket.Close()
	}
}

// Delete makes key absent (deletes the object ObjectKey(key)): the
// conformance suite's "make this key absent" hook. An absent key is not an
// error.
func (d *Driver) Delete(ctx context.Context, key string) error {
	ctx, cancel := context.WithTimeout(ctx, d.cfg.OpTimeout)
	defer cancel()
	if err := d.bucket.Delete(ctx, d.ObjectKey(key)); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
		return fmt.Errorf("blobdriver: delete %q: %w", key, err)
	}
	return nil
}

// Flush deletes every object under the driver's prefix: the suite's
// "forget everything" hook. It refuses an empty prefix, which would empty
// the whole bucket.
func (d *Driver) Flush(ctx context.Context) error {
	if d.cfg.Prefix == "" {
		return fmt.Errorf("%w: Flush needs a non-empty Prefix", ErrConfig)
	}
	it := d.bucket.List(&blob.ListOptions{Prefix: d.cfg.Prefix})
	for {
		obj, err := it.Next(ctx)
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return fmt.Errorf("blobdriver: flush: list %q: %w", d.cfg.Prefix, err)
		}
		if err := d.bucket.Delete(ctx, obj.Key); err != nil && gcerrors.Code(err) != gcerrors.NotFound {
			return fmt.Errorf("blobdriver: flush: delete %q: %w", obj.Key, err)
		}
	}
}

// Ping asks the store whether the bucket answers (Bucket.IsAccessible: one
// listing of at most one object), within ctx. Its error starts with the
// bucket's URL.
func (d *Driver) Ping(ctx context.Context) error {
	ok, err := d.bucket.IsAccessible(ctx)
	switch {
	case err != nil:
		return fmt.Errorf("%s (%v)", d.cfg.URL, err)
	case !ok:
		return fmt.Errorf("%s (the bucket does not exist)", d.cfg.URL)
	}
	return nil
}

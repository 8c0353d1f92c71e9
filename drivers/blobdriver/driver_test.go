package blobdriver_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/storesim/storesim/drivers"
	"github.com/storesim/storesim/drivers/blobdriver"
	"github.com/storesim/storesim/drivers/blobdriver/blobtest"
)

// TestRoundTrip: on both stores, a PUBLISH stores each slot whole under its
// key, a second PUBLISH of the same keys keeps the first objects (D-SUB-4),
// Contains sees exactly the published keys, and a FETCH brings the first
// objects back and answers MISS, slot untouched, for an absent key.
func TestRoundTrip(t *testing.T) {
	stores(t, func(t *testing.T, st store) {
		d := newDriver(t, st.url, blobdriver.Config{})
		a, h := register(t, d, "pub", 4, 64)
		keys := []string{"a/b/../c", "k with space", strings.Repeat("long/", 60), "x.tmp"}
		for i := range keys {
			a.Fill(i, bytes.Repeat([]byte{byte('A' + i)}, 64))
		}
		c := run(t, d, drivers.Publish, rows(h, keys...)...)
		wantStatuses(t, "first PUBLISH", c.Results(), drivers.OK)
		if c.Access() != drivers.AccessEnded {
			t.Fatalf("first PUBLISH: access %v, want ENDED %s", c.Access(), repro(t))
		}
		b, hb := register(t, d, "second", 4, 64)
		for i := range keys {
			b.Fill(i, bytes.Repeat([]byte{'z'}, 64))
		}
		wantStatuses(t, "second PUBLISH of the same keys", run(t, d, drivers.Publish, rows(hb, keys...)...).Results(), drivers.OK)

		got, err := d.Contains(context.Background(), append(keys[:3:3], "never"))
		if err != nil || fmt.Sprint(got) != "[true true true false]" {
			t.Fatalf("Contains: %v, %v; want [true true true false] %s", got, err, repro(t))
		}
		r, hr := register(t, d, "fetch", 5, 64)
		c = run(t, d, drivers.Fetch, rows(hr, append(keys[:4:4], "never")...)...)
		wantStatuses(t, "FETCH", c.Results(), drivers.OK, drivers.OK, drivers.OK, drivers.OK, drivers.Miss)
		for i := range keys {
			if want := bytes.Repeat([]byte{byte('A' + i)}, 64); !bytes.Equal(r.Peek(i), want) {
				t.Fatalf("FETCH %q: slot %q, want the first object %q %s", keys[i], r.Peek(i), want, repro(t))
			}
		}
		for _, tc := range r.Touches() {
			if tc.By.Row == 4 {
				t.Fatalf("FETCH MISS row touched its slot: %+v %s", tc, repro(t))
			}
		}
		if st.s3 != nil {
			if puts, cond := st.s3.Puts(); puts == 0 || cond != puts {
				t.Fatalf("S3 server saw %d PutObject requests, %d with If-None-Match: want every one conditional %s", puts, cond, repro(t))
			}
		}
	})
}

// TestObjectKeys: a key is one flat object under the prefix whatever its
// bytes; distinct keys never share an object.
func TestObjectKeys(t *testing.T) {
	d := newDriver(t, "file://"+t.TempDir(), blobdriver.Config{Prefix: "p/"})
	seen := map[string]string{}
	for _, k := range []string{"", "a", "A", "a/b", "a%2Fb", "..", "../x", "a.attrs", "%h00", strings.Repeat("x", 300), strings.Repeat("x", 301), "\x00\xff"} {
		o := d.ObjectKey(k)
		name := strings.TrimPrefix(o, "p/")
		if strings.ContainsAny(name, "/.") || len(name) > 200 || name == "" {
			t.Fatalf("ObjectKey(%q) = %q: want one flat name of at most 200 bytes without '/' or '.' %s", k, o, repro(t))
		}
		if prev, dup := seen[o]; dup {
			t.Fatalf("keys %q and %q share object %q %s", prev, k, o, repro(t))
		}
		seen[o] = k
	}
}

// TestBadConfig: every bad Config is one ErrConfig error naming what is
// wrong; nothing is opened.
func TestBadConfig(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		cfg  blobdriver.Config
		want string
	}{
		{blobdriver.Config{}, "URL is empty"},
		{blobdriver.Config{URL: "nodir"}, "no scheme"},
		{blobdriver.Config{URL: "file://"}, "names no directory"},
		{blobdriver.Config{URL: "file://host/dir"}, "has no host"},
		{blobdriver.Config{URL: "s3://?endpoint=x"}, "names no bucket"},
		{blobdriver.Config{URL: "file:relative/dir"}, "want file://"},
		{blobdriver.Config{URL: "file://" + dir, Prefix: "/abs"}, "starts with '/'"},
		{blobdriver.Config{URL: "file://" + dir, Prefix: "a/../b"}, `".." segment`},
		{blobdriver.Config{URL: "file://" + dir, Prefix: "a b"}, "has byte"},
		{blobdriver.Config{URL: "file://" + dir, Timeout: -1}, "Timeout"},
	} {
		_, err := blobdriver.New(tc.cfg)
		if !errors.Is(err, blobdriver.ErrConfig) || !strings.Contains(err.Error(), tc.want) {
			t.Fatalf("New(%+v): %v; want ErrConfig with %q %s", tc.cfg, err, tc.want, repro(t))
		}
	}
	// A store that is not there: an error, not a driver.
	if _, err := blobdriver.New(blobdriver.Config{URL: "file://" + filepath.Join(dir, "missing")}); err == nil {
		t.Fatalf("New on a missing directory: no error %s", repro(t))
	}
}

// TestRefusesStoreWithoutIfNotExist: an S3-compatible store that ignores
// If-None-Match (the header stripped before gofakes3 sees it) makes New
// fail with ErrNoIfNotExist: the driver refuses to publish rather than
// overwrite. Declared fetch-only, it opens and fetches.
func TestRefusesStoreWithoutIfNotExist(t *testing.T) {
	s := startS3(t, blobtest.Options{StripConditions: true})
	_, err := blobdriver.New(blobdriver.Config{URL: s.URL(), Prefix: "p/"})
	if !errors.Is(err, blobdriver.ErrNoIfNotExist) {
		t.Fatalf("New on a store that ignores If-None-Match: %v; want ErrNoIfNotExist %s", err, repro(t))
	}
	caps := blobdriver.DefaultCaps
	caps.CanPublish = false
	d := newDriver(t, s.URL(), blobdriver.Config{Prefix: "p/", Caps: caps})
	if err := d.Bucket().WriteAll(context.Background(), d.ObjectKey("k"), bytes.Repeat([]byte{7}, 32), nil); err != nil {
		t.Fatalf("write behind the driver: %v %s", err, repro(t))
	}
	_, h := register(t, d, "r", 1, 32)
	wantStatuses(t, "FETCH on the fetch-only driver", run(t, d, drivers.Fetch, rows(h, "k")...).Results(), drivers.OK)
	if _, err := d.Submit(drivers.RowBatch{Dir: drivers.Publish, Rows: rows(h, "k")}, nil); !errors.Is(err, drivers.ErrInvalidSubmission) {
		t.Fatalf("PUBLISH on the fetch-only driver: %v; want InvalidSubmission %s", err, repro(t))
	}
}

// TestConcurrentPublishFirstWins: many concurrent PUBLISHes of one key,
// each from its own driver with its own bytes, all answer OK and the store
// keeps exactly one of them, the same one every reader sees (D-SUB-4).
// On a file bucket this holds only because the driver serialises the
// process's conditional writes per directory: fileblob's own IfNotExist is
// a stat then a rename.
func TestConcurrentPublishFirstWins(t *testing.T) {
	stores(t, func(t *testing.T, st store) {
		const n = 16
		prefix := fmt.Sprintf("race/%d/", prefixSeq.Add(1))
		// A reader polls the object while the writers race: every object it
		// sees must be the same one (a second would be an overwrite).
		reader := newDriver(t, st.url, blobdriver.Config{Prefix: prefix})
		stopRead := make(chan struct{})
		var stopOnce sync.Once
		stop := func() { stopOnce.Do(func() { close(stopRead) }) }
		t.Cleanup(stop) // a failing test stops the reader too
		seen := make(chan map[string]bool, 1)
		go func() {
			got := map[string]bool{}
			for {
				select {
				case <-stopRead:
					seen <- got
					return
				default:
				}
				if b, err := reader.Bucket().ReadAll(context.Background(), reader.ObjectKey("k")); err == nil {
					got[string(b)] = true
				}
			}
		}()
		calls := make([]drivers.Call, n)
		wakes := make([]chan struct{}, n)
		for i := range n {
			d := newDriver(t, st.url, blobdriver.Config{Prefix: prefix})
			a, h := register(t, d, "w", 1, 128)
			a.Fill(0, bytes.Repeat([]byte{byte(i + 1)}, 128))
			calls[i], wakes[i] = submit(t, d, drivers.Publish, rows(h, "k")...)
		}
		for i, c := range calls {
			await(t, c, wakes[i])
			wantStatuses(t, fmt.Sprintf("writer %d", i), c.Results(), drivers.OK)
		}
		stop()
		if objs := <-seen; len(objs) > 1 {
			t.Fatalf("D-SUB-4: a reader saw %d different objects under one key while %d first-writer-wins PUBLISHes raced %s", len(objs), n, repro(t))
		}
		d := newDriver(t, st.url, blobdriver.Config{Prefix: prefix})
		got, err := d.Bucket().ReadAll(context.Background(), d.ObjectKey("k"))
		if err != nil || len(got) != 128 || !bytes.Equal(got, bytes.Repeat(got[:1], 128)) {
			t.Fatalf("stored object: %d bytes %v, %v: want one writer's 128 bytes whole %s", len(got), got[:min(4, len(got))], err, repro(t))
		}
	})
}

// TestLookupErrorIsNotAbsent: a lookup the store cannot answer is an error
// wrapping ErrLookupFailed, never "absent" (D-LOOK-2), and a FETCH is
// FAULT, never MISS (D-MISS-HONEST): the prefix's directory replaced by a
// file (every path below it is ENOTDIR), or the bucket's directory removed
// (every path is ENOENT, which fileblob calls NotFound — but the store did
// not answer, it is gone).
func TestLookupErrorIsNotAbsent(t *testing.T) {
	for _, tc := range []struct {
		name    string
		breakIt func(t *testing.T, bucket string)
	}{
		{"prefix-dir-is-a-file", func(t *testing.T, bucket string) { breakDir(t, filepath.Join(bucket, "p")) }},
		{"bucket-dir-removed", func(t *testing.T, bucket string) {
			if err := os.RemoveAll(bucket); err != nil {
				t.Fatalf("remove: %v %s", err, repro(t))
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bucket := filepath.Join(t.TempDir(), "bucket")
			os.Mkdir(bucket, 0o755)
			d := newDriver(t, "file://"+bucket, blobdriver.Config{Prefix: "p/"})
			tc.breakIt(t, bucket)
			if got, err := d.Contains(context.Background(), []string{"k"}); !errors.Is(err, drivers.ErrLookupFailed) {
				t.Fatalf("Contains: %v, %v; want ErrLookupFailed %s", got, err, repro(t))
			}
			_, h := register(t, d, "r", 2, 32)
			wantStatuses(t, "FETCH", run(t, d, drivers.Fetch, rows(h, "k", "l")...).Results(), drivers.Fault, drivers.NotAttempted)
		})
	}
}

// breakDir replaces directory p with a regular file, so that every create,
// stat and open below it fails (ENOTDIR) — for root too, who ignores
// permission bits.
func breakDir(t testing.TB, p string) {
	t.Helper()
	if err := os.RemoveAll(p); err != nil {
		t.Fatalf("remove %s: %v %s", p, err, repro(t))
	}
	if err := os.WriteFile(p, []byte("not a directory\n"), 0o644); err != nil {
		t.Fatalf("write %s: %v %s", p, err, repro(t))
	}
}

// TestReadOnlyBucketDirectory (issue 16, item 4): the bucket's directory
// made unwritable while the driver runs. Every PUBLISH row it could not
// write is FAULT (the first; the rest NOT_ATTEMPTED), never OK, and
// nothing appears in the store; objects stored before stay readable (mode
// 0555) or are FAULT, never MISS (directory replaced by a file). Root
// ignores mode bits, so the chmod variant skips as root (saying so) and the
// replaced-directory variant runs for everyone.
func TestReadOnlyBucketDirectory(t *testing.T) {
	for _, tc := range []struct {
		name    string
		breakIt func(t *testing.T, dir string)
		fetch   drivers.Status // a FETCH of an object stored before
	}{
		{"chmod-0555", func(t *testing.T, dir string) {
			if os.Geteuid() == 0 {
				t.Skip("running as root, who ignores mode 0555; the replaced-directory variant covers root")
			}
			if err := os.Chmod(dir, 0o555); err != nil {
				t.Fatalf("chmod: %v %s", err, repro(t))
			}
			t.Cleanup(func() { os.Chmod(dir, 0o755) })
		}, drivers.OK},
		{"replaced-by-file", func(t *testing.T, dir string) { breakDir(t, dir) }, drivers.Fault},
	} {
		t.Run(tc.name, func(t *testing.T) {
			bucket := filepath.Join(t.TempDir(), "bucket")
			if err := os.Mkdir(bucket, 0o755); err != nil {
				t.Fatalf("mkdir: %v %s", err, repro(t))
			}
			// A prefix without '/': the objects are files of the bucket's
			// directory itself.
			d := newDriver(t, "file://"+bucket, blobdriver.Config{Prefix: "ro-"})
			a, h := register(t, d, "pub", 4, 64)
			for i := range 4 {
				a.Fill(i, bytes.Repeat([]byte{byte('a' + i)}, 64))
			}
			wantStatuses(t, "PUBLISH before", run(t, d, drivers.Publish, rows(h, "before")...).Results(), drivers.OK)
			tc.breakIt(t, bucket)

			c := run(t, d, drivers.Publish, drivers.Row{Key: "k1", Handle: h, Slot: 1}, drivers.Row{Key: "k2", Handle: h, Slot: 2, Position: 1})
			wantStatuses(t, "PUBLISH into the unwritable directory", c.Results(), drivers.Fault, drivers.NotAttempted)
			if c.Access() != drivers.AccessEnded {
				t.Fatalf("PUBLISH: access %v; want ENDED (the slots were copied before the write) %s", c.Access(), repro(t))
			}
			r, hr := register(t, d, "fetch", 2, 64)
			c = run(t, d, drivers.Fetch, rows(hr, "before")...)
			wantStatuses(t, "FETCH of an object stored before", c.Results(), tc.fetch)
			if tc.fetch == drivers.OK && !bytes.Equal(r.Peek(0), bytes.Repeat([]byte{'a'}, 64)) {
				t.Fatalf("FETCH: slot %q %s", r.Peek(0), repro(t))
			}
			if tc.fetch == drivers.OK {
				got, err := d.Contains(context.Background(), []string{"k1", "k2"})
				if err != nil || fmt.Sprint(got) != "[false false]" {
					t.Fatalf("after the FAULT: Contains %v, %v; want nothing stored [false false] %s", got, err, repro(t))
				}
			}
		})
	}
}

// TestTimeoutIsUnprovable: a FETCH whose deadline passes while its worker
// is inside a slot write reports its rows FAULT and access UNPROVABLE at
// once, never ENDED; when the worker returns, access becomes ENDED.
func TestTimeoutIsUnprovable(t *testing.T) {
	stores(t, func(t *testing.T, st store) {
		// The deadline must pass while the worker waits at the gate, not
		// before it reads: long enough for one read on a loaded machine.
		d := newDriver(t, st.url, blobdriver.Config{Timeout: 500 * time.Millisecond})
		if err := d.Bucket().WriteAll(context.Background(), d.ObjectKey("k"), bytes.Repeat([]byte{1}, 32), nil); err != nil {
			t.Fatalf("write: %v %s", err, repro(t))
		}
		gate := &gateMem{Bytes: make(drivers.Bytes, 32), entered: make(chan struct{}, 1), release: make(chan struct{})}
		var once sync.Once
		release := func() { once.Do(func() { close(gate.release) }) }
		t.Cleanup(release) // before the driver's Shutdown: cleanups run last first
		h, err := d.Register(drivers.Region{Label: "gate", SlotBytes: 32, Slots: 1, Mem: gate})
		if err != nil {
			t.Fatalf("register: %v %s", err, repro(t))
		}
		ch := make(chan struct{}, 8)
		c, err := d.Submit(drivers.RowBatch{Dir: drivers.Fetch, Rows: rows(h, "k")}, func() { ch <- struct{}{} })
		if err != nil {
			t.Fatalf("submit: %v %s", err, repro(t))
		}
		deadline := time.After(10 * time.Second)
		select {
		case <-gate.entered:
		case <-deadline:
			t.Fatalf("the FETCH never reached its slot write: results %v access %v %s", c.Results(), c.Access(), repro(t))
		}
		for c.Access() != drivers.AccessUnprovable {
			select {
			case <-ch:
			case <-deadline:
				t.Fatalf("deadline passed mid-write: access %v; want UNPROVABLE %s", c.Access(), repro(t))
			}
		}
		wantStatuses(t, "after the deadline", c.Results(), drivers.Fault)
		release()
		for c.Access() != drivers.AccessEnded {
			select {
			case <-ch:
			case <-deadline:
				t.Fatalf("worker returned: access %v; want ENDED %s", c.Access(), repro(t))
			}
		}
	})
}

// gateMem holds a slot write at a gate.
type gateMem struct {
	drivers.Bytes
	entered chan struct{}
	release chan struct{}
}

func (g *gateMem) Write(by drivers.Toucher, off int, p []byte) error {
	g.entered <- struct{}{}
	<-g.release
	return g.Bytes.Write(by, off, p)
}

// TestFlush: Flush deletes exactly the prefix's objects and refuses an
// empty prefix.
func TestFlush(t *testing.T) {
	stores(t, func(t *testing.T, st store) {
		d := newDriver(t, st.url, blobdriver.Config{Prefix: fmt.Sprintf("flush/%d/a/", prefixSeq.Add(1))})
		other := newDriver(t, st.url, blobdriver.Config{})
		ctx := context.Background()
		for _, k := range []string{"x", "y"} {
			d.Bucket().WriteAll(ctx, d.ObjectKey(k), []byte("v"), nil)
		}
		other.Bucket().WriteAll(ctx, other.ObjectKey("x"), []byte("v"), nil)
		if err := d.Flush(ctx); err != nil {
			t.Fatalf("Flush: %v %s", err, repro(t))
		}
		if got, err := d.Contains(ctx, []string{"x", "y"}); err != nil || fmt.Sprint(got) != "[false false]" {
			t.Fatalf("after Flush: %v, %v %s", got, err, repro(t))
		}
		if got, err := other.Contains(ctx, []string{"x"}); err != nil || fmt.Sprint(got) != "[true]" {
			t.Fatalf("another prefix after Flush: %v, %v %s", got, err, repro(t))
		}
		root, err := blobdriver.New(blobdriver.Config{URL: st.url})
		if err != nil {
			t.Fatalf("New without a prefix: %v %s", err, repro(t))
		}
		defer root.Shutdown(ctx)
		if err := root.Flush(ctx); !errors.Is(err, blobdriver.ErrConfig) {
			t.Fatalf("Flush with an empty prefix: %v; want ErrConfig %s", err, repro(t))
		}
	})
}

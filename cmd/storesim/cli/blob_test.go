package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/storesim/storesim/drivers/blobdriver/blobtest"
)

// mainBlob runs Main, the entry point a binary calls, with args.
func mainBlob(args ...string) cli {
	var out, errb bytes.Buffer
	code := Main(args, Options{Stdout: &out, Stderr: &errb})
	return cli{code, out.String(), errb.String()}
}

// TestBlobURLs: a malformed blob: driver is one line naming what is wrong,
// exit 2, for run and certify alike — before anything runs.
func TestBlobURLs(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "a-file")
	os.WriteFile(file, []byte("x"), 0o644)
	for _, tc := range []struct {
		name, driver, want string
	}{
		{"empty", "blob:", "URL is empty"},
		{"no-scheme", "blob:nodir", `"nodir" has no scheme`},
		{"no-dir", "blob:file://", "names no directory"},
		{"file-host", "blob:file://host/dir", "a file URL has no host"},
		{"missing-dir", "blob:file://" + filepath.Join(dir, "missing"), "no such file or directory"},
		{"not-a-dir", "blob:file://" + file, "not a directory"},
		{"no-bucket", "blob:s3://?region=x", "names no bucket"},
		{"unknown-param", "blob:s3://b?region=x&bogus=1", `unknown query parameter "bogus"`},
		{"unknown-scheme", "blob:gs://bucket", `no driver registered for "gs"`},
		{"bad-url", "blob:%zz", "invalid URL escape"},
	} {
		for _, cmd := range []string{"run", "certify"} {
			t.Run(tc.name+"/"+cmd, func(t *testing.T) {
				args := []string{cmd, "--driver", tc.driver}
				if cmd == "run" {
					args = append(args, "--seeds", "0:1")
				}
				got := storesim(args...)
				if got.code != 2 || !strings.Contains(got.stderr, tc.want) || strings.Count(strings.TrimSpace(got.stderr), "\n") != 0 || got.stdout != "" {
					t.Fatalf("storesim %q: exit %d, stdout %q, stderr %q; want exit 2 and one line with %q %s", args, got.code, got.stdout, got.stderr, tc.want, repro(t))
				}
			})
		}
	}
	got := storesim("replay", "--seed", "1", "--driver", "blob:file://"+dir)
	if got.code != 2 || !strings.Contains(got.stderr, "cannot run in the simulator") {
		t.Fatalf("replay --driver blob:…: exit %d, stderr %q; want exit 2, a real store cannot run in the simulator %s", got.code, got.stderr, repro(t))
	}
}

// TestBlobCertify: `storesim certify --driver blob:file:///DIR --short`
// certifies a file bucket on a temporary directory through Main, `storesim
// run --driver blob:…` runs seeds against it in real time, and the same
// holds for the S3 protocol against gofakes3 on a loopback port
// (blob:s3://storesim?endpoint=http://127.0.0.1:PORT&…&anonymous=true).
// Both leave their buckets empty.
func TestBlobCertify(t *testing.T) {
	s3, err := blobtest.StartS3(blobtest.Options{})
	if err != nil {
		t.Fatalf("start S3: %v %s", err, repro(t))
	}
	defer s3.Close()
	dir := t.TempDir()
	for _, tc := range []struct{ name, driver string }{
		{"file", "blob:file://" + dir},
		{"s3", "blob:" + s3.URL("anonymous=true")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := mainBlob("certify", "--driver", tc.driver, "--short")
			if got.code != 0 || !strings.Contains(got.stdout, "certified: true") || !strings.Contains(got.stderr, tc.driver+" certified") {
				t.Fatalf("certify --driver %s --short: exit %d\nstdout:\n%s\nstderr:\n%s %s", tc.driver, got.code, got.stdout, got.stderr, repro(t))
			}
			t.Logf("%s", strings.TrimSpace(got.stderr))
			got = mainBlob("run", "--driver", tc.driver, "--seeds", "0:2")
			if got.code != 0 || !strings.Contains(got.stderr, "a seed replays the workload, not the interleaving") || !closing.MatchString(got.stderr) ||
				!strings.Contains(got.stderr, "seeds: 2 passed, 0 failed") {
				t.Fatalf("run --driver %s --seeds 0:2: exit %d\nstdout:\n%s\nstderr:\n%s %s", tc.driver, got.code, got.stdout, got.stderr, repro(t))
			}
		})
	}
	var left []string
	filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			left = append(left, p)
		}
		return nil
	})
	if len(left) > 0 {
		t.Fatalf("the file bucket kept %d objects after certify and run flushed their prefixes, e.g. %s %s", len(left), left[0], repro(t))
	}
}

// Package blobtest starts the stores the blob driver is certified against,
// for tests: an S3 server (github.com/johannesboyne/gofakes3, in-process,
// in memory) on a loopback port, spoken to over HTTP by the real S3 client
// that gocloud.dev/blob/s3blob uses.
//
// gofakes3 is used because it is the S3 server that runs inside a Go test
// with no binary to install, speaks the S3 REST protocol to the AWS SDK
// unchanged, and (from v1.2.0) decides PutObject's If-None-Match: * under
// its backend's lock, which is the conditional write the driver's first
// writer wins rests on. A test that needs the opposite — a store that
// ignores the condition — puts StripConditions in front of it.
package blobtest

import (
	"fmt"
	"net"
	"net/http"
	"net/url"
	"sync"
	"time"

	"github.com/johannesboyne/gofakes3"
	"github.com/johannesboyne/gofakes3/backend/s3mem"
)

// Bucket is the bucket every S3 server of this package holds.
const Bucket = "storesim"

// S3 is an S3 server on 127.0.0.1.
type S3 struct {
	// Addr is host:port.
	Addr string

	srv  *http.Server
	ln   net.Listener
	done chan struct{}

	mu    sync.Mutex
	puts  int // PutObject requests seen
	conds int // of those, with If-None-Match
}

// Options shape a server. Only keyed literals compile.
type Options struct {
	// StripConditions removes If-None-Match and If-Match from every request
	// before the server sees it: an S3-compatible store without conditional
	// writes, which overwrites whatever the condition said.
	StripConditions bool
	_               struct{}
}

// StartS3 starts an S3 server on a free loopback port, holding one empty
// bucket, Bucket. Close it when done.
func StartS3(opts Options) (*S3, error) {
	backend := s3mem.New()
	if err := backend.CreateBucket(Bucket); err != nil {
		return nil, fmt.Errorf("blobtest: create bucket: %w", err)
	}
	fake := gofakes3.New(backend, gofakes3.WithLogger(gofakes3.DiscardLog()))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("blobtest: listen: %w", err)
	}
	s := &S3{Addr: ln.Addr().String(), ln: ln, done: make(chan struct{})}
	inner := fake.Server()
	s.srv = &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Method == http.MethodPut && r.Header.Get("X-Amz-Copy-Source") == "" {
				s.mu.Lock()
				s.puts++
				if r.Header.Get("If-None-Match") != "" {
					s.conds++
				}
				s.mu.Unlock()
			}
			if opts.StripConditions {
				r.Header.Del("If-None-Match")
				r.Header.Del("If-Match")
			}
			inner.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() {
		defer close(s.done)
		s.srv.Serve(ln)
	}()
	return s, nil
}

// URL is the bucket's gocloud URL for the blob driver: the server as the
// S3 endpoint, path-style addressing, a region, checksums only where the
// protocol requires them (gofakes3 stores an aws-chunked body with
// trailing checksums as it is). extra is appended to the query
// ("anonymous=true" when no credentials are in the environment).
func (s *S3) URL(extra ...string) string {
	q := url.Values{}
	q.Set("endpoint", "http://"+s.Addr)
	q.Set("use_path_style", "true")
	q.Set("region", "us-east-1")
	q.Set("request_checksum_calculation", "when_required")
	q.Set("response_checksum_validation", "when_required")
	u := "s3://" + Bucket + "?" + q.Encode()
	for _, e := range extra {
		u += "&" + e
	}
	return u
}

// Puts reports how many PutObject requests the server saw, and how many
// of them carried If-None-Match.
func (s *S3) Puts() (puts, conditional int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.puts, s.conds
}

// Close stops the server and closes every connection at once, idle or
// not (a request still in flight fails), so no client goroutine waits on
// one of them.
func (s *S3) Close() error {
	err := s.srv.Close()
	<-s.done
	return err
}

// FakeCredentials are the environment variables that give the AWS SDK
// static credentials and keep it from looking anywhere else (shared config
// files, the EC2 metadata endpoint): set them (t.Setenv) before opening an
// s3:// bucket without anonymous=true.
var FakeCredentials = map[string]string{
	"AWS_ACCESS_KEY_ID":           "storesim-test",
	"AWS_SECRET_ACCESS_KEY":       "storesim-test-secret",
	"AWS_SESSION_TOKEN":           "",
	"AWS_PROFILE":                 "",
	"AWS_CONFIG_FILE":             "/nonexistent/storesim-aws-config",
	"AWS_SHARED_CREDENTIALS_FILE": "/nonexistent/storesim-aws-credentials",
	"AWS_EC2_METADATA_DISABLED":   "true",
}

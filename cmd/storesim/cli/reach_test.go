package cli

import (
	"bufio"
	"bytes"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// closedPort is a loopback port nothing listens on: one that was just
// listened on and closed.
func closedPort(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	return port
}

// stalledStore is a loopback listener that accepts every connection and
// never answers (a hung server); it is closed when the test ends.
func stalledStore(t *testing.T) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var conns []net.Conn
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never read or written
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		wg.Wait()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
	})
	return l.Addr().(*net.TCPAddr).Port
}

// wantUnreachable: exit 2, nothing on stdout, and one line on stderr that
// says the store at addr is unreachable.
func wantUnreachable(t *testing.T, got cli, addr string) {
	t.Helper()
	line := strings.TrimSpace(got.stderr)
	if got.code != exitUsage || got.stdout != "" || strings.Contains(line, "\n") ||
		!strings.HasPrefix(line, "storesim certify: store unreachable: "+addr) {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s\nwant exit 2, no stdout, one line \"storesim certify: store unreachable: %s …\" %s",
			got.code, got.stdout, got.stderr, addr, repro(t))
	}
}

// TestCertifyUnreachableStore: a store that refuses connections (a closed
// port) and one that accepts and never answers (a stalled server) are each
// reported once, before any case, as "store unreachable: ADDR" with exit 2
// — not as rule failures, and without a table — for redis:// and
// memcached:// alike.
func TestCertifyUnreachableStore(t *testing.T) {
	for _, scheme := range []string{redisScheme, memcachedScheme} {
		ask := "PING"
		if scheme == memcachedScheme {
			ask = "version"
		}
		for _, tc := range []struct {
			name string
			port func(*testing.T) int
			why  string
		}{
			{"dead", closedPort, "connection refused"},
			{"stalled", stalledStore, "no answer to " + ask},
		} {
			t.Run(strings.TrimSuffix(scheme, "://")+"-"+tc.name, func(t *testing.T) {
				addr := fmt.Sprintf("127.0.0.1:%d", tc.port(t))
				got := storesim("certify", "--driver", scheme+addr, "--short", "--wait", "300ms")
				wantUnreachable(t, got, addr)
				if !strings.Contains(got.stderr, tc.why) {
					t.Fatalf("stderr %q does not say %q %s", got.stderr, tc.why, repro(t))
				}
			})
		}
	}
}

// TestCertifyProgress: the progress line names each rule group as it
// begins ("rule group n of N") and is cleared at the end; to a file or a
// pipe certify writes no progress.
func TestCertifyProgress(t *testing.T) {
	var b bytes.Buffer
	line := &liveLine{w: &b}
	p := newCertifyProgress(line, "memory")
	stop := line.ticking(p.text)
	p.group(1, 31, "D-GEOM")
	p.group(2, 31, "D-BATCH-KEYS")
	stop()
	if s := b.String(); !strings.Contains(s, "running the conformance suite") || !strings.Contains(s, "rule group 1 of 31 (D-GEOM)") ||
		!strings.Contains(s, "rule group 2 of 31 (D-BATCH-KEYS)") || !strings.HasSuffix(s, "\r\033[K") {
		t.Fatalf("terminal progress %q: want each group and the line cleared at the end %s", s, repro(t))
	}
	if l := newLiveLine(&b, false); l != nil {
		t.Fatalf("progress to a non-terminal is not silent %s", repro(t))
	}
	got := storesim("certify", "--driver", "memory", "--short", "--rule", "D-STATUS,D-GEOM")
	if got.code != exitPass || strings.Contains(got.stderr, "rule group 1 of") || strings.Contains(got.stderr, "\r") {
		t.Fatalf("certify to a buffer: exit %d, stderr %q: want exit 0 and no progress %s", got.code, got.stderr, repro(t))
	}
	if _, term, ok := onTerminal(t, "certify", "--driver", "memory", "--short", "--rule", "D-STATUS,D-GEOM"); ok &&
		(!strings.Contains(term, "rule group 1 of 2 (D-") || !strings.Contains(term, "rule group 2 of 2 (D-")) {
		t.Fatalf("certify on a terminal drew no \"rule group n of 2\":\n%q %s", term, repro(t))
	}
}

// realServer starts a private redis-server or memcached (scheme) on a
// free loopback port (it needs the binary: skipped without it, unless
// STORESIM_REDIS_REQUIRED=1 or STORESIM_MEMCACHED_REQUIRED=1) and returns
// its address and process.
func realServer(t *testing.T, scheme string) (string, *os.Process) {
	name, required := "redis-server", "STORESIM_REDIS_REQUIRED"
	if scheme == memcachedScheme {
		name, required = "memcached", "STORESIM_MEMCACHED_REQUIRED"
	}
	bin, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv(required) == "1" {
			t.Fatalf("%s=1 but %s is not installed %s", required, name, repro(t))
		}
		t.Skip(name + " is not installed")
	}
	port := closedPort(t)
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir()}
	if scheme == memcachedScheme {
		args = []string{"-l", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "0", "-m", "64", "-I", "1m"}
		if os.Geteuid() == 0 {
			args = append(args, "-u", "root") // memcached refuses to run as root without -u
		}
	}
	cmd := exec.Command(bin, args...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	for range 200 {
		if served(scheme, addr) >= 0 {
			return addr, cmd.Process
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s on %s did not answer %s", name, addr, repro(t))
	return "", nil
}

// served is how many commands the server has processed (Redis:
// total_commands_processed; memcached: its gets, sets and deletes), or -1
// when it does not answer.
func served(scheme, addr string) int {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return -1
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	r := bufio.NewReader(c)
	if scheme == memcachedScheme {
		fmt.Fprintf(c, "stats\r\n")
		n := 0
		for {
			l, err := r.ReadString('\n')
			if err != nil {
				return -1
			}
			l = strings.TrimSpace(l)
			if l == "END" {
				return n
			}
			f := strings.Fields(l)
			if len(f) == 3 && f[0] == "STAT" && (f[1] == "cmd_get" || f[1] == "cmd_set" || f[1] == "delete_hits" || f[1] == "delete_misses") {
				v, _ := strconv.Atoi(f[2])
				n += v
			}
		}
	}
	fmt.Fprintf(c, "INFO stats\r\n")
	for {
		l, err := r.ReadString('\n')
		if err != nil {
			return -1
		}
		if v, ok := strings.CutPrefix(l, "total_commands_processed:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			return n
		}
	}
}

// TestCertifyStoreStopsAnswering: a Redis or memcached server that dies
// (killed) or hangs (stopped) in the middle of a certification ends it
// with the one line "store unreachable: ADDR" and exit 2, not with a table
// of rule failures. The server is stopped once it has served 2 000
// commands, well into the first rule groups.
func TestCertifyStoreStopsAnswering(t *testing.T) {
	for _, scheme := range []string{redisScheme, memcachedScheme} {
		for _, tc := range []struct {
			name string
			sig  syscall.Signal
		}{{"killed", syscall.SIGKILL}, {"stalled", syscall.SIGSTOP}} {
			t.Run(strings.TrimSuffix(scheme, "://")+"-"+tc.name, func(t *testing.T) {
				addr, proc := realServer(t, scheme)
				stopped := make(chan struct{})
				go func() {
					defer close(stopped)
					for n := served(scheme, addr); n >= 0 && n < 2000; n = served(scheme, addr) {
						time.Sleep(5 * time.Millisecond)
					}
					_ = proc.Signal(tc.sig)
				}()
				got := storesim("certify", "--driver", scheme+addr)
				<-stopped
				wantUnreachable(t, got, addr)
				if !strings.Contains(got.stderr, "stopped answering") {
					t.Fatalf("stderr %q does not say where the store stopped answering %s", got.stderr, repro(t))
				}
			})
		}
	}
}

// Package outage holds the fault-injection tests of the real store drivers
// (drivers/redisdriver, drivers/memcachedriver) against real servers: a
// private redis-server or memcached, started by the test on a free
// loopback port, is killed (SIGKILL) or paused (SIGSTOP, later SIGCONT) in
// the middle of the driver's work, and the driver's answers are judged by
// the contract monitor, the memory oracle and what the outage allows: no
// row OK and no MISS for what the server could not answer, access ENDED
// only where nothing can touch the rows any more. It is a package of its
// own because both drivers get the same test; it has no code outside
// tests.
package outage

import (
	"bufio"
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

// server is a private store server the test owns, by pid.
type server struct {
	kind string // "redis" or "memcached"
	addr string
	cmd  *exec.Cmd
	once sync.Once
	err  error // of Wait
}

// start runs a private server of kind on a free 127.0.0.1 port, with the
// binary from PATH (skipped, saying why, without it unless the test
// command requires the store). t.Cleanup resumes and kills it by pid and
// reaps it, so no process outlives the test.
func start(t *testing.T, kind string) *server {
	t.Helper()
	bin, required := "redis-server", "STORESIM_REDIS_REQUIRED"
	if kind == "memcached" {
		bin, required = "memcached", "STORESIM_MEMCACHED_REQUIRED"
	}
	path, err := exec.LookPath(bin)
	if err != nil {
		if os.Getenv(required) == "1" {
			t.Fatalf("%s=1 but %s is not on PATH (repro: go test ./drivers/outage -run '%s')", required, bin, t.Name())
		}
		t.Skipf("%s is not on PATH (apt-get install -y %s; make test installs it)", bin, bin)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	args := []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir()}
	if kind == "memcached" {
		args = []string{"-l", "127.0.0.1", "-p", strconv.Itoa(port), "-U", "0", "-m", "64", "-I", "1m"}
		if os.Geteuid() == 0 {
			args = append(args, "-u", "root") // memcached refuses root without -u
		}
	}
	s := &server{kind: kind, addr: fmt.Sprintf("127.0.0.1:%d", port), cmd: exec.Command(path, args...)}
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = s.cmd.Process.Signal(syscall.SIGCONT)
		_ = s.cmd.Process.Kill()
		s.wait()
	})
	for range 300 {
		if s.answers() {
			return s
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("%s on %s did not answer (repro: go test ./drivers/outage -run '%s')", bin, s.addr, t.Name())
	return nil
}

// wait reaps the process once.
func (s *server) wait() { s.once.Do(func() { s.err = s.cmd.Wait() }) }

// kill sends SIGKILL and waits until the process is gone, so every call
// made afterwards meets a dead server.
func (s *server) kill() {
	_ = s.cmd.Process.Kill()
	s.wait()
}

// pause sends SIGSTOP and waits until the kernel reports the process
// stopped (state T in /proc), so every call made afterwards meets a
// server that accepts connections and never answers.
func (s *server) pause(t *testing.T) {
	_ = s.cmd.Process.Signal(syscall.SIGSTOP)
	for range 500 {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
		if err != nil {
			return // no /proc: the signal is as good as delivered after the wait below
		}
		if f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:])); len(f) > 0 && (f[0] == "T" || f[0] == "t") {
			return
		}
		time.Sleep(2 * time.Millisecond)
	}
	t.Fatalf("%s pid %d did not stop after SIGSTOP", s.kind, s.cmd.Process.Pid)
}

// resume sends SIGCONT.
func (s *server) resume() { _ = s.cmd.Process.Signal(syscall.SIGCONT) }

// answers: the server replies to one PING (memcached: version) within a
// second.
func (s *server) answers() bool {
	c, err := net.DialTimeout("tcp", s.addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	cmd := "PING\r\n"
	if s.kind == "memcached" {
		cmd = "version\r\n"
	}
	if _, err := c.Write([]byte(cmd)); err != nil {
		return false
	}
	_, err = bufio.NewReader(c).ReadString('\n')
	return err == nil
}

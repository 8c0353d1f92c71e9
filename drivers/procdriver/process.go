package procdriver

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// proc is the child process and the pipes to it. Its goroutines: the
// writer (the only writer of stdin), the reader (the only reader of
// stdout), the stderr reader and the waiter (cmd.Wait). None of them
// outlives the driver's Shutdown or the handling of an incident.
type proc struct {
	cmd     *exec.Cmd
	pid     int
	stdin   *os.File // our ends
	stdout  *os.File
	stderr  *os.File
	exited  chan struct{} // closed when cmd.Wait returned
	exitErr error         // cmd.Wait's answer, readable once exited is closed

	stderrDone chan struct{}
}

// startProc starts argv with three pipes of our own (no goroutines of
// os/exec), in a process group of its own, killed if this process dies.
func startProc(cfg Config, onStderr func([]byte)) (*proc, error) {
	path, err := exec.LookPath(cfg.Command[0])
	if err != nil {
		return nil, fmt.Errorf("procdriver: %w", err)
	}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	outR, outW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		return nil, err
	}
	errR, errW, err := os.Pipe()
	if err != nil {
		inR.Close()
		inW.Close()
		outR.Close()
		outW.Close()
		return nil, err
	}
	cmd := &exec.Cmd{Path: path, Args: cfg.Command, Dir: cfg.Dir, Stdin: inR, Stdout: outW, Stderr: errW}
	if len(cfg.Env) > 0 {
		cmd.Env = append(os.Environ(), cfg.Env...)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	err = cmd.Start()
	// The child holds its ends now; ours of them must go, or EOF never comes.
	inR.Close()
	outW.Close()
	errW.Close()
	if err != nil {
		inW.Close()
		outR.Close()
		errR.Close()
		return nil, fmt.Errorf("procdriver: start %s: %w", strings.Join(cfg.Command, " "), err)
	}
	p := &proc{cmd: cmd, pid: cmd.Process.Pid, stdin: inW, stdout: outR, stderr: errR,
		exited: make(chan struct{}), stderrDone: make(chan struct{})}
	go func() {
		p.exitErr = cmd.Wait()
		close(p.exited)
	}()
	go func() {
		defer close(p.stderrDone)
		buf := make([]byte, 4096)
		for {
			n, err := errR.Read(buf)
			if n > 0 {
				onStderr(buf[:n])
			}
			if err != nil {
				return
			}
		}
	}()
	return p, nil
}

// kill sends SIGKILL to the process and to its process group (the
// process's own id: Setpgid), by id.
func (p *proc) kill() {
	select {
	case <-p.exited:
		return
	default:
	}
	syscall.Kill(-p.pid, syscall.SIGKILL)
	syscall.Kill(p.pid, syscall.SIGKILL)
}

// waitExit waits up to d for the process to exit.
func (p *proc) waitExit(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

// exitString is how the process ended, once it has.
func (p *proc) exitString() string {
	select {
	case <-p.exited:
	default:
		return "still running"
	}
	if p.exitErr == nil {
		return "exit status 0"
	}
	var ee *exec.ExitError
	if errors.As(p.exitErr, &ee) {
		return ee.ProcessState.String()
	}
	return p.exitErr.Error()
}

// killed reports whether the process ended by SIGKILL.
func (p *proc) killed() bool {
	select {
	case <-p.exited:
	default:
		return false
	}
	var ee *exec.ExitError
	if errors.As(p.exitErr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok {
			return ws.Signaled() && ws.Signal() == syscall.SIGKILL
		}
	}
	return false
}

// lineReader reads newline-terminated lines of at most max bytes.
type lineReader struct {
	r   *bufio.Reader
	max int
}

var errLineTooLong = errors.New("line too long")

// next returns the next line without its newline. A last line without a
// newline is returned too; io.EOF comes after it.
func (l *lineReader) next() ([]byte, error) {
	var line []byte
	for {
		frag, err := l.r.ReadSlice('\n')
		if len(line)+len(frag) > l.max+1 {
			return nil, errLineTooLong
		}
		switch {
		case err == nil:
			if line == nil {
				return frag[:len(frag)-1], nil
			}
			line = append(line, frag[:len(frag)-1]...)
			return line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			line = append(line, frag...)
		default:
			if len(line)+len(frag) > 0 {
				return append(line, frag...), nil
			}
			if err == io.EOF {
				return nil, io.EOF
			}
			return nil, err
		}
	}
}

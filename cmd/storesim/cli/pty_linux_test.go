package cli

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sync"
	"syscall"
	"testing"
	"unsafe"
)

// onTerminal runs the CLI with stderr on a pseudo-terminal and returns what
// the terminal received. ok is false when this machine has no /dev/ptmx.
func onTerminal(t *testing.T, args ...string) (code int, stderr string, ok bool) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return 0, "", false
	}
	defer master.Close()
	unlock := 0
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, master.Fd(), syscall.TIOCSPTLCK, uintptr(unsafe.Pointer(&unlock))); e != 0 {
		return 0, "", false
	}
	var n uint32
	if _, _, e := syscall.Syscall(syscall.SYS_IOCTL, master.Fd(), syscall.TIOCGPTN, uintptr(unsafe.Pointer(&n))); e != 0 {
		return 0, "", false
	}
	slave, err := os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		return 0, "", false
	}
	var got bytes.Buffer
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		io.Copy(&got, master) // ends with EIO once the slave is closed
	}()
	var out bytes.Buffer
	code = run(args, &out, slave)
	slave.Close()
	wg.Wait()
	return code, got.String(), true
}

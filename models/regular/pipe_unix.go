//go:build unix

package regular

import (
	"errors"
	"fmt"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// pipeIdle is how long readPipe waits for the next bytes (or the first
// writer) before it gives up.
var pipeIdle = 10 * time.Second

// readPipe reads f, a pipe opened with O_NONBLOCK, until its writers close
// it, through Go's poller so that no thread blocks and a deadline applies:
// after pipeIdle with nothing new it gives up with an error. Opened
// without blocking, a FIFO no one has opened for writing yet reads as end
// of file at once, so a read of nothing is the end only once poll reports
// the hang-up of a writer (Linux reports none until a writer has come and
// gone); before that it waits for a writer, as one blocked in its own
// open is let through by ours a moment later. So a FIFO nobody writes to
// ends with that error, and a pipe closed with nothing written reads as
// empty. It refuses more than max bytes.
func readPipe(f *os.File, max int64) ([]byte, error) {
	rc, err := f.SyscallConn()
	if err != nil {
		return nil, err
	}
	var b []byte
	for {
		if int64(len(b)) > max {
			return nil, fmt.Errorf("is a pipe that sent more than the %s allowed", sizeText(max))
		}
		if err := f.SetReadDeadline(time.Now().Add(pipeIdle)); err != nil {
			return nil, fmt.Errorf("is a pipe that cannot be read without blocking here: %w", err)
		}
		if len(b) == cap(b) {
			b = append(b, make([]byte, min(32<<10, max+1-int64(len(b))))...)[:len(b)]
		}
		var n int
		var rerr error
		err := rc.Read(func(fd uintptr) bool {
			read := func() {
				for {
					n, rerr = syscall.Read(int(fd), b[len(b):cap(b)])
					if rerr != syscall.EINTR {
						break
					}
				}
			}
			read()
			switch {
			case rerr == syscall.EAGAIN: // a writer, nothing written yet
				return false
			case n > 0 || rerr != nil:
				return true
			case !hungUp(fd):
				return false // no writer yet
			}
			// A writer may have come, written and gone between the read of
			// nothing and the poll: what it wrote is there now (EAGAIN: yet
			// another writer, whose bytes are waited for).
			read()
			return rerr != syscall.EAGAIN
		})
		switch {
		case errors.Is(err, os.ErrDeadlineExceeded):
			return nil, fmt.Errorf("is a pipe and nothing arrived for %v (is anything writing to it?)", pipeIdle)
		case err != nil:
			return nil, err
		case rerr != nil:
			return nil, rerr
		case n == 0:
			return b, nil
		}
		b = b[:len(b)+n]
	}
}

// hungUp reports whether poll says a writer of the pipe fd has hung up
// (or fails, so that a broken descriptor ends the read rather than waits).
func hungUp(fd uintptr) bool {
	p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
	for {
		_, err := unix.Poll(p, 0)
		if err != unix.EINTR {
			return err != nil || p[0].Revents&(unix.POLLHUP|unix.POLLERR|unix.POLLNVAL) != 0
		}
	}
}

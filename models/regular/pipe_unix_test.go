//go:build unix

package regular

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

func mkfifo(t *testing.T) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(p, 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	return p
}

// write opens the FIFO at p for writing (which waits for a reader), writes
// data and closes it.
func write(t *testing.T, p, data string) {
	t.Helper()
	go func() {
		f, err := os.OpenFile(p, os.O_WRONLY, 0)
		if err != nil {
			t.Error(err)
			return
		}
		f.WriteString(data)
		f.Close()
	}()
}

func TestReadFileFIFOWithWriter(t *testing.T) {
	p := mkfifo(t)
	write(t, p, "hello\n")
	if b, err := ReadFile(p, 1<<20); err != nil || string(b) != "hello\n" {
		t.Fatalf("%q, %v", b, err)
	}
}

// A writer that opens the FIFO and closes it with nothing written makes an
// empty file.
func TestReadFileFIFOEmpty(t *testing.T) {
	p := mkfifo(t)
	write(t, p, "")
	if b, err := ReadFile(p, 1<<20); err != nil || len(b) != 0 {
		t.Fatalf("%q, %v", b, err)
	}
}

func TestReadFileFIFOCap(t *testing.T) {
	p := mkfifo(t)
	write(t, p, "12345")
	_, err := ReadFile(p, 4)
	if err == nil || !strings.Contains(err.Error(), "more than the 4 bytes allowed") {
		t.Fatalf("%v", err)
	}
}

func TestReadFileFIFOWithoutWriter(t *testing.T) {
	p := mkfifo(t)
	defer func(d time.Duration) { pipeIdle = d }(pipeIdle)
	pipeIdle = time.Millisecond
	_, err := ReadFile(p, 1<<20)
	if err == nil || !strings.Contains(err.Error(), p+": is a pipe and nothing arrived for 1ms") {
		t.Fatalf("%v", err)
	}
}

// An anonymous pipe (what /dev/stdin or <(...) name) with its data written
// and its writer gone reads whole.
func TestReadFileAnonymousPipe(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	w.WriteString("from a pipe")
	w.Close()
	p := "/dev/fd/" + strconv.Itoa(int(r.Fd()))
	if _, err := os.Stat(p); err != nil {
		t.Skipf("no /dev/fd here: %v", err)
	}
	if b, err := ReadFile(p, 1<<20); err != nil || string(b) != "from a pipe" {
		t.Fatalf("%q, %v", b, err)
	}
}

// Create refuses a FIFO nobody reads at once (os.Create opened it, and a
// trace longer than the pipe's buffer then waited for ever), and writes to
// one that a process reads.
func TestCreateFIFO(t *testing.T) {
	p := mkfifo(t)
	f, err := Create(p)
	if err == nil || !strings.Contains(err.Error(), "is a FIFO that no process reads") {
		if f != nil {
			f.Close()
		}
		t.Fatalf("Create of a FIFO nobody reads: %v", err)
	}
	got := make(chan string, 1)
	go func() {
		r, err := os.Open(p) // waits for a writer
		if err != nil {
			got <- err.Error()
			return
		}
		defer r.Close()
		b := make([]byte, 0, 1<<20)
		for {
			n, err := r.Read(b[len(b):cap(b)])
			b = b[:len(b)+n]
			if err != nil {
				break
			}
		}
		got <- strconv.Itoa(len(b))
	}()
	// The reader opens the FIFO once a writer does, and Create, which
	// does not wait, finds it only after it is there.
	for {
		if f, err = Create(p); err == nil {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := f.Write(make([]byte, 200<<10)); err != nil {
		t.Fatal(err)
	}
	f.Close()
	if n := <-got; n != strconv.Itoa(200<<10) {
		t.Fatalf("the reader got %s bytes, want %d", n, 200<<10)
	}
}

package regular

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

func TestOpenRefusesSpecialFiles(t *testing.T) {
	dir := t.TempDir()
	fifo := filepath.Join(dir, "fifo.json")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Skipf("no FIFOs here: %v", err)
	}
	zero := filepath.Join(dir, "zero.json")
	os.Symlink("/dev/zero", zero)
	for path, want := range map[string]string{fifo: "a FIFO", zero: "a device", dir: "a directory"} {
		f, _, err := Open(path) // would block (FIFO) or never end (/dev/zero)
		if f != nil {
			f.Close()
		}
		if !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", path, err, want)
		}
	}
	for path, want := range map[string]string{zero: "a device", dir: "a directory"} {
		if _, err := ReadFile(path, 1<<20); !errors.Is(err, ErrNotRegular) || !strings.Contains(err.Error(), want) {
			t.Errorf("ReadFile %s: %v, want %q", path, err, want)
		}
	}
}

func TestReadFileCap(t *testing.T) {
	p := filepath.Join(t.TempDir(), "f")
	os.WriteFile(p, []byte("12345"), 0o600)
	if b, err := ReadFile(p, 5); err != nil || string(b) != "12345" {
		t.Fatalf("%q, %v", b, err)
	}
	if _, err := ReadFile(p, 4); err == nil || !strings.Contains(err.Error(), "5 bytes is larger than the 4 bytes allowed") {
		t.Fatalf("%v", err)
	}
	l := filepath.Join(t.TempDir(), "link")
	os.Symlink(p, l)
	if b, err := ReadFile(l, 5); err != nil || string(b) != "12345" {
		t.Fatalf("symlink to a regular file: %q, %v", b, err)
	}
}

// Package regular opens the files the app reads (models, saved sessions)
// only when they are regular files: a FIFO blocks the open, and a device
// such as /dev/zero reads without end, so a FIFO, device, socket or
// directory at such a path is refused before anything is read. ReadFile,
// for the small files a user names (a prompt, a grammar, the config file,
// a calibration text), also reads a pipe, without blocking in the open and
// for a bounded time. Symbolic links are followed.
package regular

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// ErrNotRegular is wrapped by the errors for paths that are not regular
// files.
var ErrNotRegular = errors.New("not a regular file")

// Open opens path for reading when it is a regular file. It opens without
// blocking (O_NONBLOCK), so a FIFO is refused instead of waiting for a
// writer, and checks the opened file itself, so the answer holds for what
// is read.
func Open(path string) (*os.File, fs.FileInfo, error) {
	f, st, err := open(path)
	if err != nil {
		return nil, nil, err
	}
	if !st.Mode().IsRegular() {
		f.Close()
		return nil, nil, notRegular("open", path, st)
	}
	return f, st, nil
}

// open opens path without blocking and stats what it opened.
func open(path string) (*os.File, fs.FileInfo, error) {
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, nil, err
	}
	return f, st, nil
}

// Output checks that a file written to path may take its place: nothing
// is there, or a regular file (through symbolic links). A directory,
// FIFO, device or socket is refused: a file renamed over /dev/null would
// replace it for every program on the machine. An empty path is refused
// too: it failed only at the rename, after all the work.
func Output(path string) error {
	if path == "" {
		return errors.New("the output file's name is empty")
	}
	st, err := os.Stat(path)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil
	case err != nil:
		return err
	case !st.Mode().IsRegular():
		return notRegular("write", path, st)
	}
	return nil
}

// Create opens path for writing a stream (a trace): a regular file is
// created or truncated, as os.Create does, and a pipe or a device
// (/dev/stderr, <(...), a FIFO something reads) is written as it is. A
// FIFO that no process has open for reading is refused at once: os.Create
// opened it for reading as well, which does not block, so the writes filled
// its buffer (64 KB) and then waited for ever.
func Create(path string) (*os.File, error) {
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_TRUNC|syscall.O_NONBLOCK, 0o666)
	if errors.Is(err, syscall.ENXIO) {
		return nil, &fs.PathError{Op: "open", Path: path, Err: errors.New("is a FIFO that no process reads")}
	}
	return f, err
}

func notRegular(op, path string, st fs.FileInfo) error {
	return &fs.PathError{Op: op, Path: path, Err: fmt.Errorf("is %s, %w", kind(st.Mode()), ErrNotRegular)}
}

// kind names a file type that is not regular.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a FIFO"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeDevice != 0:
		return "a device"
	}
	return "a special file"
}

// ReadFile reads the regular file or pipe at path, refusing one of more
// than max bytes (also when it grows past max while being read). A pipe
// (a FIFO, or /dev/stdin and <(...) fed by a pipe) is read until its
// writers close it, as long as each piece arrives within PipeIdle (see
// readPipe). Directories, devices and sockets are refused.
func ReadFile(path string, max int64) ([]byte, error) {
	f, st, err := open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if st.Mode()&fs.ModeNamedPipe != 0 {
		b, err := readPipe(f, max)
		if err != nil {
			return nil, &fs.PathError{Op: "read", Path: path, Err: err}
		}
		return b, nil
	}
	if !st.Mode().IsRegular() {
		return nil, notRegular("open", path, st)
	}
	if st.Size() > max {
		return nil, &fs.PathError{Op: "read", Path: path, Err: TooLarge(st.Size(), max)}
	}
	b, err := io.ReadAll(io.LimitReader(f, max+1))
	if err != nil {
		return nil, err
	}
	if int64(len(b)) > max {
		return nil, &fs.PathError{Op: "read", Path: path, Err: TooLarge(int64(len(b)), max)}
	}
	return b, nil
}

// TooLarge is the error for a file of size bytes where max are allowed.
func TooLarge(size, max int64) error {
	return fmt.Errorf("%s is larger than the %s allowed", sizeText(size), sizeText(max))
}

func sizeText(n int64) string {
	switch {
	case n >= 10<<20:
		return fmt.Sprintf("%d MB", n>>20)
	case n >= 10<<10:
		return fmt.Sprintf("%d KB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

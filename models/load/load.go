// Package load opens any model file the app supports, choosing the reader by
// the file's first bytes rather than its name, so a GGUF file named .pt (or
// the reverse) still opens or fails with a clear message.
package load

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"chat/models"
	"chat/models/course"
	"chat/models/embedded"
	"chat/models/llama"
	"chat/models/regular"
	"chat/models/torchpt"
)

// Open loads the model at path.
func Open(path string) (models.Model, error) { return OpenProgress(path, nil) }

// Progress is told how many of the file's total bytes have been read.
type Progress func(done, total int64)

// OpenProgress is Open, telling progress (if not nil) how far reading the
// file has got, for a progress bar while a large model loads.
func OpenProgress(path string, progress Progress) (models.Model, error) {
	f, st, err := regular.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open model: %w", err)
	}
	defer f.Close()
	var magic [4]byte
	n, _ := io.ReadFull(f, magic[:])
	size := st.Size()
	switch {
	case n == 4 && string(magic[:]) == "GGUF":
		if progress != nil {
			// The reader memory-maps the file; reading it through once first
			// pulls it into the page cache with a visible pace, and the
			// mapping then finds every page resident.
			if err := readThrough(f, size, progress); err != nil {
				return nil, fmt.Errorf("open model: %w", err)
			}
		}
		m, err := llama.Load(path)
		if err != nil {
			return nil, err // not a typed nil *llama.Model in the interface
		}
		return m, nil
	case n >= 2 && magic[0] == 'P' && magic[1] == 'K':
		var r io.ReaderAt = f
		if progress != nil {
			r = &countingReader{r: f, total: size, progress: progress}
		}
		ck, err := torchpt.Read(r, size, filepath.Base(path))
		if err != nil {
			return nil, err
		}
		return course.FromCheckpoint(ck, filepath.Base(path))
	default:
		return nil, fmt.Errorf("open model: %s is neither a PyTorch zip checkpoint nor a GGUF file (starts with %q)", path, magic[:n])
	}
}

// countingReader reports the bytes read through it (the checkpoint reader
// reads each tensor's storage once).
type countingReader struct {
	r        io.ReaderAt
	done     int64
	total    int64
	progress Progress
}

func (c *countingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := c.r.ReadAt(p, off)
	c.done = min(c.done+int64(n), c.total)
	c.progress(c.done, c.total)
	return n, err
}

func readThrough(f *os.File, size int64, progress Progress) error {
	buf := make([]byte, 4<<20)
	var done int64
	for done < size {
		n, err := f.ReadAt(buf[:min(int64(len(buf)), size-done)], done)
		done += int64(n)
		progress(done, size)
		if err != nil {
			if err == io.EOF {
				return nil
			}
			return err
		}
	}
	return nil
}

// Embedded loads the default model compiled into the binary.
func Embedded() (models.Model, error) {
	ck, err := torchpt.Read(bytes.NewReader(embedded.Model), int64(len(embedded.Model)), embedded.Name)
	if err != nil {
		return nil, err
	}
	return course.FromCheckpoint(ck, embedded.Name)
}

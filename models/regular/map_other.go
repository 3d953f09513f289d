//go:build !unix

package regular

import (
	"io"
	"os"
)

// Map reads the first size bytes of f where mmap is not available.
func Map(f *os.File, size int64) ([]byte, func() error, error) {
	if size <= 0 || int64(int(size)) != size {
		return nil, nil, os.ErrInvalid
	}
	b := make([]byte, size)
	if _, err := io.ReadFull(f, b); err != nil {
		return nil, nil, err
	}
	return b, func() error { return nil }, nil
}

// Release does nothing where Map copies the file.
func Release([]byte) {}

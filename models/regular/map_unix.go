//go:build unix

package regular

import (
	"os"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Map maps the first size bytes of f read-only, so data is paged in on
// demand rather than copied: a large model opens in milliseconds, and the
// holes of a sparse file take no memory. Reading past the end of a file
// that shrinks while mapped raises SIGBUS, as with any mapping.
func Map(f *os.File, size int64) ([]byte, func() error, error) {
	if size <= 0 || int64(int(size)) != size {
		return nil, nil, os.ErrInvalid
	}
	b, err := unix.Mmap(int(f.Fd()), 0, int(size), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		return nil, nil, err
	}
	return b, func() error { return unix.Munmap(b) }, nil
}

// Release drops the process's resident pages of b, a part of a mapping Map
// made (madvise MADV_DONTNEED on the pages b touches): the contents stay
// readable, paged in again from the page cache or the file on the next
// access, so a page b shares with its neighbours may go too. Errors are
// ignored: the pages then just stay.
func Release(b []byte) {
	if len(b) == 0 {
		return
	}
	p := unsafe.Pointer(unsafe.SliceData(b))
	off := int(uintptr(p) % uintptr(os.Getpagesize()))
	// From the page holding b's first byte: inside the same mapping, which
	// starts on a page.
	_ = unix.Madvise(unsafe.Slice((*byte)(unsafe.Add(p, -off)), len(b)+off), unix.MADV_DONTNEED)
}

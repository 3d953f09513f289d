// Package hugepage allocates the large buffers a decode step streams
// (repacked weights, the KV pool) from chunks that Linux may back with 2 MiB
// pages (madvise MADV_HUGEPAGE, which THP's default "madvise" mode honours):
// with 4 KiB pages every 4 KiB of a 100 MB stream needs its own TLB entry,
// and under a hypervisor each miss is a two-level page walk.
//
// Buffers smaller than a huge page are carved from 2 MiB-aligned chunks, so
// the many small matrices of a model share huge pages; a chunk is freed by
// the garbage collector once no buffer in it is referenced. A larger buffer
// gets pages of its own (alloc: no more than its own bytes resident).
package hugepage

import (
	"sync"
	"unsafe"
)

const (
	page  = 2 << 20
	chunk = 8 << 20 // less than a page of a chunk's tail stays unused
	small = 64 << 10
)

var arena struct {
	sync.Mutex
	free []byte // the current chunk's unused tail, 64-byte aligned
}

// Bytes returns n zero bytes, 64-byte aligned; from a huge-page chunk when
// n is at least 64 KiB and less than a huge page, else huge pages of its own
// (a chunk's tail that a buffer of 2–4 MiB did not fit in stayed resident
// unused: 15 MB of Llama 3.2 1B Q4_K_M's RSS).
func Bytes(n int) []byte {
	if n < small {
		return make([]byte, n)
	}
	n64 := (n + 63) &^ 63
	if n64 >= page {
		return alloc(n64)[:n:n]
	}
	arena.Lock()
	defer arena.Unlock()
	if len(arena.free) < n64 {
		arena.free = alloc(chunk)
	}
	b := arena.free[:n:n]
	arena.free = arena.free[n64:]
	return b
}

// Floats is Bytes for float32s.
func Floats(n int) []float32 {
	if n == 0 {
		return nil
	}
	b := Bytes(4 * n)
	return unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// alloc returns n bytes starting on a huge-page boundary, its whole huge
// pages advised for huge pages before anything touches them, and resident.
// The rest, less than a huge page, gets 4 KiB pages: a buffer a little over
// whole pages (a 2048×2048 Q8_0 matrix is 4.25 MiB) would otherwise make a
// whole 2 MiB page resident for its last bytes, 74 MB of Llama 3.2 1B
// Q8_0's RSS (BENCHMARKS.md). Every buffer here is filled and then streamed;
// one filled a little at a time (the KV pool, block by block) would
// otherwise pay for its page faults in the middle of decode steps, all of a
// layer's storage at once when a block crosses into a new page (on this
// project's KVM guests ~4 ms a 2 MiB page: a 16-sequence step of ~11 ms
// stalled to 150 ms every 32-48 positions). llama.cpp clears its KV buffer
// when it creates a context, to the same effect.
func alloc(n int) []byte {
	buf := make([]byte, n+page)
	off := (page - int(uintptr(unsafe.Pointer(&buf[0]))%page)) % page
	b := buf[off : off+n : off+n]
	whole := n &^ (page - 1)
	advise(b[:whole], true)
	advise(b[whole:], false)
	populate(b)
	return b
}

package weights

import (
	"encoding/binary"
	"math"
	"unsafe"

	"chat/models/hugepage"
)

// Copies of a GGUF mapping's tensors as typed slices in memory that Linux
// may back with 2 MiB pages (models/hugepage): a decode step streams every
// weight, and from the file's 4 KiB pages bench110M-f32 decoded 1.25× slower
// (BENCHMARKS.md). The file's own pages are then only page cache, which the
// kernel may drop. Where a copy is not worth it (hugepage.Worth: no huge
// pages, or memory would run short), and for data that is aligned on a
// little-endian host, they stay views of the mapping. (F16 and BF16 are
// always repacked into huge-page memory: f16.go.)

var littleEndianHost = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

// bytesCopy is raw in huge-page memory, or raw itself where that is not
// worth it.
func bytesCopy(raw []byte) []byte { return inMemory(raw, 1) }

// inMemory is raw itself where it can stay a view of the mapping (aligned
// to a bytes, and a huge-page copy not worth it), else a copy of it in
// huge-page memory. The host is little-endian or a is 1.
func inMemory(raw []byte, a uintptr) []byte {
	if uintptr(unsafe.Pointer(unsafe.SliceData(raw)))%a == 0 && !hugepage.Worth(len(raw)) {
		return raw
	}
	b := hugepage.Bytes(len(raw))
	copy(b, raw)
	return b
}

func f32View(raw []byte) []float32 {
	n := len(raw) / 4
	if n == 0 {
		return []float32{}
	}
	if littleEndianHost {
		b := inMemory(raw, 4)
		return unsafe.Slice((*float32)(unsafe.Pointer(&b[0])), n)
	}
	w := hugepage.Floats(n)
	for i := range w {
		w[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return w
}

// u16s is raw's little-endian uint16s, for F16 and BF16 to repack: a view
// of raw where the host is little-endian and raw aligned, else a copy.
func u16s(raw []byte) []uint16 {
	n := len(raw) / 2
	if n == 0 {
		return []uint16{}
	}
	if littleEndianHost && uintptr(unsafe.Pointer(unsafe.SliceData(raw)))%2 == 0 {
		return unsafe.Slice((*uint16)(unsafe.Pointer(&raw[0])), n)
	}
	h := make([]uint16, n)
	for i := range h {
		h[i] = binary.LittleEndian.Uint16(raw[2*i:])
	}
	return h
}

// hugeU16 is n zero uint16s in huge-page memory.
func hugeU16(n int) []uint16 {
	if n == 0 {
		return []uint16{}
	}
	b := hugepage.Bytes(2 * n)
	return unsafe.Slice((*uint16)(unsafe.Pointer(&b[0])), n)
}

package weights

import (
	"encoding/binary"
	"math"
	"unsafe"
)

// Views of a GGUF mapping as typed slices, so F32 and F16 weights are used
// where they lie in the file. On a big-endian host, or for data that is not
// aligned (GGUF aligns tensors to at least 32 bytes), they are copies.

var littleEndianHost = func() bool {
	x := uint16(1)
	return *(*byte)(unsafe.Pointer(&x)) == 1
}()

func f32View(raw []byte) []float32 {
	n := len(raw) / 4
	if n == 0 {
		return []float32{}
	}
	if littleEndianHost && uintptr(unsafe.Pointer(&raw[0]))%4 == 0 {
		return unsafe.Slice((*float32)(unsafe.Pointer(&raw[0])), n)
	}
	w := make([]float32, n)
	for i := range w {
		w[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
	}
	return w
}

func u16View(raw []byte) []uint16 {
	n := len(raw) / 2
	if n == 0 {
		return []uint16{}
	}
	if littleEndianHost && uintptr(unsafe.Pointer(&raw[0]))%2 == 0 {
		return unsafe.Slice((*uint16)(unsafe.Pointer(&raw[0])), n)
	}
	h := make([]uint16, n)
	for i := range h {
		h[i] = binary.LittleEndian.Uint16(raw[2*i:])
	}
	return h
}

//go:build linux

package kernels

import (
	"testing"
	"unsafe"
)

// guardedF16 returns n f16 weights that end exactly where an inaccessible
// page begins.
func guardedF16(t *testing.T, n int) []uint16 {
	f := guarded(t, (n+1)/2)
	h := unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(f))), len(f)*2)
	h = h[len(h)-n:]
	for i := range h {
		h[i] = uint16(0x3c00 + i%5) // about 1
	}
	return h
}

// TestF16StayInBounds: the interleaved f16 products (every cols%8) read
// nothing past the last weight, activation or output.
func TestF16StayInBounds(t *testing.T) {
	for _, asm := range impls() {
		withImpl(asm, func() {
			for _, cols := range []int{1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 13, 15, 17, 33, 70} {
				for _, rows := range []int{1, 3, 4, 5, 8, 9, 13} {
					for _, n := range []int{1, 3, 4} {
						w := guardedF16(t, HalfILLen(rows, cols))
						x := guarded(t, n*cols)
						out := guarded(t, n*rows)
						MatMulF16IL(out, w, x, rows, cols, n)
						MatMulF16IL(out, w, x, rows, cols, 1)
					}
				}
			}
		})
	}
}

// TestBF16StayInBounds: the interleaved bf16 products (every cols%8) read
// nothing past the last weight, activation or output.
func TestBF16StayInBounds(t *testing.T) {
	for _, asm := range impls() {
		withImpl(asm, func() {
			for _, cols := range []int{1, 2, 3, 4, 5, 6, 7, 9, 10, 11, 13, 15, 17, 33, 70} {
				for _, rows := range []int{1, 3, 4, 5, 8, 9, 13} {
					for _, n := range []int{1, 3, 4} {
						w := guardedF16(t, HalfILLen(rows, cols)) // about 1.9 as bf16
						x := guarded(t, n*cols)
						out := guarded(t, n*rows)
						MatMulBF16IL(out, w, x, rows, cols, n)
						MatMulBF16IL(out, w, x, rows, cols, 1)
						RoundBF16(x, x)
					}
				}
			}
		})
	}
}

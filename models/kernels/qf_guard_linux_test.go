//go:build linux

package kernels

import (
	"math/rand/v2"
	"testing"
	"unsafe"
)

// guardedBytes returns n bytes that end exactly where an inaccessible page
// begins.
func guardedBytes(t *testing.T, n int) []byte {
	b := guardedI8(t, n)
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(b))), len(b))
}

// TestQFStayInBounds: the float-activation products (every tail, row
// pairing and tile) read nothing past the last code, scale or activation and
// write nothing past the last output, on every kernel set.
func TestQFStayInBounds(t *testing.T) {
	for _, l := range isaLevels(t) {
		withISA(l, func() {
			for _, cols := range []int{1, 3, 7, 8, 9, 15, 16, 17, 24, 33, 70} {
				for _, rows := range []int{1, 2, 3, 4, 5, 6, 7, 9, 13} {
					for _, n := range []int{1, 3, 4, 5, 8} {
						codes := guardedBytes(t, rows*cols)
						q := guardedI8(t, rows*cols)
						scale, x, out := guarded(t, rows), guarded(t, n*cols), guarded(t, n*rows)
						MatVecFP8(out, codes, scale, x, rows, cols, E4M3)
						MatMulFP8(out, codes, scale, x, rows, cols, n, E5M2)
						MatVecI8F32(out, q, scale, x, rows, cols)
						MatMulI8F32(out, q, scale, x, rows, cols, n)
					}
				}
			}
		})
	}
}

// TestLUT4StayInBounds: the 4-bit products read nothing past the last code
// byte (odd columns end on a half-used byte), scale or activation.
func TestLUT4StayInBounds(t *testing.T) {
	for _, l := range isaLevels(t) {
		withISA(l, func() {
			for _, cols := range []int{1, 3, 7, 8, 9, 15, 16, 17, 31, 32, 33, 40, 63, 64, 70, 96} {
				for _, rows := range []int{1, 2, 3, 4, 5, 6, 7, 9, 13} {
					for _, n := range []int{1, 3, 4, 5, 8} {
						g := 32
						packed := guardedBytes(t, rows*((cols+1)/2))
						scale := guarded(t, rows*((cols+g-1)/g))
						x, out := guarded(t, n*cols), guarded(t, n*rows)
						MatVecLUT4(out, packed, scale, &Int4Levels, g, x, rows, cols)
						MatMulLUT4(out, packed, scale, &NF4Levels, g, x, rows, cols, n)
					}
				}
			}
		})
	}
}

// TestBatchTilesStayInBounds: the batched int8 and block products (their
// tiles, packing and leftovers) read nothing past the last weight block,
// activation or scale and write nothing past the last output.
func TestBatchTilesStayInBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(105, 106))
	for _, l := range isaLevels(t) {
		withISA(l, func() {
			for _, rows := range []int{1, 4, 5, 8, 9} {
				for _, cols := range []int{64, 128, 192, 256} {
					for _, n := range []int{1, 6, 7, 12, 13} {
						q, xq := guardedI8(t, rows*cols), guardedI8(t, n*cols)
						scale, xs, out := guarded(t, rows), guarded(t, n), guarded(t, n*rows)
						MatMulI8(out, q, scale, xq, xs, rows, cols, n)
						for _, k := range blockKinds {
							if cols%k.bs != 0 {
								continue
							}
							nb := cols / k.bs
							src := randBlocks(rng, k, rows*nb, false)
							w := guardedBytes(t, len(src))
							copy(w, src)
							xd := guarded(t, n*nb)
							for i := range xd {
								xd[i] = 0.01
							}
							xs16 := guarded(t, n*cols/32+1)
							xs := unsafe.Slice((*int16)(unsafe.Pointer(unsafe.SliceData(xs16))), len(xs16)*2)
							xs = xs[len(xs)-n*cols/16:]
							k.matMul(out, w, xq, xd, xs, rows, cols, n)
						}
					}
				}
			}
		})
	}
}

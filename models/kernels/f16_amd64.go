//go:build amd64 && !purego

package kernels

import "unsafe"

//go:noescape
func matVecF16AVX2(out *float32, w *uint16, x *float32, rows, cols int)

//go:noescape
func matMul4x3F16AVX2(out *float32, w *uint16, x *float32, cols, ldo int)

// matVecF16Asm computes rows [r0, r1) of out = w·x (matVecAsm's F16 twin).
func matVecF16Asm(out []float32, w []uint16, x []float32, cols, r0, r1 int) {
	if r1 <= r0 {
		return
	}
	if r0 = rowPairs(out, unsafe.Pointer(unsafe.SliceData(w)), len(w), 2, x, cols, r0, r1); r0 < r1 {
		matVecF16AVX2(&out[r0], ptrAtH(w, r0*cols), unsafe.SliceData(x), r1-r0, cols)
	}
}

// matMulF16Asm is matMulAsm with f16 weights: the same token chunks, 4×3
// tiles and leftovers by the MatVec kernel, so it gives MatMul's bits on the
// widened weights, which are MatVec's.
func matMulF16Asm(out []float32, w []uint16, x []float32, rows, cols, n, r0, r1 int) {
	if r1 <= r0 {
		return
	}
	tc := tokenChunk(cols)
	for t0 := 0; t0 < n; t0 += tc {
		t1 := min(n, t0+tc)
		r := r0
		for ; r+4 <= r1; r += 4 {
			wr := ptrAtH(w, r*cols)
			t := t0
			for ; t+3 <= t1; t += 3 {
				matMul4x3F16AVX2(&out[t*rows+r], wr, ptrAt(x, t*cols), cols, rows)
			}
			for ; t < t1; t++ {
				matVecF16AVX2(&out[t*rows+r], wr, ptrAt(x, t*cols), 4, cols)
			}
		}
		if r < r1 {
			for t := t0; t < t1; t++ {
				matVecF16AVX2(&out[t*rows+r], ptrAtH(w, r*cols), ptrAt(x, t*cols), r1-r, cols)
			}
		}
	}
}

// ptrAtH is &s[i] that also works for i == len(s).
func ptrAtH(s []uint16, i int) *uint16 {
	return (*uint16)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(s)), uintptr(i)*2))
}

//go:noescape
func widenF16AVX2(dst *float32, src *uint16, n int)

// widenF16Asm widens len(src) halves (a multiple of 8) into dst.
func widenF16Asm(dst []float32, src []uint16) {
	widenF16AVX2(unsafe.SliceData(dst), unsafe.SliceData(src), len(src))
}

//go:noescape
func roundF16AVX2(dst, src *float32, n int)

func roundF16Asm(dst, src []float32) {
	roundF16AVX2(unsafe.SliceData(dst), unsafe.SliceData(src), len(src))
}

//go:noescape
func narrowF16AVX2(dst *uint16, src *float32, n int)

// narrowF16Asm narrows len(src) floats (a multiple of 8) into dst.
func narrowF16Asm(dst []uint16, src []float32) {
	narrowF16AVX2(unsafe.SliceData(dst), unsafe.SliceData(src), len(src))
}

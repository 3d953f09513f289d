//go:build amd64 && !purego

package kernels

import "unsafe"

//go:noescape
func matVecILF16AVX512(out *float32, w *uint16, x *float32, cols, ng int)

//go:noescape
func matVecILBF16AVX512(out *float32, w *uint16, x *float32, cols, ng int)

//go:noescape
func matVecILF16AVX2(out *float32, w *uint16, x *float32, cols int)

//go:noescape
func matVecILBF16AVX2(out *float32, w *uint16, x *float32, cols int)

// matVecHalfILAsm computes out[:16·ng], the ng interleaved groups of w
// (weights of kind k) times x[:cols].
func matVecHalfILAsm(k wkind, out []float32, w []uint16, x []float32, cols, ng int) {
	o, wp, xp := unsafe.SliceData(out), unsafe.SliceData(w), unsafe.SliceData(x)
	switch {
	case isa >= isaAVX512 && k == wBF16:
		matVecILBF16AVX512(o, wp, xp, cols, ng)
	case isa >= isaAVX512:
		matVecILF16AVX512(o, wp, xp, cols, ng)
	default:
		gl := halfILGroup(cols)
		for g := range ng {
			if k == wBF16 {
				matVecILBF16AVX2(&out[g*HalfILRows], &w[g*gl], xp, cols)
			} else {
				matVecILF16AVX2(&out[g*HalfILRows], &w[g*gl], xp, cols)
			}
		}
	}
}

//go:noescape
func widenILF16AVX2(dst *float32, src *uint16, nc, rows, ldd int)

//go:noescape
func widenILBF16AVX2(dst *float32, src *uint16, nc, rows, ldd int)

// widenHalfILAsm widens the first nc chunks of rows consecutive rows of an
// interleaved group, the first at src, into dst (rows ldd floats apart).
func widenHalfILAsm(k wkind, dst []float32, src []uint16, nc, rows, ldd int) {
	if k == wBF16 {
		widenILBF16AVX2(unsafe.SliceData(dst), unsafe.SliceData(src), nc, rows, ldd)
	} else {
		widenILF16AVX2(unsafe.SliceData(dst), unsafe.SliceData(src), nc, rows, ldd)
	}
}

//go:noescape
func matMulIL4x3F16AVX2(out *float32, w *uint16, x *float32, cols, ldo int)

//go:noescape
func matMulIL4x3BF16AVX2(out *float32, w *uint16, x *float32, cols, ldo int)

// matMulHalfILAsm computes the whole groups [r0, r1) (multiples of 16) of
// interleaved weights for every token as matMulAsm does float32 rows: the
// same token chunks and 4×3 tiles, four to a group, and the tokens left
// over by the group matvec, so it gives MatMul's bits on the widened
// weights, which are MatVec's.
func matMulHalfILAsm(k wkind, out []float32, w []uint16, x []float32, rows, cols, n, r0, r1 int) {
	gl := halfILGroup(cols)
	tc := tokenChunk(cols)
	for t0 := 0; t0 < n; t0 += tc {
		t1 := min(n, t0+tc)
		for r := r0; r < r1; r += HalfILRows {
			wg := w[r/HalfILRows*gl:]
			t := t0
			for ; t+3 <= t1; t += 3 {
				for i := 0; i < HalfILRows; i += 4 {
					o, wp, xp := &out[t*rows+r+i], &wg[8*i], &x[t*cols]
					if k == wBF16 {
						matMulIL4x3BF16AVX2(o, wp, xp, cols, rows)
					} else {
						matMulIL4x3F16AVX2(o, wp, xp, cols, rows)
					}
				}
			}
			for ; t < t1; t++ {
				matVecHalfILAsm(k, out[t*rows+r:], wg, x[t*cols:], cols, 1)
			}
		}
	}
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

//go:noescape
func roundBF16AVX2(dst, src *float32, n int)

func roundBF16Asm(dst, src []float32) {
	roundBF16AVX2(unsafe.SliceData(dst), unsafe.SliceData(src), len(src))
}

package kernels

import (
	"sync"

	"chat/models/gguf"
)

// F16 weights (and bf16.go's, which share these kernels): IEEE
// half-precision values (as GGUF stores F16 tensors, host byte order) kept
// 2 bytes per weight, interleaved by 16 rows (f16il.go), and widened to
// float32 in registers (VCVTPH2PS on amd64). The conversion is exact, and
// each output is summed in the same lanes and order as MatVec/MatMul on the
// widened float32 weights. The Go kernels copy the rows out row-major
// (halfILRows) for matMulHalfRange and dotHalfGo.

// matMulHalfRange is the Go kernels' product: rows [r0, r1) of every token
// of the row-major 2-byte weights w of kind k, bitwise matMulGoRange's on
// the widened weights.
func matMulHalfRange(k wkind, out []float32, w []uint16, x []float32, rows, cols, n, r0, r1 int) {
	tab := f16Table()
	tc := tokenChunk(cols)
	for t0 := 0; t0 < n; t0 += tc {
		t1 := min(n, t0+tc)
		for r := r0; r < r1; r++ {
			wr := w[r*cols : (r+1)*cols]
			for t := t0; t < t1; t++ {
				out[t*rows+r] = dotHalfGo(k, tab, wr, x[t*cols:(t+1)*cols])
			}
		}
	}
}

// dotHalfGo is the Go kernels' dot product of 2-byte weights of kind k (tab
// the f16 table).
func dotHalfGo(k wkind, tab *[1 << 16]float32, w []uint16, b []float32) float32 {
	if k == wBF16 {
		return dotBF16Go(w, b)
	}
	return dotF16Go(tab, w, b)
}

// RoundF16 sets dst[i] to src[i] rounded to the nearest IEEE half (ties to
// even) and widened back: the activations ggml's f16 products take
// (gguf.F32ToF16 then F16ToF32; a NaN stays a NaN, its payload may differ).
// dst may be src.
func RoundF16(dst, src []float32) {
	dst = dst[:len(src)]
	i := 0
	if useAsm {
		i = len(src) &^ 7
		roundF16Asm(dst[:i], src[:i])
	}
	for ; i < len(src); i++ {
		dst[i] = f16ToF32(gguf.F32ToF16(src[i]))
	}
}

// NarrowF16 sets dst[i] to src[i] as an IEEE half, rounded to nearest even
// (gguf.F32ToF16, VCVTPS2PH): how an f16 KV cache stores a row. A NaN
// stays a NaN, its payload may differ.
func NarrowF16(dst []uint16, src []float32) {
	dst = dst[:len(src)]
	i := 0
	if useAsm {
		i = len(src) &^ 7
		if i > 0 {
			narrowF16Asm(dst[:i], src[:i])
		}
	}
	for ; i < len(src); i++ {
		dst[i] = gguf.F32ToF16(src[i])
	}
}

// f16Tab is f16ToF32 of every half (256 KiB, filled on first use by the Go
// kernels, which look weights up in it).
var (
	f16Once sync.Once
	f16Tab  [1 << 16]float32
)

func f16Table() *[1 << 16]float32 {
	f16Once.Do(func() {
		for h := range f16Tab {
			f16Tab[h] = f16ToF32(uint16(h))
		}
	})
	return &f16Tab
}

// dotF16Go is dotGo with a = f16ToF32(w) looked up in tab.
func dotF16Go(tab *[1 << 16]float32, w []uint16, b []float32) float32 {
	b = b[:len(w)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(w); i += 4 {
		a0, a1, a2, a3 := tab[w[i]], tab[w[i+1]], tab[w[i+2]], tab[w[i+3]]
		s0 += a0 * b[i]
		s1 += a1 * b[i+1]
		s2 += a2 * b[i+2]
		s3 += a3 * b[i+3]
	}
	for ; i < len(w); i++ {
		a := tab[w[i]]
		s0 += a * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// f16ToF32 widens IEEE half-precision bits exactly: the GGUF reader's
// conversion, so weights widened at load and in registers agree.
var f16ToF32 = gguf.F16ToF32

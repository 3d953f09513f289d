package kernels

import (
	"fmt"
	"sync"
	"unsafe"

	"chat/models/gguf"
)

// F16 weights (and bf16.go's, which share these kernels): IEEE
// half-precision values (as GGUF stores F16 tensors, host byte order) kept
// 2 bytes per weight and widened to float32 in registers
// (VCVTPH2PS on amd64). The conversion is exact, and each output is summed
// in the same lanes and order as MatVec/MatMul on the widened float32
// weights, so MatVecF16(w) and MatMulF16(w) give bitwise the results of
// MatVec and MatMul on f16ToF32(w) (gguf.F16ToF32), on every implementation
// and thread count, while reading half the bytes. (MatMulF16Prefill takes
// the GEMM on AVX-512 CPUs (f16gemm.go; on AVX2 widening the rows cost what
// the GEMM saved): then it gives bitwise MatMulPrefill's results on the
// widened weights, not MatVecF16's.) The models keep their weights
// interleaved (f16il.go), whose products give these functions' bits.

// MatVecF16 computes out[r] = Σ_c f32(w[r*cols+c])·x[c] for r < rows, w
// row-major [rows][cols] f16 bits; len(x) >= cols, len(out) >= rows.
func MatVecF16(out []float32, w []uint16, x []float32, rows, cols int) {
	checkF16("MatVecF16", out, w, x, rows, cols, 1)
	matVecHalf(wF16, out, w, x, rows, cols)
}

// MatMulF16 is the batched MatVecF16: for t < n tokens,
// out[t*rows+r] = Σ_c f32(w[r*cols+c])·x[t*cols+c]; out is [n][rows], x is
// [n][cols]. Bitwise equal to n calls of MatVecF16.
func MatMulF16(out []float32, w []uint16, x []float32, rows, cols, n int) {
	checkF16("MatMulF16", out, w, x, rows, cols, n)
	matMulHalf(wF16, out, w, x, rows, cols, n)
}

// matVecHalf is MatVecF16 or MatVecBF16 (k), its operands checked.
func matVecHalf(k wkind, out []float32, w []uint16, x []float32, rows, cols int) {
	if rows*cols >= parallelMin {
		if j := defaultPool.acquire(); j != nil {
			j.op, j.out, j.wh, j.wk, j.x = opMatVecHalf, out, w, k, x
			j.rows, j.cols, j.n = rows, cols, 1
			defaultPool.exec(8) // the kernel's row block
			return
		}
	}
	matVecHalfRange(k, out, w, x, cols, 0, rows)
}

// matMulHalf is MatMulF16 or MatMulBF16 (k), its operands checked.
func matMulHalf(k wkind, out []float32, w []uint16, x []float32, rows, cols, n int) {
	if n == 1 {
		matVecHalf(k, out, w, x, rows, cols)
		return
	}
	if pairTilesOK(cols, n) {
		pairMatMul(out, unsafe.Pointer(unsafe.SliceData(w)), k, false, x, rows, cols, n)
		return
	}
	if rows*cols*n >= parallelMin {
		if j := defaultPool.acquire(); j != nil {
			j.op, j.out, j.wh, j.wk, j.x = opMatMulHalf, out, w, k, x
			j.rows, j.cols, j.n = rows, cols, n
			defaultPool.exec(4) // the tile's rows
			return
		}
	}
	matMulHalfRange(k, out, w, x, rows, cols, n, 0, rows)
}

func checkF16(fn string, out []float32, w []uint16, x []float32, rows, cols, n int) {
	if rows < 0 || cols < 0 || n < 0 ||
		len(w) < rows*cols || len(x) < n*cols || len(out) < n*rows {
		panic(fmt.Sprintf("kernels.%s: rows=%d cols=%d n=%d with len(out)=%d len(w)=%d len(x)=%d",
			fn, rows, cols, n, len(out), len(w), len(x)))
	}
}

func matVecHalfRange(k wkind, out []float32, w []uint16, x []float32, cols, r0, r1 int) {
	if useAsm {
		matVecHalfAsm(k, out, w, x, cols, r0, r1)
		return
	}
	x = x[:cols]
	tab := f16Table()
	for r := r0; r < r1; r++ {
		out[r] = dotHalfGo(k, tab, w[r*cols:(r+1)*cols], x)
	}
}

func matMulHalfRange(k wkind, out []float32, w []uint16, x []float32, rows, cols, n, r0, r1 int) {
	if useAsm {
		matMulHalfAsm(k, out, w, x, rows, cols, n, r0, r1)
		return
	}
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

// Package kernels holds the hot loops of the forward pass: matrix-vector and
// matrix-matrix products, dot products and the small vector ops around them.
//
// Each exported function picks the fastest implementation this CPU supports at
// start-up (ISA, isa.go): AVX2+FMA Go assembly on amd64 CPUs that have it,
// AVX-512 and VNNI variants where they pay, the pure-Go versions elsewhere.
// The pure-Go versions are the reference every SIMD version is tested
// against. CHAT_KERNELS=go|avx2|avx512 in the environment (read once
// at start-up) caps the level; the purego build tag forces the pure-Go
// versions.
//
// Products by weight format (all with AVX2 asm and pure-Go versions; the
// AVX-512 and VNNI variants keep every output's float order, so results do
// not depend on the kernel set unless a doc says so):
//
//   - float32: MatVec, MatMul (batched decode) in AVX-512 pair tiles
//     (pairtile.go) or AVX2 4×3 tiles, bitwise MatVec's; MatMulPrefill, a
//     register-tiled GEMM for the rows of a prefill (gemm.go: its sums are
//     not bitwise MatVec's; CHAT_GEMM=0 turns it off).
//   - float16 and bfloat16 weights interleaved by 16 rows at load
//     (PackHalfIL, f16il.go) and widened in registers: MatMulF16IL,
//     MatMulBF16IL, bitwise equal to MatVec/MatMul on the widened weights,
//     and MatMulF16ILPrefill, MatMulBF16ILPrefill (the GEMM on AVX-512,
//     f16gemm.go).
//   - quantized weights dequantized in registers against float32 activations,
//     bitwise MatVec/MatMul of the dequantized weights: int8 with a scale per
//     row (the course's exact Int8Linear), MatVecI8F32 and MatMulI8F32
//     (i8f32.go); FP8 E4M3/E5M2 with a scale per row, MatVecFP8 and MatMulFP8
//     (qf.go); 4-bit codes through 16 levels with a scale per group (int4
//     groups, NF4), MatVecLUT4 and MatMulLUT4 (lut4.go). ScaleI8,
//     DequantizeFP8 and DequantizeLUT4 write those weights.
//   - int8, activations quantized by the caller once per vector: MatVecI8
//     (per-row scales) and its batched MatMulI8 (quant.go, batch.go).
//   - 32-value integer blocks interleaved by 16 rows (ilblock.go): GGUF
//     Q8_0, Q5_0 and Q4_0 and int4 groups, repacked at load (PackILQ8_0,
//     ...), with a Q8_0 activation (ILAct); MatMulIL for any number of
//     tokens, one exact int32 sum and one FMA per block for each (row, token).
//   - GGUF K-quants as the raw tensor bytes (qblock.go): MatVecQ2_K ...
//     MatVecQ6_K with a Q8_K activation (QuantizeQ8_K); batched
//     MatMulQ2_K ... MatMulQ6_K (batch.go), with register tiles for them and
//     the per-row int8 (qtile.go); MatVecIQ4_XS likewise. On AVX-512 VNNI
//     hosts the K-quants and IQ4_XS are repacked at load into 16-row
//     groups instead (PackILK, ilk.go) and multiplied by MatMulILK, bitwise
//     their MatVec.
//
// Softmax (softmax.go) runs on the vectorised float32 exponential of
// exp.go, where SwiGLU fuses the gated MLP activation; TorchSwiGLU
// (torchsilu.go) is the course's float64 SiLU, bitwise the scalar one on
// Go's math.Exp; AttnScores and
// AttnMixAdd (attn.go) run attention over a run of cached positions in one
// call.
//
// MatVec and MatMul split their rows over a persistent worker pool (see
// SetThreads). Every output element is computed by one worker with the same
// kernel and summation order, so results do not depend on the thread count,
// and MatMul gives exactly the bits of repeated MatVec calls (MatMulPrefill
// the bits of itself in any batch).
//
// Concurrency: all functions may be called from several goroutines at once.
// The engine calls them from one goroutine; a second concurrent caller does not
// wait for the pool but computes its product on its own goroutine.
package kernels

import (
	"fmt"
	"unsafe"
)

// MatVec computes out[r] = dot(w[r*cols:(r+1)*cols], x) for r < rows.
// w is row-major [rows][cols]; len(x) >= cols, len(out) >= rows.
func MatVec(out, w, x []float32, rows, cols int) {
	checkMat("MatVec", out, w, x, rows, cols, 1)
	if rows*cols < parallelMin || !defaultPool.run(opMatVec, out, w, x, rows, cols, 1) {
		matVecRange(out, w, x, cols, 0, rows)
	}
}

// MatMul is the batched product: for t < n tokens,
// out[t*rows+r] = dot(w[r*cols:(r+1)*cols], x[t*cols:(t+1)*cols]).
// So out is [n][rows] and x is [n][cols], both row-major. Each weight row is
// read once per tile of tokens instead of once per token. The result is
// bitwise equal to n calls of MatVec.
func MatMul(out, w, x []float32, rows, cols, n int) {
	checkMat("MatMul", out, w, x, rows, cols, n)
	if n == 1 {
		MatVec(out, w, x, rows, cols)
		return
	}
	if pairTilesOK(cols, n) {
		pairMatMul(out, unsafe.Pointer(unsafe.SliceData(w)), wF32, x, rows, cols, n)
		return
	}
	if rows*cols*n < parallelMin || !defaultPool.run(opMatMul, out, w, x, rows, cols, n) {
		matMulRange(out, w, x, rows, cols, n, 0, rows)
	}
}

// MatMulPrefill is MatMul for the rows of a prefill: the register-tiled GEMM
// (gemm.go) where it runs, whose sums round in another order than MatVec's
// but give every row the same bits for any n, tile and thread count; MatMul
// where it does not.
func MatMulPrefill(out, w, x []float32, rows, cols, n int) {
	checkMat("MatMulPrefill", out, w, x, rows, cols, n)
	if n > 0 && gemmOK(rows, cols) {
		gemmMatMul(out, w, x, rows, cols, n)
		return
	}
	MatMul(out, w, x, rows, cols, n)
}

// Dot returns the dot product of a and b[:len(a)].
func Dot(a, b []float32) float32 {
	b = b[:len(a)]
	if useAsm {
		return dotAsm(a, b)
	}
	return dotGo(a, b)
}

// Axpy computes y[i] += alpha*x[i] for i < len(x). The assembly version
// rounds once per element (fused multiply-add), the Go version twice.
func Axpy(alpha float32, x, y []float32) {
	y = y[:len(x)]
	if useAsm {
		axpyAsm(alpha, x, y)
		return
	}
	axpyGo(alpha, x, y)
}

// checkMat panics unless the slices hold the product's operands: the assembly
// kernels do no bounds checking of their own.
func checkMat(fn string, out, w, x []float32, rows, cols, n int) {
	if rows < 0 || cols < 0 || n < 0 ||
		len(w) < rows*cols || len(x) < n*cols || len(out) < n*rows {
		panic(fmt.Sprintf("kernels.%s: rows=%d cols=%d n=%d with len(out)=%d len(w)=%d len(x)=%d",
			fn, rows, cols, n, len(out), len(w), len(x)))
	}
}

// matVecRange computes rows [r0, r1) of out = w·x.
func matVecRange(out, w, x []float32, cols, r0, r1 int) {
	if useAsm {
		matVecAsm(out, w, x, cols, r0, r1)
		return
	}
	matVecGoRange(out, w, x, cols, r0, r1)
}

// matMulRange computes rows [r0, r1) of every token of the batched product.
func matMulRange(out, w, x []float32, rows, cols, n, r0, r1 int) {
	if useAsm {
		matMulAsm(out, w, x, rows, cols, n, r0, r1)
		return
	}
	matMulGoRange(out, w, x, rows, cols, n, r0, r1)
}

// tokenChunk is how many tokens of activations (about 192 KiB of them, so they
// stay in L2 with the weight tile) MatMul runs against each weight block; a
// multiple of 3, the token width of the assembly tile.
func tokenChunk(cols int) int {
	t := (192 << 10) / 4 / max(cols, 1)
	return max(3, t-t%3)
}

func dotGo(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func matVecGo(out, w, x []float32, rows, cols int) {
	matVecGoRange(out, w, x, cols, 0, rows)
}

func matVecGoRange(out, w, x []float32, cols, r0, r1 int) {
	x = x[:cols]
	for r := r0; r < r1; r++ {
		out[r] = dotGo(w[r*cols:(r+1)*cols], x)
	}
}

func matMulGoRange(out, w, x []float32, rows, cols, n, r0, r1 int) {
	tc := tokenChunk(cols)
	for t0 := 0; t0 < n; t0 += tc {
		t1 := min(n, t0+tc)
		for r := r0; r < r1; r++ {
			wr := w[r*cols : (r+1)*cols]
			for t := t0; t < t1; t++ {
				out[t*rows+r] = dotGo(wr, x[t*cols:(t+1)*cols])
			}
		}
	}
}

func axpyGo(alpha float32, x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * v
	}
}

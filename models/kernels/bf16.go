package kernels

import (
	"math"

	"chat/models/gguf"
)

// BF16 weights: bfloat16 values (the top 16 bits of a float32, as GGUF
// stores BF16 tensors, host byte order) kept 2 bytes per weight and widened
// to float32 in registers (a 16-bit shift: exact). They take the f16
// kernels' code with another widening step (f16.go, halfmv_amd64.h, the pair
// tiles), so MatVecBF16, MatMulBF16 and MatMulBF16Prefill keep the
// contracts of MatVecF16, MatMulF16 and MatMulF16Prefill: the bits of
// MatVec and MatMul on bf16ToF32(w) on every implementation and thread
// count (the prefill's GEMM on AVX-512 CPUs: MatMulPrefill's), while
// reading half the bytes.

// MatVecBF16 computes out[r] = Σ_c f32(w[r*cols+c])·x[c] for r < rows, w
// row-major [rows][cols] bf16 bits; len(x) >= cols, len(out) >= rows.
func MatVecBF16(out []float32, w []uint16, x []float32, rows, cols int) {
	checkF16("MatVecBF16", out, w, x, rows, cols, 1)
	matVecHalf(wBF16, out, w, x, rows, cols)
}

// MatMulBF16 is the batched MatVecBF16: for t < n tokens,
// out[t*rows+r] = Σ_c f32(w[r*cols+c])·x[t*cols+c]; out is [n][rows], x is
// [n][cols]. Bitwise equal to n calls of MatVecBF16.
func MatMulBF16(out []float32, w []uint16, x []float32, rows, cols, n int) {
	checkF16("MatMulBF16", out, w, x, rows, cols, n)
	matMulHalf(wBF16, out, w, x, rows, cols, n)
}

// MatMulBF16Prefill is MatMulBF16 for the rows of a prefill
// (MatMulPrefill's contract): the GEMM on AVX-512 CPUs, MatMulBF16
// elsewhere, as MatMulF16Prefill.
func MatMulBF16Prefill(out []float32, w []uint16, x []float32, rows, cols, n int) {
	checkF16("MatMulBF16Prefill", out, w, x, rows, cols, n)
	halfPrefill(wBF16, out, w, x, rows, cols, n)
}

// RoundBF16 sets dst[i] to src[i] rounded to bfloat16 (nearest even, a NaN
// kept quiet: gguf.F32ToBF16) and widened back: the activations ggml's bf16
// products take. dst may be src.
func RoundBF16(dst, src []float32) {
	dst = dst[:len(src)]
	i := 0
	if useAsm {
		i = len(src) &^ 7
		roundBF16Asm(dst[:i], src[:i])
	}
	for ; i < len(src); i++ {
		dst[i] = bf16ToF32(gguf.F32ToBF16(src[i]))
	}
}

// WidenBF16 sets dst[i] = bf16ToF32(src[i]), exactly: bf16 weights widened
// for the GEMM.
func WidenBF16(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	i := 0
	if useAsm {
		i = len(src) &^ 7
		if i > 0 {
			widenBF16Asm(dst[:i], src[:i])
		}
	}
	for ; i < len(src); i++ {
		dst[i] = bf16ToF32(src[i])
	}
}

// dotBF16Go is dotGo with a = bf16ToF32(w).
func dotBF16Go(w []uint16, b []float32) float32 {
	b = b[:len(w)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(w); i += 4 {
		a0, a1, a2, a3 := bf16ToF32(w[i]), bf16ToF32(w[i+1]), bf16ToF32(w[i+2]), bf16ToF32(w[i+3])
		s0 += a0 * b[i]
		s1 += a1 * b[i+1]
		s2 += a2 * b[i+2]
		s3 += a3 * b[i+3]
	}
	for ; i < len(w); i++ {
		s0 += bf16ToF32(w[i]) * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// bf16ToF32 widens bfloat16 bits exactly (gguf.BF16ToF32, inlined).
func bf16ToF32(h uint16) float32 { return math.Float32frombits(uint32(h) << 16) }

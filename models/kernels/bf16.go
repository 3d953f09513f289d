package kernels

import (
	"math"

	"chat/models/gguf"
)

// BF16 weights: bfloat16 values (the top 16 bits of a float32, as GGUF
// stores BF16 tensors, host byte order) kept 2 bytes per weight and widened
// to float32 in registers (a 16-bit shift: exact). They take the f16
// kernels' code with another widening step (f16.go, halfmv_amd64.h, the pair
// tiles), so their products keep the f16 ones' contracts (f16il.go).

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

package gguf

import "testing"

func BenchmarkDequantize(b *testing.B) {
	for _, typ := range []Type{TypeQ8_0, TypeQ4_0, TypeQ4_K, TypeQ6_K, TypeF16} {
		b.Run(typ.String(), func(b *testing.B) {
			n := 1 << 16
			src := make([]byte, n/typ.BlockSize()*typ.BlockBytes())
			for i := range src {
				src[i] = byte(i * 7)
			}
			dst := make([]float32, n)
			b.SetBytes(int64(4 * n))
			for b.Loop() {
				Dequantize(typ, src, dst)
			}
		})
	}
}

func BenchmarkQuantize(b *testing.B) {
	r := &splitMix{s: 7}
	x := make([]float32, 1<<16)
	for i := range x {
		x[i] = float32(0.02 * r.bell())
	}
	for _, typ := range []Type{TypeQ8_0, TypeQ4_0, TypeQ4_1, TypeQ5_0, TypeQ5_1, TypeQ2_K, TypeQ3_K, TypeQ4_K, TypeQ5_K, TypeQ6_K} {
		b.Run(typ.String(), func(b *testing.B) {
			b.SetBytes(int64(4 * len(x)))
			for b.Loop() {
				Quantize(typ, x)
			}
		})
	}
}

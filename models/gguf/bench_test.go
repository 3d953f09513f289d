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

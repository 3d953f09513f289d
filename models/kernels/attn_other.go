//go:build !amd64 || purego

package kernels

func attnScoresAsm(scores, q, k []float32, stride, n int, scale float32) {
	attnScoresGo(scores, q, k, stride, n, scale)
}

func attnMixAsm(out, w, v []float32, stride, n int) { attnMixGo(out, w, v, stride, n) }

func attnRowsScoresF32Asm(scores, q, k []float32, kvh []int32, d, n, sstride, kstride int, scale float32) {
	panic("kernels: no asm")
}

func attnRowsMixF32Asm(out, w, v []float32, kvh []int32, d, n, wstride, vstride int) {
	panic("kernels: no asm")
}

func attnRowsScoresF16Asm(scores, q []float32, k []uint16, scales []float32, kvh []int32, d, n, sstride, kstride, hkv int, scale float32) {
	panic("kernels: no asm")
}

func attnRowsMixF16Asm(out, w []float32, v []uint16, scales []float32, kvh []int32, d, n, wstride, vstride, hkv int) {
	panic("kernels: no asm")
}

func attnRowsScoresI8Asm(scores, q []float32, k []int8, scales []float32, kvh []int32, d, n, sstride, kstride, hkv int, scale float32) {
	panic("kernels: no asm")
}

func attnRowsMixI8Asm(out, w []float32, v []int8, scales []float32, kvh []int32, d, n, wstride, vstride, hkv int) {
	panic("kernels: no asm")
}

func attnRowsScoresFP8Asm(scores, q []float32, k []uint8, scales []float32, kvh []int32, d, n, sstride, kstride, hkv int, scale float32) {
	panic("kernels: no asm")
}

func attnRowsMixFP8Asm(out, w []float32, v []uint8, scales []float32, kvh []int32, d, n, wstride, vstride, hkv int) {
	panic("kernels: no asm")
}

//go:build amd64 && !purego

package kernels

import "unsafe"

//go:noescape
func absMaxAVX2(x *float32, n int) (amax float32, nan bool)

//go:noescape
func divRoundI8AVX2(q *int8, x *float32, s float32, n int)

// absMaxAsm and divRoundI8Asm take a multiple of 16 values.
func absMaxAsm(x []float32) (float32, bool) { return absMaxAVX2(unsafe.SliceData(x), len(x)) }

func divRoundI8Asm(q []int8, x []float32, s float32) {
	divRoundI8AVX2(unsafe.SliceData(q), unsafe.SliceData(x), s, len(x))
}

//go:noescape
func divEncodeE4M3AVX2(q *uint8, x *float32, s float32, n int)

func divEncodeE4M3Asm(q []uint8, x []float32, s float32) {
	divEncodeE4M3AVX2(unsafe.SliceData(q), unsafe.SliceData(x), s, len(x))
}

//go:noescape
func divRoundInt4AVX2(packed *byte, x *float32, s float32, n int)

func divRoundInt4Asm(packed []byte, x []float32, s float32) {
	divRoundInt4AVX2(unsafe.SliceData(packed), unsafe.SliceData(x), s, len(x))
}

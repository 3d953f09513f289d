//go:build amd64 && !purego

package kernels

import "unsafe"

//go:noescape
func scaleI8AVX2(dst *float32, q *int8, s float32, n int)

// scaleI8Asm converts 8 values per step; the tail goes through Go.
func scaleI8Asm(dst []float32, q []int8, s float32) {
	n := len(q) &^ 7
	scaleI8AVX2(unsafe.SliceData(dst), unsafe.SliceData(q), s, n)
	scaleI8Go(dst[n:], q[n:], s)
}

//go:noescape
func scaleI8RowsAVX2(dst *float32, q *int8, sc *float32, d, n int)

func scaleI8RowsAsm(dst []float32, q []int8, sc []float32, d int) {
	scaleI8RowsAVX2(unsafe.SliceData(dst), unsafe.SliceData(q), unsafe.SliceData(sc), d, len(sc))
}

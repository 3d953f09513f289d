//go:build amd64 && !purego

package kernels

import "unsafe"

//go:noescape
func attnScoresAVX2(scores, q, k *float32, d, stride, n int, scale float32)

//go:noescape
func attnMixAVX2(out, w, v *float32, d, stride, n int)

func attnScoresAsm(scores, q, k []float32, stride, n int, scale float32) {
	attnScoresAVX2(unsafe.SliceData(scores), unsafe.SliceData(q), unsafe.SliceData(k), len(q), stride, n, scale)
}

func attnMixAsm(out, w, v []float32, stride, n int) {
	attnMixAVX2(unsafe.SliceData(out), unsafe.SliceData(w), unsafe.SliceData(v), len(out), stride, n)
}

//go:noescape
func attnScoresF16AVX2(scores, q *float32, k *uint16, d, stride, n int, scale float32)

//go:noescape
func attnMixF16AVX2(out, w *float32, v *uint16, d, stride, n int)

func attnScoresF16Asm(scores, q []float32, k []uint16, stride, n int, scale float32) {
	attnScoresF16AVX2(unsafe.SliceData(scores), unsafe.SliceData(q), unsafe.SliceData(k), len(q), stride, n, scale)
}

func attnMixF16Asm(out, w []float32, v []uint16, stride, n int) {
	attnMixF16AVX2(unsafe.SliceData(out), unsafe.SliceData(w), unsafe.SliceData(v), len(out), stride, n)
}

//go:noescape
func attnRowsScoresF16AVX2(scores, q *float32, k *uint16, koff *int32, heads, d, n, sstride, kstride int, scale float32)

//go:noescape
func attnRowsMixF16AVX2(out, w *float32, v *uint16, voff *int32, heads, d, n, wstride, vstride int)

// The row kernels (attnrows_amd64.s) take the score and weight strides in
// bytes, offsets and row strides in elements.

func attnRowsScoresF16Asm(scores, q []float32, k []uint16, koff []int32, d, n, sstride, kstride int, scale float32) {
	attnRowsScoresF16AVX2(unsafe.SliceData(scores), unsafe.SliceData(q), unsafe.SliceData(k), unsafe.SliceData(koff), len(koff), d, n, 4*sstride, kstride, scale)
}

func attnRowsMixF16Asm(out, w []float32, v []uint16, voff []int32, d, n, wstride, vstride int) {
	attnRowsMixF16AVX2(unsafe.SliceData(out), unsafe.SliceData(w), unsafe.SliceData(v), unsafe.SliceData(voff), len(voff), d, n, 4*wstride, vstride)
}

//go:noescape
func attnRowsScoresI8AVX2(scores, q *float32, k *int8, sc *float32, kvh *int32, heads, d, n, sstride, kstride, hkv int, scale float32)

//go:noescape
func attnRowsMixI8AVX2(out, w *float32, v *int8, sc *float32, kvh *int32, heads, d, n, wstride, vstride, hkv int)

// The int8 row kernels (attnrowsi8_amd64.s) take the score and weight
// strides in bytes, row strides in bytes (= elements).

func attnRowsScoresI8Asm(scores, q []float32, k []int8, scales []float32, kvh []int32, d, n, sstride, kstride, hkv int, scale float32) {
	attnRowsScoresI8AVX2(unsafe.SliceData(scores), unsafe.SliceData(q), unsafe.SliceData(k), unsafe.SliceData(scales), unsafe.SliceData(kvh), len(kvh), d, n, 4*sstride, kstride, hkv, scale)
}

func attnRowsMixI8Asm(out, w []float32, v []int8, scales []float32, kvh []int32, d, n, wstride, vstride, hkv int) {
	attnRowsMixI8AVX2(unsafe.SliceData(out), unsafe.SliceData(w), unsafe.SliceData(v), unsafe.SliceData(scales), unsafe.SliceData(kvh), len(kvh), d, n, 4*wstride, vstride, hkv)
}

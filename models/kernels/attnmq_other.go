//go:build !amd64 || purego

package kernels

// No group kernels without the assembly: the group functions are
// per-query calls.
const mqHasAsm = false

func mqScoresAVX512(scores, qt, k *float32, kvh *int32, masks *uint8, heads, d, n, sstride, qsstride, kstride int, scale float32) {
	panic("kernels: no asm")
}

func mqMixAVX512(zmm int, out, w, v *float32, from, to *int32, nq, n, a, b, ostride, wqstride, vstride int) {
	panic("kernels: no asm")
}

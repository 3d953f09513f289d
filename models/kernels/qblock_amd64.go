//go:build amd64 && !purego

package kernels

import "unsafe"

//go:noescape
func q40DotsAVX2(out *float32, w *byte, x *int8, xd *float32, rows, nb int)

//go:noescape
func q80BDotsAVX2(out *float32, w *byte, x *int8, xd *float32, rows, nb int)

//go:noescape
func q50DotsAVX2(out *float32, w *byte, x *int8, xd *float32, rows, nb int)

//go:noescape
func q4KDotsAVX2(out *float32, w *byte, x *int8, xd *float32, xs *int16, rows, nb int)

//go:noescape
func q5KDotsAVX2(out *float32, w *byte, x *int8, xd *float32, xs *int16, rows, nb int)

//go:noescape
func q6KDotsAVX2(out *float32, w *byte, x *int8, xd *float32, xs *int16, rows, nb int)

//go:noescape
func q40DotsVNNI512(out *float32, w *byte, x *int8, xd *float32, rows, nb int, ws *float32, gb, sstride int)

//go:noescape
func q50DotsVNNI512(out *float32, w *byte, x *int8, xd *float32, rows, nb int, ws *float32, gb, sstride int)

//go:noescape
func q80bDotsVNNI512(out *float32, w *byte, x *int8, xd *float32, rows, nb int, ws *float32, gb, sstride int)

//go:noescape
func i4q8DotsVNNI512(out *float32, w *byte, x *int8, xd *float32, rows, nb int, ws *float32, gb, sstride int)

//go:noescape
func q4kDotsVNNI512(out *float32, w *byte, x *int8, xd *float32, xs *int16, rows, nb int)

//go:noescape
func q5kDotsVNNI512(out *float32, w *byte, x *int8, xd *float32, xs *int16, rows, nb int)

//go:noescape
func q6kDotsVNNI512(out *float32, w *byte, x *int8, xd *float32, xs *int16, rows, nb int)

//go:noescape
func i4q8DotsAVX2(out *float32, w *byte, x *int8, xd *float32, rows, nb int, ws *float32, gb, sstride int)

// blockDotsAsm computes len(out) rows of a block product; w (and ws, the
// int4 groups' scales) start at the first of them and the operands have
// been checked.
func blockDotsAsm(op int, out []float32, w []byte, ws []float32, gb int, xq []int8, xd []float32, xsums []int16, nb int) {
	o, wp, xp, dp, sp := unsafe.SliceData(out), unsafe.SliceData(w), unsafe.SliceData(xq), unsafe.SliceData(xd), unsafe.SliceData(xsums)
	if op == opMatVecI4Q8 {
		ss := 4 * ((nb + gb - 1) / gb)
		if isa >= isaAVX512VNNI {
			i4q8DotsVNNI512(o, wp, xp, dp, len(out), nb, unsafe.SliceData(ws), gb, ss)
		} else {
			i4q8DotsAVX2(o, wp, xp, dp, len(out), nb, unsafe.SliceData(ws), gb, ss)
		}
		return
	}
	if isa >= isaAVX512VNNI {
		switch op {
		case opMatVecQ4_0:
			q40DotsVNNI512(o, wp, xp, dp, len(out), nb, nil, 0, 0)
			return
		case opMatVecQ8B:
			q80bDotsVNNI512(o, wp, xp, dp, len(out), nb, nil, 0, 0)
			return
		case opMatVecQ5_0:
			q50DotsVNNI512(o, wp, xp, dp, len(out), nb, nil, 0, 0)
			return
		case opMatVecQ4K:
			q4kDotsVNNI512(o, wp, xp, dp, sp, len(out), nb)
			return
		case opMatVecQ5K:
			q5kDotsVNNI512(o, wp, xp, dp, sp, len(out), nb)
			return
		case opMatVecQ6K:
			q6kDotsVNNI512(o, wp, xp, dp, sp, len(out), nb)
			return
		}
	}
	switch op {
	case opMatVecQ4_0:
		q40DotsAVX2(o, wp, xp, dp, len(out), nb)
	case opMatVecQ8B:
		q80BDotsAVX2(o, wp, xp, dp, len(out), nb)
	case opMatVecQ5_0:
		q50DotsAVX2(o, wp, xp, dp, len(out), nb)
	case opMatVecQ4K:
		q4KDotsAVX2(o, wp, xp, dp, sp, len(out), nb)
	case opMatVecQ5K:
		q5KDotsAVX2(o, wp, xp, dp, sp, len(out), nb)
	case opMatVecQ6K:
		q6KDotsAVX2(o, wp, xp, dp, sp, len(out), nb)
	}
}

//go:noescape
func expAVX2(dst, x *float32, n int)

//go:noescape
func softmaxExpAVX2(x *float32, n int, m float32) float32

//go:noescape
func swigluAVX2(gate, up *float32, n int)

func swigluAsm(gate, up []float32) {
	swigluAVX2(unsafe.SliceData(gate), unsafe.SliceData(up), len(gate))
}

//go:noescape
func maxAVX2(x *float32, n int) float32

//go:noescape
func scaleAVX2(x *float32, n int, s float32)

func maxAsm(x []float32) float32 { return maxAVX2(unsafe.SliceData(x), len(x)) }

func scaleAsm(x []float32, s float32) { scaleAVX2(unsafe.SliceData(x), len(x), s) }

func expAsm(dst, x []float32) { expAVX2(unsafe.SliceData(dst), unsafe.SliceData(x), len(x)) }

func softmaxExpAsm(x []float32, m float32) float32 {
	return softmaxExpAVX2(unsafe.SliceData(x), len(x), m)
}

//go:build amd64 && !purego

package kernels

import "unsafe"

//go:noescape
func q4KDotsAVX2(out *float32, w *byte, x *int8, xd *float32, xs *int16, rows, nb int)

//go:noescape
func q5KDotsAVX2(out *float32, w *byte, x *int8, xd *float32, xs *int16, rows, nb int)

//go:noescape
func q6KDotsAVX2(out *float32, w *byte, x *int8, xd *float32, xs *int16, rows, nb int)

//go:noescape
func iq4xsDotsAVX2(out *float32, w *byte, x *int8, xd *float32, xs *int16, rows, nb int)

//go:noescape
func q2KDotsAVX2(out *float32, w *byte, x *int8, xd *float32, xs *int16, rows, nb int)

//go:noescape
func q3KDotsAVX2(out *float32, w *byte, x *int8, xd *float32, xs *int16, rows, nb int)

//go:noescape
func q2kDotsVNNI512(out *float32, w *byte, x *int8, xd *float32, xs *int16, rows, nb int)

//go:noescape
func q3kDotsVNNI512(out *float32, w *byte, x *int8, xd *float32, xs *int16, rows, nb int)

//go:noescape
func q4kDotsVNNI512(out *float32, w *byte, x *int8, xd *float32, xs *int16, rows, nb int)

//go:noescape
func q5kDotsVNNI512(out *float32, w *byte, x *int8, xd *float32, xs *int16, rows, nb int)

//go:noescape
func q6kDotsVNNI512(out *float32, w *byte, x *int8, xd *float32, xs *int16, rows, nb int)

// blockDotsAsm computes len(out) rows of a K-quant block product; w starts
// at the first of them and the operands have been checked.
func blockDotsAsm(op int, out []float32, w []byte, xq []int8, xd []float32, xsums []int16, nb int) {
	o, wp, xp, dp, sp := unsafe.SliceData(out), unsafe.SliceData(w), unsafe.SliceData(xq), unsafe.SliceData(xd), unsafe.SliceData(xsums)
	switch {
	case op == opMatVecQ4K && isa >= isaAVX512VNNI:
		q4kDotsVNNI512(o, wp, xp, dp, sp, len(out), nb)
	case op == opMatVecQ5K && isa >= isaAVX512VNNI:
		q5kDotsVNNI512(o, wp, xp, dp, sp, len(out), nb)
	case op == opMatVecQ6K && isa >= isaAVX512VNNI:
		q6kDotsVNNI512(o, wp, xp, dp, sp, len(out), nb)
	case op == opMatVecQ2K && isa >= isaAVX512VNNI:
		q2kDotsVNNI512(o, wp, xp, dp, sp, len(out), nb)
	case op == opMatVecQ3K && isa >= isaAVX512VNNI:
		q3kDotsVNNI512(o, wp, xp, dp, sp, len(out), nb)
	case op == opMatVecQ4K:
		q4KDotsAVX2(o, wp, xp, dp, sp, len(out), nb)
	case op == opMatVecQ5K:
		q5KDotsAVX2(o, wp, xp, dp, sp, len(out), nb)
	case op == opMatVecQ6K:
		q6KDotsAVX2(o, wp, xp, dp, sp, len(out), nb)
	case op == opMatVecIQ4XS:
		iq4xsDotsAVX2(o, wp, xp, dp, sp, len(out), nb)
	case op == opMatVecQ2K:
		q2KDotsAVX2(o, wp, xp, dp, sp, len(out), nb)
	case op == opMatVecQ3K:
		q3KDotsAVX2(o, wp, xp, dp, sp, len(out), nb)
	}
}

//go:noescape
func quantQ8KAVX2(q *int8, d *float32, sums *int16, x *float32, nb int)

// quantQ8KAsm is QuantizeQ8_K's loop, the operands checked and len(x) > 0.
func quantQ8KAsm(q []int8, d []float32, sums []int16, x []float32) {
	quantQ8KAVX2(unsafe.SliceData(q), unsafe.SliceData(d), unsafe.SliceData(sums), unsafe.SliceData(x), len(x)/QK)
}

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

//go:noescape
func scaleMulAVX2(out, x, w *float32, n int, s float32)

func scaleMulAsm(out, x, w []float32, s float32) {
	scaleMulAVX2(unsafe.SliceData(out), unsafe.SliceData(x), unsafe.SliceData(w), len(x), s)
}

//go:noescape
func ropePairsAVX2(x, c, s *float32, n int)

//go:noescape
func ropeHalvesAVX2(x1, x2, c, s *float32, n int)

func ropePairsAsm(x, c, s []float32) {
	ropePairsAVX2(unsafe.SliceData(x), unsafe.SliceData(c), unsafe.SliceData(s), len(c))
}

func ropeHalvesAsm(x1, x2, c, s []float32) {
	ropeHalvesAVX2(unsafe.SliceData(x1), unsafe.SliceData(x2), unsafe.SliceData(c), unsafe.SliceData(s), len(c))
}

func maxAsm(x []float32) float32 { return maxAVX2(unsafe.SliceData(x), len(x)) }

func scaleAsm(x []float32, s float32) { scaleAVX2(unsafe.SliceData(x), len(x), s) }

func softmaxExpAsm(x []float32, m float32) float32 {
	return softmaxExpAVX2(unsafe.SliceData(x), len(x), m)
}

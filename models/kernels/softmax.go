package kernels

// Softmax replaces x with softmax(x) in place: e^(x[i]-max) / Σ e^(x[j]-max),
// with the max subtracted first so nothing overflows. The exponentials are
// exp32's (max relative error < 2e-7, the same bits in asm and Go), summed in
// float32 in 8 interleaved lanes (element i in lane i%8, reduced as
// ((l0+l4)+(l2+l6))+((l1+l5)+(l3+l7))), then scaled by the float32
// reciprocal of the sum; so results are within a few float32 roundings of
// the exact softmax and identical on every implementation. -Inf entries
// (masked positions) become 0.
func Softmax(x []float32) {
	if len(x) == 0 {
		return
	}
	if useAsm {
		// The max is exact and the scaling one rounding per element, so
		// these give the Go loops' bits.
		inv := 1 / softmaxExp(x, maxAsm(x))
		scaleAsm(x, inv)
		return
	}
	m := x[0]
	for _, v := range x[1:] {
		if v > m {
			m = v
		}
	}
	inv := 1 / softmaxExp(x, m)
	for i := range x {
		x[i] *= inv
	}
}

// ScaleMul sets out[i] = x[i]·s·w[i] for i < len(x), each product rounded
// to float32 in that order (an RMSNorm's scale and weight); out may be x.
func ScaleMul(out, x, w []float32, s float32) {
	out, w = out[:len(x)], w[:len(x)]
	if useAsm {
		scaleMulAsm(out, x, w, s)
		return
	}
	for i, v := range x {
		out[i] = v * s * w[i]
	}
}

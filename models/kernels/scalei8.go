package kernels

// ScaleI8 sets dst[i] = float32(q[i]) * s for i < len(q): one row of int8
// weights turned back into the float32 values the course's Int8Linear
// multiplies with (W' = Q·scale). Each product is one float32 rounding in
// both versions, so the assembly and Go give the same bits.
func ScaleI8(dst []float32, q []int8, s float32) {
	if len(dst) < len(q) {
		panic("kernels: ScaleI8: dst shorter than q")
	}
	if useAsm && len(q) >= 8 {
		scaleI8Asm(dst, q, s)
		return
	}
	scaleI8Go(dst, q, s)
}

func scaleI8Go(dst []float32, q []int8, s float32) {
	dst = dst[:len(q)]
	for i, v := range q {
		dst[i] = float32(v) * s
	}
}

// ScaleI8Rows is ScaleI8 over len(sc) runs of d values, run i scaled by
// sc[i]: a block of an int8 KV cache (a scale per position and head)
// decoded in one call rather than one a head, whose call overhead cost
// more than the conversion at heads of 64 values. Each value has ScaleI8's
// bits.
func ScaleI8Rows(dst []float32, q []int8, sc []float32, d int) {
	n := len(sc) * d
	if d < 0 || len(q) < n || len(dst) < n {
		panic("kernels: ScaleI8Rows: slices shorter than len(sc) runs of d")
	}
	if useAsm && d%8 == 0 && d > 0 && len(sc) > 0 {
		scaleI8RowsAsm(dst, q, sc, d)
		return
	}
	for i, s := range sc {
		scaleI8Go(dst[i*d:(i+1)*d], q[i*d:(i+1)*d], s)
	}
}

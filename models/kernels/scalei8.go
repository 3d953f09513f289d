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

package kernels

// The rotary embedding's rotations, with the rounding of torch's and ggml's
// C: each product rounded to float32 before the sum (no fused multiply-add).

// RopePairs rotates the pairs (x[2i], x[2i+1]) by (c[i], s[i]) for
// i < len(c) (ggml's NORM layout): a·c - b·s and a·s + b·c.
func RopePairs(x, c, s []float32) {
	n := len(c)
	x, s = x[:2*n], s[:n]
	i := 0
	if useAsm && n >= 4 {
		i = n &^ 3
		ropePairsAsm(x, c[:i], s)
	}
	for ; i < n; i++ {
		a, b := x[2*i], x[2*i+1]
		x[2*i] = float32(a*c[i]) - float32(b*s[i])
		x[2*i+1] = float32(a*s[i]) + float32(b*c[i])
	}
}

// RopeHalves rotates the pairs (x1[i], x2[i]) by (c[i], s[i]) for
// i < len(c) (the NeoX layout, a head's halves): a·c - b·s and a·s + b·c.
func RopeHalves(x1, x2, c, s []float32) {
	n := len(c)
	x1, x2, s = x1[:n], x2[:n], s[:n]
	i := 0
	if useAsm && n >= 8 {
		i = n &^ 7
		ropeHalvesAsm(x1, x2, c[:i], s)
	}
	for ; i < n; i++ {
		a, b := x1[i], x2[i]
		x1[i] = float32(a*c[i]) - float32(b*s[i])
		x2[i] = float32(a*s[i]) + float32(b*c[i])
	}
}

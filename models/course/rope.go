package course

import "math"

// rope holds the course's RoPE tables: cos/sin of pos·inv_freq for every
// position, [ctx][dim/2], built in float32 like rope.py so angles round the
// same way.
type rope struct {
	half     int
	cos, sin []float32
}

func newRope(dim, ctx int, theta float64) rope {
	half := dim / 2
	inv := make([]float32, half)
	for i := range inv {
		// 1 / theta^(arange(0, dim, 2).float() / dim), each step in float32.
		e := float32(2*i) / float32(dim)
		inv[i] = 1 / float32(math.Pow(theta, float64(e)))
	}
	r := rope{half: half, cos: make([]float32, ctx*half), sin: make([]float32, ctx*half)}
	for p := 0; p < ctx; p++ {
		for i, f := range inv {
			a := float32(p) * f // outer product in float32
			r.cos[p*half+i] = float32(math.Cos(float64(a)))
			r.sin[p*half+i] = float32(math.Sin(float64(a)))
		}
	}
	return r
}

// apply rotates x (2·half wide) in place for position pos, split-halves
// layout: pair i is (x[i], x[i+half]).
func (r *rope) apply(x []float32, pos int) {
	h := r.half
	c := r.cos[pos*h : (pos+1)*h]
	s := r.sin[pos*h : (pos+1)*h]
	x1, x2 := x[:h], x[h:2*h]
	for i := range c {
		a, b := x1[i], x2[i]
		// Explicit conversions keep each product rounded (no FMA), as torch does.
		x1[i] = float32(a*c[i]) - float32(b*s[i])
		x2[i] = float32(a*s[i]) + float32(b*c[i])
	}
}

package kernels

import "math"

// The per-token vector ops below are pure Go on every CPU: they touch a few
// thousand floats per call, far less than the matrix products. All of them
// accept out aliasing x (or dst aliasing src) exactly.

// sumSquares returns Σ v² in float32 in a fixed, documented order: four
// interleaved partial sums (element i goes to sum i%4), combined as
// (s0+s1)+(s2+s3).
func sumSquares(x []float32) float32 {
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(x); i += 4 {
		s0 += float32(x[i] * x[i])
		s1 += float32(x[i+1] * x[i+1])
		s2 += float32(x[i+2] * x[i+2])
		s3 += float32(x[i+3] * x[i+3])
	}
	for ; i < len(x); i++ {
		s0 += float32(x[i] * x[i])
	}
	return (s0 + s1) + (s2 + s3)
}

// RMSNorm sets out[i] = (x[i] * rsqrt(mean(x²) + eps)) * w[i], like PyTorch's
// float32 `x * torch.rsqrt(x.pow(2).mean(-1) + eps) * w`. The mean is a float32
// sum of squares (order: see sumSquares) divided by len(x) in float32;
// PyTorch's own reduction order differs, so results agree to float32 rounding,
// not bitwise. A nil w means all ones. len(out), len(w) >= len(x).
func RMSNorm(out, x, w []float32, eps float32) {
	n := len(x)
	if n == 0 {
		return
	}
	out = out[:n]
	mean := sumSquares(x) / float32(n)
	r := float32(1 / math.Sqrt(float64(mean+eps)))
	if w == nil {
		for i, v := range x {
			out[i] = v * r
		}
		return
	}
	w = w[:n]
	for i, v := range x {
		out[i] = float32(v*r) * w[i]
	}
}

// LayerNorm sets out[i] = (x[i]-mean) * rsqrt(var + eps) * w[i] + b[i] with
// PyTorch's semantics: biased variance (divided by len(x)), all in float32.
// The mean is a plain float32 sum over i divided by n; the variance is then a
// second pass over (x[i]-mean)² (order: see sumSquares). A nil w means ones,
// a nil b zeros.
func LayerNorm(out, x, w, b []float32, eps float32) {
	n := len(x)
	if n == 0 {
		return
	}
	out = out[:n]
	var s float32
	for _, v := range x {
		s += v
	}
	mean := s / float32(n)
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= n; i += 4 {
		d0, d1, d2, d3 := x[i]-mean, x[i+1]-mean, x[i+2]-mean, x[i+3]-mean
		s0 += float32(d0 * d0)
		s1 += float32(d1 * d1)
		s2 += float32(d2 * d2)
		s3 += float32(d3 * d3)
	}
	for ; i < n; i++ {
		d := x[i] - mean
		s0 += float32(d * d)
	}
	variance := ((s0 + s1) + (s2 + s3)) / float32(n)
	r := float32(1 / math.Sqrt(float64(variance+eps)))
	if w != nil {
		w = w[:n]
	}
	if b != nil {
		b = b[:n]
	}
	for i, v := range x {
		y := float32((v - mean) * r)
		if w != nil {
			y = float32(y * w[i])
		}
		if b != nil {
			y += b[i]
		}
		out[i] = y
	}
}

// Softmax replaces x with softmax(x) in place: e^(x[i]-max) / Σ e^(x[j]-max),
// with the max subtracted first so nothing overflows. The exponentials are
// Exp's (max relative error < 2e-7, the same bits in asm and Go), summed in
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

// SiLU replaces x[i] with x[i] * sigmoid(x[i]) (computed in float64, rounded).
func SiLU(x []float32) {
	for i, v := range x {
		x[i] = float32(float64(v) / (1 + math.Exp(-float64(v))))
	}
}

// GELU replaces x[i] with the tanh approximation used by GPT-2
// (PyTorch's gelu(approximate="tanh")):
// 0.5 x (1 + tanh(sqrt(2/π) (x + 0.044715 x³))), computed in float64.
func GELU(x []float32) {
	const c = 0.7978845608028654 // sqrt(2/π)
	for i, v := range x {
		f := float64(v)
		x[i] = float32(0.5 * f * (1 + math.Tanh(c*(f+0.044715*f*f*f))))
	}
}

// Add computes dst[i] += src[i] for i < len(src) (residual connections).
func Add(dst, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] += v
	}
}

// Mul computes dst[i] *= src[i] for i < len(src) (gated MLPs).
func Mul(dst, src []float32) {
	dst = dst[:len(src)]
	for i, v := range src {
		dst[i] *= v
	}
}

// Scale computes x[i] *= s.
func Scale(x []float32, s float32) {
	for i := range x {
		x[i] *= s
	}
}

package nn

import (
	"math"

	"chat/models/kernels"
)

// The norms, each with the rounding of the code it must match bit for bit.
// A Pass method applies one to every row and returns new rows; the plain
// functions work on one vector (out may be x).

// RMSNorm is ggml_rms_norm followed by the weight multiply, as llama.cpp
// computes it: each square is rounded to float32 and summed in float64, the
// mean taken in float32, the scale 1/sqrtf(mean+eps) applied in float32.
func RMSNorm(out, x, w []float32, eps float32) {
	var sum float64
	for _, v := range x {
		sum += float64(v * v)
	}
	rmsScale(out, x, w, sum, eps)
}

// rmsScale is RMSNorm after the sum of squares.
func rmsScale(out, x, w []float32, sum float64, eps float32) {
	mean := float32(sum / float64(len(x)))
	scale := 1 / float32(math.Sqrt(float64(mean+eps)))
	kernels.ScaleMul(out, x, w, scale) // (v·scale)·w[i], each rounded
}

// rmsNorm4 is RMSNorm of four rows of the same width, their sums of squares
// taken side by side: each is still one chain in element order (the same
// bits), but four chains keep the adder busy where one waits on each add.
func rmsNorm4(out, x [4][]float32, w []float32, eps float32) {
	n := len(x[0])
	a, b, c, d := x[0][:n], x[1][:n], x[2][:n], x[3][:n]
	var s0, s1, s2, s3 float64
	for i := range a {
		s0 += float64(a[i] * a[i])
		s1 += float64(b[i] * b[i])
		s2 += float64(c[i] * c[i])
		s3 += float64(d[i] * d[i])
	}
	for r, s := range [4]float64{s0, s1, s2, s3} {
		rmsScale(out[r], x[r], w, s, eps)
	}
}

// TorchRMSNorm is the course's RMSNorm module: x·rsqrt(mean(x²)+eps), then
// times w (a plain weight, not 1+w). The squares are summed in float64 and
// the product x·r rounded before the weight, as PyTorch computes it.
func TorchRMSNorm(out, x, w []float32, eps float32) {
	n := len(w)
	x = x[:n]
	var ss float64
	for _, v := range x {
		ss += float64(v) * float64(v)
	}
	r := float32(1 / math.Sqrt(float64(float32(ss/float64(n))+eps)))
	out = out[:n]
	for i, v := range x {
		out[i] = float32(v*r) * w[i]
	}
}

// LayerNorm is torch's nn.LayerNorm over one row: (x-mean)·rsqrt(var+eps)·w
// + b with the biased variance, the statistics summed in float64.
func LayerNorm(out, x, w, b []float32, eps float32) {
	n := len(w)
	x = x[:n]
	var sum float64
	for _, v := range x {
		sum += float64(v)
	}
	mean := float32(sum / float64(n))
	var ss float64
	for _, v := range x {
		d := float64(v - mean)
		ss += d * d
	}
	rstd := float32(1 / math.Sqrt(float64(float32(ss/float64(n))+eps)))
	out = out[:n]
	for i, v := range x {
		out[i] = float32((v-mean)*rstd)*w[i] + b[i]
	}
}

// RMSNorm returns RMSNorm (ggml) of every row of x.
func (p *Pass) RMSNorm(x Rows, w []float32, eps float32) Rows {
	y := p.AllocN(x.N, x.W)
	i := 0
	for ; i+4 <= x.N; i += 4 {
		rmsNorm4([4][]float32{y.Row(i), y.Row(i + 1), y.Row(i + 2), y.Row(i + 3)},
			[4][]float32{x.Row(i), x.Row(i + 1), x.Row(i + 2), x.Row(i + 3)}, w, eps)
	}
	for ; i < x.N; i++ {
		RMSNorm(y.Row(i), x.Row(i), w, eps)
	}
	return y
}

// TorchRMSNorm returns TorchRMSNorm of every row of x.
func (p *Pass) TorchRMSNorm(x Rows, w []float32, eps float32) Rows {
	y := p.AllocN(x.N, x.W)
	for i := 0; i < x.N; i++ {
		TorchRMSNorm(y.Row(i), x.Row(i), w, eps)
	}
	return y
}

// LayerNorm returns LayerNorm of every row of x.
func (p *Pass) LayerNorm(x Rows, w, b []float32, eps float32) Rows {
	y := p.AllocN(x.N, x.W)
	for i := 0; i < x.N; i++ {
		LayerNorm(y.Row(i), x.Row(i), w, b, eps)
	}
	return y
}

// HeadNorm applies norm, with weight w of one head's width, to each of the
// heads of every row of x, in place (the per-head Q and K norms of qwen3,
// Gemma 3 and the course's qk_norm).
func HeadNorm(x Rows, heads int, norm func(out, x, w []float32, eps float32), w []float32, eps float32) {
	d := x.W / heads
	for i := 0; i < x.N; i++ {
		r := x.Row(i)
		for h := 0; h < heads; h++ {
			v := r[h*d : (h+1)*d]
			norm(v, v, w, eps)
		}
	}
}

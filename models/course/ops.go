package course

import (
	"math"

	"chat/models/kernels"
)

// matmul computes out[i*rows+r] = w[r]·x[i*cols:] for n input rows: one
// weight matrix applied to a batch of vectors (the whole prefill at once).
func matmul(out, w, x []float32, n, rows, cols int) {
	kernels.MatMul(out, w, x, rows, cols, n)
}

// layerNorm is nn.LayerNorm over one row: (x-mean)·rsqrt(var+eps)·w + b, with
// the biased variance. Sums run in float64 so the statistics are as exact as
// PyTorch's.
func layerNorm(out, x, w, b []float32, eps float32) {
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

// rmsNorm is the course's RMSNorm: x·rsqrt(mean(x²)+eps), then times w (a
// plain weight, not 1+w).
func rmsNorm(out, x, w []float32, eps float32) {
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

// softmax normalises x in place.
func softmax(x []float32) { kernels.Softmax(x) }

func sigmoid(x float32) float32 { return float32(1 / (1 + math.Exp(-float64(x)))) }

func silu(x float32) float32 { return x * sigmoid(x) }

// attend computes causal attention for one query row over cached keys
// lo..hi-1: for each query head, softmax(q·k·scale)·v. Query head h reads
// key/value head h/(H/Hkv) (repeat_interleave). q is [H][dk]; the caches are
// [pos][Hkv][dk] and [pos][Hkv][dv]; out is [H][dv].
func attend(out, q, kc, vc, scores []float32, lo, hi, h, hkv, dk, dv int, scale float32) {
	group := h / hkv
	kw, vw := hkv*dk, hkv*dv
	sc := scores[:hi-lo]
	for hh := 0; hh < h; hh++ {
		g := hh / group
		qh := q[hh*dk : (hh+1)*dk]
		kernels.AttnScores(sc, qh, kc[lo*kw+g*dk:], kw, hi-lo, scale)
		softmax(sc)
		kernels.AttnMix(out[hh*dv:(hh+1)*dv], sc, vc[lo*vw+g*dv:], vw, hi-lo)
	}
}

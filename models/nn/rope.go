package nn

import (
	"math"
	"sync"
	"sync/atomic"

	"chat/models/kernels"
)

// Rope holds the rotary position tables of one layout: cos and sin of each
// position's angle for each pair, [ctx][Dim/2]. Two builders make the
// tables the way the two references round them (TorchRope for the course,
// GGMLRope for llama.cpp with its linear, YaRN and Llama 3 scalings); one
// Apply rotates.
//
// The tables are filled a chunk of positions at a time, the first time a
// position of the chunk is rotated: a model trained for 131,072 positions
// holds the 32 MB of tables of a long context only once a reply gets there.
// Each position's values depend on the position alone, so the order of
// filling changes no bit.
type Rope struct {
	Dim int // rotated values at the start of a head (even); the rest are left alone
	// NeoX rotates the pairs (i, i+Dim/2), the split halves of the course's
	// rope.py and of ggml's NEOX mode; otherwise the adjacent pairs (2i,
	// 2i+1) of ggml's NORM mode (llama's converter permutes Q and K for it).
	NeoX bool

	ctx    int
	fill   func(pos int, cos, sin []float32) // one position's Dim/2 values
	mu     sync.Mutex                        // held while a chunk is filled
	chunks []atomic.Pointer[ropeChunk]
}

// ropeChunkLen is the positions of one chunk of tables.
const ropeChunkLen = 1024

type ropeChunk struct{ cos, sin []float32 }

func newRope(dim, ctx int, neox bool, fill func(pos int, cos, sin []float32)) *Rope {
	return &Rope{Dim: dim, NeoX: neox, ctx: ctx, fill: fill,
		chunks: make([]atomic.Pointer[ropeChunk], (max(ctx, 0)+ropeChunkLen-1)/ropeChunkLen)}
}

// Context is the number of positions the tables cover.
func (r *Rope) Context() int { return r.ctx }

// At returns the cos and sin of position pos's angles, Dim/2 each; pos must
// be in [0, Context()).
func (r *Rope) At(pos int) (cos, sin []float32) {
	if pos < 0 || pos >= r.ctx {
		panic("nn: rope position out of range")
	}
	h := r.Dim / 2
	c := r.chunks[pos/ropeChunkLen].Load()
	if c == nil {
		c = r.fillChunk(pos / ropeChunkLen)
	}
	o := pos % ropeChunkLen * h
	return c.cos[o : o+h], c.sin[o : o+h]
}

func (r *Rope) fillChunk(i int) *ropeChunk {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c := r.chunks[i].Load(); c != nil {
		return c
	}
	h := r.Dim / 2
	n := min(ropeChunkLen, r.ctx-i*ropeChunkLen)
	c := &ropeChunk{cos: make([]float32, n*h), sin: make([]float32, n*h)}
	for p := 0; p < n; p++ {
		r.fill(i*ropeChunkLen+p, c.cos[p*h:(p+1)*h], c.sin[p*h:(p+1)*h])
	}
	r.chunks[i].Store(c)
	return c
}

// Apply rotates x[:Dim] in place for position pos. Each product is rounded
// before the sum (no fused multiply-add), as torch and ggml's C compute it.
func (r *Rope) Apply(x []float32, pos int) {
	c, s := r.At(pos)
	r.rotate(x, c, s)
}

func (r *Rope) rotate(x, c, s []float32) {
	h := r.Dim / 2
	if r.NeoX {
		kernels.RopeHalves(x[:h], x[h:2*h], c, s)
		return
	}
	kernels.RopePairs(x, c, s)
}

// Rope rotates each of the heads of every row of x (head width x.W/heads)
// for the row's position, in place.
func (p *Pass) Rope(x Rows, r *Rope, heads int) {
	d := x.W / heads
	for i := 0; i < x.N; i++ {
		row := x.Row(i)
		c, s := r.At(p.Pos[i])
		for h := 0; h < heads; h++ {
			r.rotate(row[h*d:], c, s)
		}
	}
}

// TorchRope builds the course's tables (rope.py): inv_freq = 1 /
// theta^(arange(0, dim, 2)/dim) and the angles pos·inv_freq, each step in
// float32, in the split-halves layout.
func TorchRope(dim, ctx int, theta float64) *Rope {
	half := dim / 2
	inv := make([]float32, half)
	for i := range inv {
		e := float32(2*i) / float32(dim)
		inv[i] = 1 / float32(math.Pow(theta, float64(e)))
	}
	return newRope(dim, ctx, true, func(p int, cos, sin []float32) {
		for i, f := range inv {
			a := float32(p) * f // outer product in float32
			cos[i] = float32(math.Cos(float64(a)))
			sin[i] = float32(math.Sin(float64(a)))
		}
	})
}

// RopeScaling is llama.cpp's rope configuration (llama_context's cparams).
type RopeScaling struct {
	Base  float32 // freq_base
	Scale float32 // freq_scale: 1/factor for linear scaling, else 1
	// Factors divides each pair's frequency (Llama 3's rope_freqs,
	// LongRoPE's factors); nil for none.
	Factors []float32
	// YaRN: ext_factor (0 off), attn_factor (scales cos and sin; 0 means
	// 1) and the original context the ramp is computed for.
	YarnExt, YarnAttn float32
	YarnOrigCtx       int
}

// GGMLRope builds the tables the way ggml_rope_cache_init and rope_yarn do:
// theta starts at the position and is multiplied by base^(-2/dims) in
// float32 for each pair; it is divided by the pair's frequency factor and
// scaled by freq_scale. With YaRN the scaled and unscaled angles are blended
// by a ramp over the pairs and cos and sin scaled by the attention factor.
func GGMLRope(dim, ctx int, neox bool, c RopeScaling) *Rope {
	half := dim / 2
	thetaScale := float32(math.Pow(float64(c.Base), -2/float64(dim)))
	mscale := c.YarnAttn
	if mscale == 0 {
		mscale = 1
	}
	var lo, hi float32
	if c.YarnExt != 0 {
		lo, hi = yarnCorrDims(dim, c.YarnOrigCtx, c.Base, 32, 1) // llama.cpp's beta_fast, beta_slow
		mscale *= 1 + 0.1*logf(1/c.Scale)
	}
	return newRope(dim, ctx, neox, func(p int, cos, sin []float32) {
		theta := float32(p)
		for i := 0; i < half; i++ {
			extrap := theta
			if c.Factors != nil {
				extrap /= c.Factors[i]
			}
			t := c.Scale * extrap
			if c.YarnExt != 0 {
				mix := yarnRamp(lo, hi, i) * c.YarnExt
				t = t*(1-mix) + extrap*mix
			}
			cos[i] = float32(math.Cos(float64(t))) * mscale
			sin[i] = float32(math.Sin(float64(t))) * mscale
			theta *= thetaScale
		}
	})
}

// yarnCorrDims is ggml_rope_yarn_corr_dims: the pairs between which YaRN
// goes from extrapolation to interpolation.
func yarnCorrDims(dims, origCtx int, base, betaFast, betaSlow float32) (lo, hi float32) {
	corr := func(beta float32) float32 {
		return float32(dims) * logf(float32(origCtx)/(beta*2*math.Pi)) / (2 * logf(base))
	}
	lo = max(0, float32(math.Floor(float64(corr(betaFast)))))
	hi = min(float32(dims-1), float32(math.Ceil(float64(corr(betaSlow)))))
	return lo, hi
}

// yarnRamp is rope_yarn_ramp for pair i.
func yarnRamp(lo, hi float32, i int) float32 {
	y := (float32(i) - lo) / max(0.001, hi-lo)
	return 1 - min(1, max(0, y))
}

// Llama3Factors is the per-pair frequency divisor convert_hf_to_gguf writes
// as rope_freqs.weight for rope_type "llama3" (LlamaModel's
// generate_extra_tensors): 1 for wavelengths shorter than
// origCtx/highFreq, factor for those longer than origCtx/lowFreq, a smooth
// blend in between.
func Llama3Factors(base float32, dims int, factor, lowFreq, highFreq float64, origCtx int) []float32 {
	lowWave := float64(origCtx) / lowFreq
	highWave := float64(origCtx) / highFreq
	out := make([]float32, dims/2)
	for i := range out {
		freq := 1 / math.Pow(float64(base), float64(2*i)/float64(dims))
		wave := 2 * math.Pi / freq
		switch {
		case wave < highWave:
			out[i] = 1
		case wave > lowWave:
			out[i] = float32(factor)
		default:
			smooth := (float64(origCtx)/wave - lowFreq) / (highFreq - lowFreq)
			out[i] = float32(1 / ((1-smooth)/factor + smooth))
		}
	}
	return out
}

func logf(x float32) float32 { return float32(math.Log(float64(x))) }

package llama

import (
	"errors"
	"fmt"
	"math"

	"chat/models"
	"chat/models/kernels"
)

// State is one sequence: a per-layer contiguous KV cache and the scratch one
// token's forward pass needs, all allocated up front so a decode step
// allocates nothing.
type State struct {
	m      *Model
	n, cap int
	k, v   [][]float32 // per layer, [cap][KVHeads*HeadDim]

	x, xb, xb2, q []float32
	hb, hb2       []float32
	att           []float32
	logits        []float32
}

var _ models.State = (*State)(nil)

// NewState allocates a state for up to Info().ContextLength positions.
func (m *Model) NewState() models.State { return m.newState() }

func (m *Model) newState() *State {
	c := m.cfg
	capacity := m.info.ContextLength
	kvDim := c.KVHeads * c.HeadDim
	s := &State{
		m: m, cap: capacity,
		k: make([][]float32, c.Layers), v: make([][]float32, c.Layers),
		x: make([]float32, c.Dim), xb: make([]float32, c.Dim),
		xb2: make([]float32, c.Heads*c.HeadDim), q: make([]float32, c.Heads*c.HeadDim),
		hb: make([]float32, c.FFN), hb2: make([]float32, c.FFN),
		att:    make([]float32, capacity),
		logits: make([]float32, c.Vocab),
	}
	for l := range s.k {
		s.k[l] = make([]float32, capacity*kvDim)
		s.v[l] = make([]float32, capacity*kvDim)
	}
	return s
}

// Len is the number of cached positions.
func (s *State) Len() int { return s.n }

// Cap is the most positions the cache holds.
func (s *State) Cap() int { return s.cap }

// Truncate drops cached positions >= n.
func (s *State) Truncate(n int) {
	if n < 0 {
		n = 0
	}
	if n < s.n {
		s.n = n
	}
}

// Forward runs tokens at positions Len().. and returns the logits of the
// last rows tokens, [rows][Vocab], owned by the State.
func (s *State) Forward(tokens []int, rows int) ([]float32, error) {
	c := &s.m.cfg
	if len(tokens) == 0 {
		return nil, errors.New("llama: Forward needs at least one token")
	}
	if len(tokens) > s.cap-s.n {
		return nil, fmt.Errorf("llama: %d more positions do not fit the cache (%d of %d used)", len(tokens), s.n, s.cap)
	}
	for _, t := range tokens {
		if t < 0 || t >= c.Vocab {
			return nil, fmt.Errorf("llama: token id %d out of range [0, %d)", t, c.Vocab)
		}
	}
	rows = max(1, min(rows, len(tokens)))
	if rows*c.Vocab > len(s.logits) {
		s.logits = make([]float32, rows*c.Vocab)
	}
	logits := s.logits[:rows*c.Vocab]
	first := len(tokens) - rows
	for i, t := range tokens {
		s.step(t, s.n)
		s.n++
		if i >= first {
			r := i - first
			s.head(logits[r*c.Vocab : (r+1)*c.Vocab])
		}
	}
	return logits, nil
}

// step runs one token at position pos through every layer, leaving the
// residual stream in s.x and the token's keys and values in the cache
// (llm_build_llama in src/llama-model.cpp).
func (s *State) step(tok, pos int) {
	m, c := s.m, &s.m.cfg
	dim, hd := c.Dim, c.HeadDim
	qDim, kvDim := c.Heads*hd, c.KVHeads*hd
	group := c.Heads / c.KVHeads
	scale := float32(1 / math.Sqrt(float64(hd)))
	x, xb, xb2, q := s.x, s.xb, s.xb2, s.q
	copy(x, m.embd[tok*dim:(tok+1)*dim])
	for l := range m.layers {
		L := &m.layers[l]
		rmsNorm(xb, x, L.attnNorm, c.Eps)
		kc := s.k[l][pos*kvDim : (pos+1)*kvDim]
		vc := s.v[l][pos*kvDim : (pos+1)*kvDim]
		kernels.MatVec(q, L.wq, xb, qDim, dim)
		kernels.MatVec(kc, L.wk, xb, kvDim, dim)
		kernels.MatVec(vc, L.wv, xb, kvDim, dim)
		addBias(q, L.bq)
		addBias(kc, L.bk)
		addBias(vc, L.bv)
		m.rope(q, c.Heads, pos)
		m.rope(kc, c.KVHeads, pos)

		// Attention of each query head over its KV head's cached positions.
		att := s.att[:pos+1]
		keys, vals := s.k[l], s.v[l]
		for h := 0; h < c.Heads; h++ {
			qh := q[h*hd : (h+1)*hd]
			off := (h / group) * hd
			for t := range att {
				att[t] = kernels.Dot(qh, keys[t*kvDim+off:t*kvDim+off+hd]) * scale
			}
			softmax(att)
			out := xb2[h*hd : (h+1)*hd]
			clear(out)
			for t, a := range att {
				kernels.Axpy(a, vals[t*kvDim+off:t*kvDim+off+hd], out)
			}
		}
		kernels.MatVec(xb, L.wo, xb2, dim, qDim)
		addBias(xb, L.bo)
		add(x, xb)

		rmsNorm(xb, x, L.ffnNorm, c.Eps)
		kernels.MatVec(s.hb, L.gate, xb, c.FFN, dim)
		kernels.MatVec(s.hb2, L.up, xb, c.FFN, dim)
		for i, g := range s.hb {
			s.hb[i] = g / (1 + float32(math.Exp(float64(-g)))) * s.hb2[i] // SiLU(gate) * up
		}
		kernels.MatVec(xb, L.down, s.hb, dim, c.FFN)
		add(x, xb)
	}
}

// head writes the logits of the current residual stream into out.
func (s *State) head(out []float32) {
	c := &s.m.cfg
	rmsNorm(s.xb, s.x, s.m.norm, c.Eps)
	kernels.MatVec(out, s.m.output, s.xb, c.Vocab, c.Dim)
}

// rmsNorm is ggml_rms_norm followed by the weight multiply: the mean square
// is accumulated in float64 as ggml does, the scale applied in float32.
func rmsNorm(out, x, w []float32, eps float32) {
	var sum float64
	for _, v := range x {
		sum += float64(v * v)
	}
	mean := float32(sum / float64(len(x)))
	scale := 1 / float32(math.Sqrt(float64(mean+eps)))
	for i, v := range x {
		out[i] = v * scale * w[i]
	}
}

// softmax in place, with the sum in float64 like ggml_vec_soft_max_f32.
func softmax(x []float32) {
	mx := float32(math.Inf(-1))
	for _, v := range x {
		mx = max(mx, v)
	}
	var sum float64
	for i, v := range x {
		e := float32(math.Exp(float64(v - mx)))
		x[i] = e
		sum += float64(e)
	}
	inv := float32(1 / sum)
	for i := range x {
		x[i] *= inv
	}
}

func add(x, y []float32) {
	for i, v := range y {
		x[i] += v
	}
}

func addBias(x, b []float32) {
	if b != nil {
		add(x, b)
	}
}

// rope rotates the first RopeDim values of each head of v by the position's
// angles, in adjacent pairs (ggml's "normal" rope mode, which llama.cpp
// uses for LLM_ARCH_LLAMA).
func (m *Model) rope(v []float32, heads, pos int) {
	hd, half := m.cfg.HeadDim, m.cfg.RopeDim/2
	cos := m.ropeCos[pos*half : (pos+1)*half]
	sin := m.ropeSin[pos*half : (pos+1)*half]
	for h := 0; h < heads; h++ {
		x := v[h*hd : h*hd+2*half]
		for i := 0; i < half; i++ {
			x0, x1 := x[2*i], x[2*i+1]
			x[2*i] = x0*cos[i] - x1*sin[i]
			x[2*i+1] = x0*sin[i] + x1*cos[i]
		}
	}
}

// ropeTables precomputes cos and sin of each position's angles the way
// ggml_rope_cache_init does: theta starts at the position and is multiplied
// by base^(-2/dims) in float32 for each pair, divided by the optional
// per-pair frequency factor and scaled by freqScale (linear scaling).
func ropeTables(ctx, dims int, base, freqScale float32, factors []float32) (cos, sin []float32) {
	half := dims / 2
	cos = make([]float32, ctx*half)
	sin = make([]float32, ctx*half)
	thetaScale := float32(math.Pow(float64(base), -2/float64(dims)))
	for p := 0; p < ctx; p++ {
		theta := float32(p)
		for i := 0; i < half; i++ {
			t := theta
			if factors != nil {
				t /= factors[i]
			}
			t *= freqScale
			cos[p*half+i] = float32(math.Cos(float64(t)))
			sin[p*half+i] = float32(math.Sin(float64(t)))
			theta *= thetaScale
		}
	}
	return cos, sin
}

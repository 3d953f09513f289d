package llama

import (
	"errors"
	"fmt"
	"math"
	"sync"

	"chat/models"
	"chat/models/gguf"
	"chat/models/kernels"
)

// maxBatch is the most tokens one pass of the layers carries; a longer
// prefill runs in chunks so the scratch stays small.
const maxBatch = 64

// State is one sequence: a per-layer contiguous KV cache and the scratch a
// forward pass needs, allocated up front for one token so a decode step
// allocates nothing (a prefill grows the scratch once to its batch size).
type State struct {
	m      *Model
	n, cap int
	k, v   [][]float32 // per layer, [cap][KVHeads*HeadDim]

	kv         models.KV   // paged cache (paged.go); nil: k, v above
	kbuf, vbuf []float32   // paged: a batch's keys and values before they go to their blocks
	pk, pv     [][]float32 // paged: one layer's blocks, looked up once per batch
	pq         *pagedQuant // paged over an int8 cache: dequantization scratch (paged.go)

	batch  int // tokens the scratch below holds, each row-major [batch][...]
	x, xb  []float32
	q, att []float32 // att: [cap] scores of one head
	xb2    []float32
	hb     []float32
	hb2    []float32
	logits []float32
	act    act // quantized or rounded activations for the products
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
		att:    make([]float32, capacity),
		logits: make([]float32, c.Vocab),
	}
	for l := range s.k {
		s.k[l] = make([]float32, capacity*kvDim)
		s.v[l] = make([]float32, capacity*kvDim)
	}
	s.grow(1)
	return s
}

// grow makes the scratch hold n tokens.
func (s *State) grow(n int) {
	if n <= s.batch {
		return
	}
	c := &s.m.cfg
	qDim := c.Heads * c.HeadDim
	s.batch = n
	s.x = make([]float32, n*c.Dim)
	s.xb = make([]float32, n*c.Dim)
	s.q = make([]float32, n*qDim)
	s.xb2 = make([]float32, n*qDim)
	s.hb = make([]float32, n*c.FFN)
	s.hb2 = make([]float32, n*c.FFN)
	s.act = newAct(n, max(c.Dim, qDim, c.FFN))
}

// Len is the number of cached positions.
func (s *State) Len() int {
	if s.kv != nil {
		return s.kv.Len()
	}
	return s.n
}

// Cap is the most positions the cache holds.
func (s *State) Cap() int { return s.cap }

// Truncate drops cached positions >= n.
func (s *State) Truncate(n int) {
	if s.kv != nil {
		s.kv.Truncate(n)
		return
	}
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
	if s.kv != nil {
		s.n = s.kv.Len() // the owner of kv may have changed it
	}
	if len(tokens) > s.cap-s.n {
		return nil, fmt.Errorf("llama: %d more positions do not fit the cache (%d of %d used)", len(tokens), s.n, s.cap)
	}
	for _, t := range tokens {
		if t < 0 || t >= c.Vocab {
			return nil, fmt.Errorf("llama: token id %d out of range [0, %d)", t, c.Vocab)
		}
	}
	if s.kv != nil {
		if err := s.kv.Append(len(tokens)); err != nil {
			return nil, fmt.Errorf("llama: %w", err)
		}
	}
	rows = max(1, min(rows, len(tokens)))
	if rows*c.Vocab > len(s.logits) {
		s.logits = make([]float32, rows*c.Vocab)
	}
	logits := s.logits[:rows*c.Vocab]
	first := len(tokens) - rows // index of the first token whose logits we return
	s.grow(min(len(tokens), maxBatch))
	for start := 0; start < len(tokens); start += maxBatch {
		chunk := tokens[start:min(start+maxBatch, len(tokens))]
		s.layers(chunk, s.n)
		s.n += len(chunk)
		// Logits for the chunk's tokens at index >= first.
		from := max(first-start, 0)
		if from < len(chunk) {
			r0 := start + from - first
			s.head(logits[r0*c.Vocab:], from, len(chunk)-from)
		}
	}
	return logits, nil
}

// layers runs a batch of tokens at positions pos.. through every layer,
// leaving the residual streams in s.x and their keys and values in the
// cache (the graphs of src/models/llama.cpp, qwen2.cpp and qwen3.cpp).
func (s *State) layers(tokens []int, pos int) {
	m, c := s.m, &s.m.cfg
	n := len(tokens)
	dim, hd, ffn := c.Dim, c.HeadDim, c.FFN
	qDim, kvDim := c.Heads*hd, c.KVHeads*hd
	group := c.Heads / c.KVHeads
	scale := 1 / float32(math.Sqrt(float64(hd))) // kq_scale, 1.0f/sqrtf(float(n_embd_head))
	x, xb, xb2, q := s.x[:n*dim], s.xb[:n*dim], s.xb2[:n*qDim], s.q[:n*qDim]
	hb, hb2 := s.hb[:n*ffn], s.hb2[:n*ffn]
	for i, t := range tokens {
		m.embd.row(x[i*dim:(i+1)*dim], t)
	}
	if m.fam.gemma > 0 { // ggml_scale(inpL, sqrtf(n_embd))
		es := float32(math.Sqrt(float64(dim)))
		for i := range x {
			x[i] *= es
		}
	}
	if c.AttnScale != 0 { // Gemma scales Q instead of the scores
		scale = 1
	}
	for l := range m.layers {
		L := &m.layers[l]
		for i := 0; i < n; i++ {
			rmsNorm(xb[i*dim:(i+1)*dim], x[i*dim:(i+1)*dim], L.attnNorm, c.Eps)
		}
		// The batch's keys and values go straight into their cache rows.
		kc, vc := s.kvDest(l, pos, n)
		L.wq.mul(q, xb, n, &s.act)
		L.wk.mul(kc, xb, n, &s.act)
		L.wv.mul(vc, xb, n, &s.act)
		for i := 0; i < n; i++ {
			qi, ki, vi := q[i*qDim:(i+1)*qDim], kc[i*kvDim:(i+1)*kvDim], vc[i*kvDim:(i+1)*kvDim]
			addBias(qi, L.bq)
			addBias(ki, L.bk)
			addBias(vi, L.bv)
			if L.qNorm != nil { // qwen3: RMSNorm over each head before rope
				for h := 0; h < c.Heads; h++ {
					rmsNorm(qi[h*hd:(h+1)*hd], qi[h*hd:(h+1)*hd], L.qNorm, c.Eps)
				}
				for h := 0; h < c.KVHeads; h++ {
					rmsNorm(ki[h*hd:(h+1)*hd], ki[h*hd:(h+1)*hd], L.kNorm, c.Eps)
				}
			}
			m.rope(qi, c.Heads, pos+i, L.ropeCos, L.ropeSin)
			m.rope(ki, c.KVHeads, pos+i, L.ropeCos, L.ropeSin)
			if c.AttnScale != 0 {
				for j := range qi {
					qi[j] *= c.AttnScale
				}
			}
		}

		s.kvStore(l, pos, kc, vc)

		// Causal attention: token i sees positions 0..pos+i (the last
		// window of them in a sliding-window layer: llama.cpp masks key
		// p0 for query p1 when p1-p0 >= n_swa); each query head reads the
		// KV head of its group.
		for i := 0; i < n; i++ {
			p := pos + i
			start := 0
			if L.window > 0 {
				start = max(0, p-L.window+1)
			}
			if s.kv != nil {
				s.attendPaged(xb2[i*qDim:(i+1)*qDim], q[i*qDim:(i+1)*qDim], l, p, start, scale)
				continue
			}
			keys, vals := s.k[l], s.v[l]
			att := s.att[:p+1-start]
			ks, vs := keys[start*kvDim:], vals[start*kvDim:]
			for h := 0; h < c.Heads; h++ {
				qh := q[i*qDim+h*hd : i*qDim+(h+1)*hd]
				off := (h / group) * hd
				kernels.AttnScores(att, qh, ks[off:], kvDim, len(att), scale)
				if c.AttnSoftcap != 0 {
					softcap(att, c.AttnSoftcap)
				}
				softmax(att)
				kernels.AttnMix(xb2[i*qDim+h*hd:i*qDim+(h+1)*hd], att, vs[off:], kvDim, len(att))
			}
		}
		L.wo.mul(xb, xb2, n, &s.act)
		for i := 0; i < n; i++ {
			addBias(xb[i*dim:(i+1)*dim], L.bo)
			if L.attnPost != nil {
				rmsNorm(xb[i*dim:(i+1)*dim], xb[i*dim:(i+1)*dim], L.attnPost, c.Eps)
			}
		}
		add(x, xb)

		for i := 0; i < n; i++ {
			rmsNorm(xb[i*dim:(i+1)*dim], x[i*dim:(i+1)*dim], L.ffnNorm, c.Eps)
		}
		L.gate.mul(hb, xb, n, &s.act)
		L.up.mul(hb2, xb, n, &s.act)
		if L.bg != nil || L.bu != nil {
			for i := 0; i < n; i++ {
				addBias(hb[i*ffn:(i+1)*ffn], L.bg)
				addBias(hb2[i*ffn:(i+1)*ffn], L.bu)
			}
		}
		if m.fam.gemma > 0 {
			geglu(hb, hb2)
		} else {
			kernels.SwiGLU(hb, hb2) // SiLU(gate) * up
		}
		L.down.mul(xb, hb, n, &s.act)
		for i := 0; i < n; i++ {
			addBias(xb[i*dim:(i+1)*dim], L.bd)
			if L.ffnPost != nil {
				rmsNorm(xb[i*dim:(i+1)*dim], xb[i*dim:(i+1)*dim], L.ffnPost, c.Eps)
			}
		}
		add(x, xb)
	}
}

// head writes the logits of batch rows from..from+n-1 into out, [n][Vocab].
func (s *State) head(out []float32, from, n int) {
	c := &s.m.cfg
	dim := c.Dim
	for i := from; i < from+n; i++ {
		rmsNorm(s.xb[i*dim:(i+1)*dim], s.x[i*dim:(i+1)*dim], s.m.norm, c.Eps)
	}
	s.m.output.mul(out, s.xb[from*dim:(from+n)*dim], n, &s.act)
	if s.m.outB != nil {
		for i := 0; i < n; i++ {
			add(out[i*c.Vocab:(i+1)*c.Vocab], s.m.outB)
		}
	}
	if c.FinalSoftcap != 0 {
		softcap(out[:n*c.Vocab], c.FinalSoftcap)
	}
}

// softcap is Gemma 2's cap·tanh(x/cap), as three ggml ops: scale by 1/cap,
// tanh, scale by cap.
func softcap(x []float32, cap float32) {
	inv := 1 / cap
	for i, v := range x {
		x[i] = float32(math.Tanh(float64(v*inv))) * cap
	}
}

// geglu sets gate[i] = GELU(gate[i])·up[i] as ggml_vec_geglu_f32 does with
// GGML_GELU_FP16: the tanh GELU looked up in a table indexed by the f16
// rounding of the input, 0 below -10 and the identity above 10.
func geglu(gate, up []float32) {
	geluOnce.Do(initGELU)
	for i, g := range gate {
		switch {
		case g <= -10:
			gate[i] = 0
		case g >= 10:
			gate[i] = g * up[i]
		default:
			gate[i] = geluTable[gguf.F32ToF16(g)] * up[i]
		}
	}
}

var (
	geluOnce  sync.Once
	geluTable []float32 // by f16 bits: f16(gelu(x)) widened
)

// initGELU fills the table as ggml_cpu_init does: ggml_gelu_f32 of each
// f16 value, rounded to f16.
func initGELU() {
	const a, sqrt2OverPi = float32(0.044715), float32(0.79788456080286535587989211986876)
	geluTable = make([]float32, 1<<16)
	for i := range geluTable {
		x := gguf.F16ToF32(uint16(i))
		y := 0.5 * x * (1 + float32(math.Tanh(float64(sqrt2OverPi*x*(1+a*x*x)))))
		geluTable[i] = gguf.F16ToF32(gguf.F32ToF16(y))
	}
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
func softmax(x []float32) { kernels.Softmax(x) }

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

// rope rotates the first RopeDim values of each head of v by the
// position's angles, as ggml's rotate_pairs (ggml-cpu/ops.cpp) does: pair i
// is (2i, 2i+1) in the "normal" mode llama uses, (i, i+RopeDim/2) in the
// NeoX mode of qwen2/qwen3. Values past RopeDim are left alone.
func (m *Model) rope(v []float32, heads, pos int, cosTab, sinTab []float32) {
	hd, half := m.cfg.HeadDim, m.cfg.RopeDim/2
	cos := cosTab[pos*half : (pos+1)*half]
	sin := sinTab[pos*half : (pos+1)*half]
	if m.cfg.NeoX {
		for h := 0; h < heads; h++ {
			x := v[h*hd : h*hd+2*half]
			for i := 0; i < half; i++ {
				x0, x1 := x[i], x[i+half]
				x[i] = x0*cos[i] - x1*sin[i]
				x[i+half] = x0*sin[i] + x1*cos[i]
			}
		}
		return
	}
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
// ggml_rope_cache_init and rope_yarn do: theta starts at the position and
// is multiplied by base^(-2/dims) in float32 for each pair; it is divided
// by the optional per-pair frequency factor (Llama 3) and scaled by the
// freq_scale. With YaRN the scaled and unscaled angles are blended by a ramp
// over the pairs and cos and sin scaled by the attention factor.
func ropeTables(ctx int, c *Config, factors []float32) (cos, sin []float32) {
	dims := c.RopeDim
	half := dims / 2
	cos = make([]float32, ctx*half)
	sin = make([]float32, ctx*half)
	thetaScale := float32(math.Pow(float64(c.RopeBase), -2/float64(dims)))
	mscale := c.YarnAttn
	if mscale == 0 {
		mscale = 1
	}
	var lo, hi float32
	if c.YarnExt != 0 {
		lo, hi = yarnCorrDims(dims, c.YarnOrigCtx, c.RopeBase, 32, 1) // llama.cpp's beta_fast, beta_slow
		mscale *= 1 + 0.1*logf(1/c.RopeScale)
	}
	for p := 0; p < ctx; p++ {
		theta := float32(p)
		for i := 0; i < half; i++ {
			extrap := theta
			if factors != nil {
				extrap /= factors[i]
			}
			t := c.RopeScale * extrap
			if c.YarnExt != 0 {
				mix := yarnRamp(lo, hi, i) * c.YarnExt
				t = t*(1-mix) + extrap*mix
			}
			cos[p*half+i] = float32(math.Cos(float64(t))) * mscale
			sin[p*half+i] = float32(math.Sin(float64(t))) * mscale
			theta *= thetaScale
		}
	}
	return cos, sin
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

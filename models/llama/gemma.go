package llama

import (
	"fmt"
	"math"

	"chat/models/gguf"
	"chat/models/nn"
	"chat/models/weights"
)

// Gemma is llama.cpp's "gemma", "gemma2" and "gemma3" (src/models/
// gemma.cpp, gemma2-iswa.cpp, gemma3-iswa.cpp). All three scale the
// embeddings by sqrt(dim), multiply Q by the attention scale before the
// scores (which are then not scaled), use a GELU-gated feed-forward (ggml's
// geglu) and rope in the NEOX layout; the converter already stored the
// (1+w) RMSNorm weights as 1+w. Gemma 2 and 3 add norms after attention and
// after the feed-forward, and sliding-window layers with their own rope base
// and scale; Gemma 2 soft-caps the scores and the logits; Gemma 3 has
// per-head Q and K norms. Gemma 1 and 2 always tie the output to the
// embedding.
type Gemma struct {
	TokenEmbd  weights.Linear `gguf:"token_embd.weight,keep,embed" shape:"vocab,dim"`
	Blocks     []gemmaBlock   `gguf:"blk.%d"`
	OutputNorm []float32      `gguf:"output_norm.weight" shape:"dim"`
	Output     weights.Linear `gguf:"output.weight,optional,if=own_output" shape:"vocab,dim"`

	gen      int // 1, 2 or 3
	eps      float32
	qScale   float32
	logitCap float32
	rope     *nn.Rope     // global layers
	ropeSWA  *nn.Rope     // sliding-window layers
	attn     nn.Attention // global layers
	attnSWA  nn.Attention // sliding-window layers
}

type gemmaBlock struct {
	AttnNorm []float32      `gguf:"attn_norm.weight" shape:"dim"`
	Q        weights.Linear `gguf:"attn_q.weight" fuse:"qkv" shape:"q_dim,dim"`
	K        weights.Linear `gguf:"attn_k.weight" fuse:"qkv" shape:"kv_dim,dim"`
	V        weights.Linear `gguf:"attn_v.weight" fuse:"qkv" shape:"kv_dim,dim"`
	QNorm    []float32      `gguf:"attn_q_norm.weight,if=qk_norm" shape:"head_dim"`
	KNorm    []float32      `gguf:"attn_k_norm.weight,if=qk_norm" shape:"head_dim"`
	O        weights.Linear `gguf:"attn_output.weight" shape:"dim,q_dim"`
	AttnPost []float32      `gguf:"post_attention_norm.weight,if=post_norms" shape:"dim"`
	FFNNorm  []float32      `gguf:"ffn_norm.weight" shape:"dim"`
	Gate     weights.Linear `gguf:"ffn_gate.weight" fuse:"gate_up" shape:"ffn,dim"`
	Up       weights.Linear `gguf:"ffn_up.weight" fuse:"gate_up" shape:"ffn,dim"`
	Down     weights.Linear `gguf:"ffn_down.weight" shape:"dim,ffn"`
	FFNPost  []float32      `gguf:"post_ffw_norm.weight,if=post_norms" shape:"dim"`

	swa bool // a sliding-window layer
}

func newGemma(c *Config, f *gguf.File, src *source) (nn.Arch, error) {
	c.NeoX = true
	gen := map[string]int{"gemma": 1, "gemma2": 2, "gemma3": 3}[c.Arch]
	if err := readGemma(f, c, gen); err != nil {
		return nil, err
	}
	m := &Gemma{Blocks: make([]gemmaBlock, c.Layers), gen: gen, eps: c.Eps, qScale: c.AttnScale, logitCap: c.FinalSoftcap}
	dims := c.dims()
	dims["qk_norm"] = boolInt(gen == 3)
	dims["post_norms"] = boolInt(gen >= 2)
	dims["own_output"] = boolInt(gen == 3)
	if err := nn.Bind(m, "gguf", src, dims); err != nil {
		return nil, err
	}
	if m.Output == nil {
		m.Output = m.TokenEmbd
	}
	m.attn = c.attention(true)
	m.attn.Softcap = c.AttnSoftcap
	m.attnSWA = m.attn
	m.attnSWA.Window = c.SWAWindow
	m.rope = c.rope(c.RopeBase, c.RopeScale, nil)
	m.ropeSWA = m.rope
	if c.SWAWindow > 0 && (c.RopeBaseSWA != c.RopeBase || c.RopeScaleSWA != c.RopeScale) {
		m.ropeSWA = c.rope(c.RopeBaseSWA, c.RopeScaleSWA, nil)
	}
	for i := range m.Blocks {
		m.Blocks[i].swa = c.isSWA(i)
	}
	return m, nil
}

// Forward is llm_build_gemma, llm_build_gemma2_iswa or llm_build_gemma3_iswa
// over one chunk.
func (m *Gemma) Forward(p *nn.Pass) {
	x := p.Embed(m.TokenEmbd)
	x.Scale(float32(math.Sqrt(float64(x.W)))) // ggml_scale(inpL, sqrtf(n_embd))
	for l := range m.Blocks {
		b := &m.Blocks[l]
		mark := p.Mark()
		rope, attn := m.rope, &m.attn
		if b.swa {
			rope, attn = m.ropeSWA, &m.attnSWA
		}

		h := p.RMSNorm(x, b.AttnNorm, m.eps)
		q, k, v := p.Mul3(b.Q, b.K, b.V, h)
		if b.QNorm != nil {
			nn.HeadNorm(q, attn.Heads, nn.RMSNorm, b.QNorm, m.eps)
			nn.HeadNorm(k, attn.KVHeads, nn.RMSNorm, b.KNorm, m.eps)
		}
		p.Rope(q, rope, attn.Heads)
		p.Rope(k, rope, attn.KVHeads)
		q.Scale(m.qScale)
		o := p.Mul(b.O, p.Attend(l, attn, q, k, v))
		if b.AttnPost != nil {
			o = p.RMSNorm(o, b.AttnPost, m.eps)
		}
		x.Add(o)

		h = p.RMSNorm(x, b.FFNNorm, m.eps)
		g, u := p.Mul2(b.Gate, b.Up, h)
		nn.GeGLU(g, u)
		d := p.Mul(b.Down, g)
		if b.FFNPost != nil {
			d = p.RMSNorm(d, b.FFNPost, m.eps)
		}
		x.Add(d)

		p.Reset(mark)
	}
	out := p.Logits(m.Output, p.RMSNorm(p.Wanted(x), m.OutputNorm, m.eps))
	if m.logitCap != 0 {
		nn.Softcap(out, m.logitCap)
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// readGemma reads what the Gemma graphs add (llama_model_gemma2 and
// llama_model_gemma3::load_arch_hparams): the query scale, Gemma 2's
// soft-caps (defaults 50 and 30), and the sliding-window layers with their
// own rope base and scale.
func readGemma(f *gguf.File, c *Config, gen int) error {
	key := func(k string) string { return c.Arch + "." + k }
	// Q is scaled by 1/sqrt(head size); the 27B models (46 layers of
	// Gemma 2, 62 of Gemma 3) use 1/sqrt(Dim/Heads) instead.
	c.AttnScale = 1 / float32(math.Sqrt(float64(c.HeadDim))) // 1.0f/sqrtf(float(n))
	if (gen == 2 && c.Layers == 46) || (gen == 3 && c.Layers == 62) {
		c.AttnScale = 1 / float32(math.Sqrt(float64(c.Dim/c.Heads)))
	}
	if gen == 1 {
		return nil
	}
	float := func(k string, def float32) float32 {
		if v, ok := f.Float(key(k)); ok {
			return float32(v)
		}
		return def
	}
	uint := func(k string, def int) (int, error) {
		if !f.Has(key(k)) {
			return def, nil
		}
		v, ok := f.Uint(key(k))
		if !ok || v > 1<<24 {
			return 0, fmt.Errorf("llama: metadata %s is not a small unsigned integer (per-layer arrays are not supported)", key(k))
		}
		return int(v), nil
	}
	var err error
	switch gen {
	case 2:
		c.AttnSoftcap = float("attn_logit_softcapping", 50)
		c.FinalSoftcap = float("final_logit_softcapping", 30)
		if c.SWAWindow, err = uint("attention.sliding_window", 4096); err != nil {
			return err
		}
		if c.SWAPeriod, err = uint("attention.sliding_window_pattern", 2); err != nil {
			return err
		}
		c.RopeBaseSWA = float("rope.freq_base_swa", c.RopeBase)
		c.RopeScaleSWA = c.RopeScale
	case 3:
		c.FinalSoftcap = float("final_logit_softcapping", 0)
		if c.SWAWindow, err = uint("attention.sliding_window", 0); err != nil {
			return err
		}
		if c.SWAPeriod, err = uint("attention.sliding_window_pattern", 6); err != nil {
			return err
		}
		c.RopeBaseSWA = float("rope.freq_base_swa", 10000)
		c.RopeScaleSWA = 1
	}
	for _, v := range []float32{c.AttnSoftcap, c.FinalSoftcap, c.RopeBaseSWA} {
		if v < 0 || math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("llama: %s soft-cap or rope base %v", c.Arch, v)
		}
	}
	if c.SWAWindow > 0 && !(c.RopeBaseSWA > 0) {
		return fmt.Errorf("llama: %s sliding-window rope base %v", c.Arch, c.RopeBaseSWA)
	}
	return nil
}

// isSWA is llama_hparams::set_swa_pattern without dense_first: in each
// period of layers all but the last use the sliding window (period 0:
// all do).
func (c *Config) isSWA(layer int) bool {
	if c.SWAWindow <= 0 {
		return false
	}
	return c.SWAPeriod == 0 || layer%c.SWAPeriod < c.SWAPeriod-1
}

package llama

import (
	"fmt"
	"math"

	"chat/models/gguf"
	"chat/models/nn"
	"chat/models/weights"
)

// Granite is llama.cpp's "granite" (IBM Granite 3.x dense; src/models/
// granite.cpp): Llama with four scalars from the metadata. The token
// embeddings are multiplied by embedding_scale (build_inp_embd), each
// block's attention and feed-forward outputs by residual_scale before they
// join the residual stream, the scores by attention.scale instead of
// 1/sqrt(head_dim), and the logits by 1/logit_scale. rope.scaling.finetuned
// false turns rope off, as llama.cpp reads it.
type Granite struct {
	TokenEmbd  weights.Linear `gguf:"token_embd.weight,keep,embed" shape:"vocab,dim"`
	Blocks     []llamaBlock   `gguf:"blk.%d"`
	OutputNorm []float32      `gguf:"output_norm.weight" shape:"dim"`
	Output     weights.Linear `gguf:"output.weight,optional" shape:"vocab,dim"`

	eps           float32
	embedScale    float32 // 1 when the file's is 0 (x·1 is x, bit for bit)
	residualScale float32 // likewise
	invLogitScale float32 // 1.0f/f_logit_scale, as ggml_scale is given it
	rope          *nn.Rope
	noRope        bool
	attn          nn.Attention
}

func newGranite(c *Config, f *gguf.File, src *source) (nn.Arch, error) {
	noRope, err := readGranite(f, c)
	if err != nil {
		return nil, err
	}
	m := &Granite{Blocks: make([]llamaBlock, c.Layers), eps: c.Eps, attn: c.attention(false), noRope: noRope,
		embedScale: orOne(c.EmbedScale), residualScale: orOne(c.ResidualScale), invLogitScale: 1 / c.LogitScale}
	if c.KQScale != 0 {
		m.attn.Scale = c.KQScale
	}
	if err := nn.Bind(m, "gguf", src, c.dims()); err != nil {
		return nil, err
	}
	if m.Output == nil {
		m.Output = m.TokenEmbd
	}
	factors, err := ropeFactors(c, src)
	if err != nil {
		return nil, err
	}
	m.rope = c.rope(c.RopeBase, c.RopeScale, factors)
	return m, nil
}

// Forward is llama_model_granite::graph over one chunk.
func (m *Granite) Forward(p *nn.Pass) {
	x := p.Embed(m.TokenEmbd)
	x.Scale(m.embedScale)
	for l := range m.Blocks {
		b := &m.Blocks[l]
		mark := p.Mark()

		h := p.RMSNorm(x, b.AttnNorm, m.eps)
		q, k, v := p.Mul3(b.Q, b.K, b.V, h)
		q.AddBias(b.QB)
		k.AddBias(b.KB)
		v.AddBias(b.VB)
		if !m.noRope {
			p.Rope(q, m.rope, m.attn.Heads)
			p.Rope(k, m.rope, m.attn.KVHeads)
		}
		o := p.Mul(b.O, p.Attend(l, &m.attn, q, k, v))
		o.AddBias(b.OB)
		o.Scale(m.residualScale)
		x.Add(o)

		h = p.RMSNorm(x, b.FFNNorm, m.eps)
		g, u := p.Mul2(b.Gate, b.Up, h)
		g.AddBias(b.GateB)
		u.AddBias(b.UpB)
		nn.SwiGLU(g, u)
		d := p.Mul(b.Down, g)
		d.AddBias(b.DownB)
		d.Scale(m.residualScale)
		x.Add(d)

		p.Reset(mark)
	}
	p.Logits(m.Output, p.RMSNorm(p.Wanted(x), m.OutputNorm, m.eps)).Scale(m.invLogitScale)
}

// readGranite reads llama_model_granite::load_arch_hparams' scalars:
// logit_scale is required and positive (the logits are divided by it); the
// others are optional, 0 (absent) leaving their step out. A scale that is
// negative, NaN or infinite as a float32 is refused. It reports whether
// rope.scaling.finetuned turns rope off.
func readGranite(f *gguf.File, c *Config) (noRope bool, err error) {
	key := func(k string) string { return c.Arch + "." + k }
	scale := func(k string, dst *float32) error {
		if !f.Has(key(k)) {
			return nil
		}
		v, ok := f.Float(key(k))
		if !ok {
			return fmt.Errorf("llama: metadata %s is not a number", key(k))
		}
		if v32 := float32(v); !(v32 >= 0) || math.IsInf(float64(v32), 0) {
			return fmt.Errorf("llama: metadata %s = %v, want a finite scale ≥ 0", key(k), v)
		}
		*dst = float32(v)
		return nil
	}
	for _, s := range []struct {
		k   string
		dst *float32
	}{
		{"embedding_scale", &c.EmbedScale}, {"residual_scale", &c.ResidualScale},
		{"attention.scale", &c.KQScale}, {"logit_scale", &c.LogitScale},
	} {
		if err := scale(s.k, s.dst); err != nil {
			return false, err
		}
	}
	if !(c.LogitScale > 0) {
		return false, fmt.Errorf("llama: metadata %s missing or 0 (the logits are divided by it)", key("logit_scale"))
	}
	if f.Has(key("rope.scaling.finetuned")) {
		on, ok := f.Bool(key("rope.scaling.finetuned"))
		if !ok {
			return false, fmt.Errorf("llama: metadata %s is not a bool", key("rope.scaling.finetuned"))
		}
		noRope = !on
	}
	return noRope, nil
}

// orOne is s, or 1 for a scale llama.cpp leaves out when it is 0.
func orOne(s float32) float32 {
	if s == 0 {
		return 1
	}
	return s
}

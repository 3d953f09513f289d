package llama

import (
	"math"

	"chat/models/gguf"
	"chat/models/nn"
	"chat/models/weights"
)

// Phi3 is llama.cpp's "phi3" (src/models/phi3.cpp): Q, K and V usually
// fused in one attn_qkv, Q scaled by 1/sqrt(head_dim) before the scores
// (which are then not scaled), rope in the NEOX layout with LongRoPE's
// per-pair factors, and the gate and up projections fused in one ffn_up of
// twice the feed-forward width (gate rows first: LLM_FFN_SWIGLU with
// LLM_FFN_SEQ).
type Phi3 struct {
	TokenEmbd  weights.Linear `gguf:"token_embd.weight,keep,embed" shape:"vocab,dim"`
	Blocks     []phi3Block    `gguf:"blk.%d"`
	OutputNorm []float32      `gguf:"output_norm.weight" shape:"dim"`
	Output     weights.Linear `gguf:"output.weight,optional" shape:"vocab,dim"`
	OutputB    []float32      `gguf:"output.bias,optional" shape:"vocab"`

	eps    float32
	qScale float32
	rope   *nn.Rope
	attn   nn.Attention
}

type phi3Block struct {
	AttnNorm []float32      `gguf:"attn_norm.weight" shape:"dim"`
	Q        weights.Linear `gguf:"attn_q.weight" fuse:"qkv" shape:"q_dim,dim"`
	K        weights.Linear `gguf:"attn_k.weight" fuse:"qkv" shape:"kv_dim,dim"`
	V        weights.Linear `gguf:"attn_v.weight" fuse:"qkv" shape:"kv_dim,dim"`
	QB       []float32      `gguf:"attn_q.bias,optional" shape:"q_dim"`
	KB       []float32      `gguf:"attn_k.bias,optional" shape:"kv_dim"`
	VB       []float32      `gguf:"attn_v.bias,optional" shape:"kv_dim"`
	O        weights.Linear `gguf:"attn_output.weight" shape:"dim,q_dim"`
	OB       []float32      `gguf:"attn_output.bias,optional" shape:"dim"`
	FFNNorm  []float32      `gguf:"ffn_norm.weight" shape:"dim"`
	GateUp   weights.Linear `gguf:"ffn_up.weight" shape:"2*ffn,dim"`
	Down     weights.Linear `gguf:"ffn_down.weight" shape:"dim,ffn"`

	Gate, Up weights.Linear // GateUp's halves
}

func newPhi3(c *Config, _ *gguf.File, src *source) (nn.Arch, error) {
	c.NeoX = true
	m := &Phi3{Blocks: make([]phi3Block, c.Layers), eps: c.Eps, attn: c.attention(true),
		qScale: 1 / float32(math.Sqrt(float64(c.HeadDim)))} // 1.0f/sqrtf(float(n_embd_head))
	if err := nn.Bind(m, "gguf", src, c.dims()); err != nil {
		return nil, err
	}
	for i := range m.Blocks {
		b := &m.Blocks[i]
		if parts := weights.Split(b.GateUp, c.FFN, c.FFN); parts != nil {
			b.Gate, b.Up = parts[0], parts[1] // multiplied as one (Pass.Mul2)
		} else {
			b.Gate, b.Up = b.GateUp.Slice(0, c.FFN), b.GateUp.Slice(c.FFN, 2*c.FFN)
		}
		b.GateUp = nil
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

// Forward is llm_build_phi3 over one chunk.
func (m *Phi3) Forward(p *nn.Pass) {
	x := p.Embed(m.TokenEmbd)
	for l := range m.Blocks {
		b := &m.Blocks[l]
		mark := p.Mark()

		h := p.RMSNorm(x, b.AttnNorm, m.eps)
		q, k, v := p.Mul3(b.Q, b.K, b.V, h)
		q.AddBias(b.QB)
		k.AddBias(b.KB)
		v.AddBias(b.VB)
		p.Rope(q, m.rope, m.attn.Heads)
		p.Rope(k, m.rope, m.attn.KVHeads)
		q.Scale(m.qScale)
		o := p.Mul(b.O, p.Attend(l, &m.attn, q, k, v))
		o.AddBias(b.OB)
		x.Add(o)

		h = p.RMSNorm(x, b.FFNNorm, m.eps)
		g, u := p.Mul2(b.Gate, b.Up, h)
		nn.SwiGLU(g, u)
		x.Add(p.Mul(b.Down, g))

		p.Reset(mark)
	}
	p.Logits(m.Output, p.RMSNorm(p.Wanted(x), m.OutputNorm, m.eps)).AddBias(m.OutputB)
}

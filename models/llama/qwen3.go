package llama

import (
	"chat/models/gguf"
	"chat/models/nn"
	"chat/models/weights"
)

// Qwen3 is llama.cpp's "qwen3" (src/models/qwen3.cpp): Llama without
// biases, with an RMSNorm over each head of Q and K before the rotation,
// and rope in the NEOX layout.
type Qwen3 struct {
	TokenEmbd  weights.Linear `gguf:"token_embd.weight,keep,embed" shape:"vocab,dim"`
	Blocks     []qwen3Block   `gguf:"blk.%d"`
	OutputNorm []float32      `gguf:"output_norm.weight" shape:"dim"`
	Output     weights.Linear `gguf:"output.weight,optional" shape:"vocab,dim"`

	eps  float32
	rope *nn.Rope
	attn nn.Attention
}

type qwen3Block struct {
	AttnNorm []float32      `gguf:"attn_norm.weight" shape:"dim"`
	Q        weights.Linear `gguf:"attn_q.weight" fuse:"qkv" shape:"q_dim,dim"`
	K        weights.Linear `gguf:"attn_k.weight" fuse:"qkv" shape:"kv_dim,dim"`
	V        weights.Linear `gguf:"attn_v.weight" fuse:"qkv" shape:"kv_dim,dim"`
	QNorm    []float32      `gguf:"attn_q_norm.weight" shape:"head_dim"`
	KNorm    []float32      `gguf:"attn_k_norm.weight" shape:"head_dim"`
	O        weights.Linear `gguf:"attn_output.weight" shape:"dim,q_dim"`
	FFNNorm  []float32      `gguf:"ffn_norm.weight" shape:"dim"`
	Gate     weights.Linear `gguf:"ffn_gate.weight" fuse:"gate_up" shape:"ffn,dim"`
	Up       weights.Linear `gguf:"ffn_up.weight" fuse:"gate_up" shape:"ffn,dim"`
	Down     weights.Linear `gguf:"ffn_down.weight" shape:"dim,ffn"`
}

func newQwen3(c *Config, _ *gguf.File, src *source) (nn.Arch, error) {
	c.NeoX = true
	m := &Qwen3{Blocks: make([]qwen3Block, c.Layers), eps: c.Eps, attn: c.attention(false)}
	if err := nn.Bind(m, "gguf", src, c.dims()); err != nil {
		return nil, err
	}
	if m.Output == nil {
		m.Output = m.TokenEmbd
	}
	m.rope = c.rope(c.RopeBase, c.RopeScale, nil)
	return m, nil
}

// Forward is llm_build_qwen3 over one chunk.
func (m *Qwen3) Forward(p *nn.Pass) {
	x := p.Embed(m.TokenEmbd)
	for l := range m.Blocks {
		b := &m.Blocks[l]
		mark := p.Mark()

		h := p.RMSNorm(x, b.AttnNorm, m.eps)
		q, k, v := p.Mul3(b.Q, b.K, b.V, h)
		nn.HeadNorm(q, m.attn.Heads, nn.RMSNorm, b.QNorm, m.eps)
		nn.HeadNorm(k, m.attn.KVHeads, nn.RMSNorm, b.KNorm, m.eps)
		p.Rope(q, m.rope, m.attn.Heads)
		p.Rope(k, m.rope, m.attn.KVHeads)
		x.Add(p.Mul(b.O, p.Attend(l, &m.attn, q, k, v)))

		h = p.RMSNorm(x, b.FFNNorm, m.eps)
		g, u := p.Mul2(b.Gate, b.Up, h)
		nn.SwiGLU(g, u)
		x.Add(p.Mul(b.Down, g))

		p.Reset(mark)
	}
	p.Logits(m.Output, p.RMSNorm(p.Wanted(x), m.OutputNorm, m.eps))
}

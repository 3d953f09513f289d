package llama

import (
	"chat/models/gguf"
	"chat/models/nn"
	"chat/models/weights"
)

// Qwen2 is llama.cpp's "qwen2" (src/models/qwen2.cpp): Llama with biases
// on Q, K and V that the graph always adds, rope in the NEOX layout (pairs
// i and i+RopeDim/2), and optional biases on the attention output and the
// output layer.
type Qwen2 struct {
	TokenEmbd  weights.Linear `gguf:"token_embd.weight,keep,embed" shape:"vocab,dim"`
	Blocks     []qwen2Block   `gguf:"blk.%d"`
	OutputNorm []float32      `gguf:"output_norm.weight" shape:"dim"`
	Output     weights.Linear `gguf:"output.weight,optional" shape:"vocab,dim"`
	OutputB    []float32      `gguf:"output.bias,optional" shape:"vocab"`

	eps  float32
	rope *nn.Rope
	attn nn.Attention
}

type qwen2Block struct {
	AttnNorm []float32      `gguf:"attn_norm.weight" shape:"dim"`
	Q        weights.Linear `gguf:"attn_q.weight" fuse:"qkv" shape:"q_dim,dim"`
	K        weights.Linear `gguf:"attn_k.weight" fuse:"qkv" shape:"kv_dim,dim"`
	V        weights.Linear `gguf:"attn_v.weight" fuse:"qkv" shape:"kv_dim,dim"`
	QB       []float32      `gguf:"attn_q.bias" shape:"q_dim"`
	KB       []float32      `gguf:"attn_k.bias" shape:"kv_dim"`
	VB       []float32      `gguf:"attn_v.bias" shape:"kv_dim"`
	O        weights.Linear `gguf:"attn_output.weight" shape:"dim,q_dim"`
	OB       []float32      `gguf:"attn_output.bias,optional" shape:"dim"`
	FFNNorm  []float32      `gguf:"ffn_norm.weight" shape:"dim"`
	Gate     weights.Linear `gguf:"ffn_gate.weight" fuse:"gate_up" shape:"ffn,dim"`
	Up       weights.Linear `gguf:"ffn_up.weight" fuse:"gate_up" shape:"ffn,dim"`
	Down     weights.Linear `gguf:"ffn_down.weight" shape:"dim,ffn"`
}

func newQwen2(c *Config, _ *gguf.File, src *source) (nn.Arch, error) {
	c.NeoX = true
	m := &Qwen2{Blocks: make([]qwen2Block, c.Layers), eps: c.Eps, attn: c.attention(false)}
	if err := nn.Bind(m, "gguf", src, c.dims()); err != nil {
		return nil, err
	}
	if m.Output == nil {
		m.Output = m.TokenEmbd
	}
	m.rope = c.rope(c.RopeBase, c.RopeScale, nil)
	return m, nil
}

// Forward is llm_build_qwen2 over one chunk.
func (m *Qwen2) Forward(p *nn.Pass) {
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

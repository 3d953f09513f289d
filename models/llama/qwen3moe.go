package llama

import (
	"chat/models/gguf"
	"chat/models/nn"
	"chat/models/weights"
)

// Qwen3MoE is llama.cpp's "qwen3moe" (Qwen3-30B-A3B; src/models/
// qwen3moe.cpp): Qwen3 with a mixture of experts for the feed-forward,
// the top expert_used_count of expert_count by the router's softmax, their
// weights renormalised to sum to 1 (build_moe_ffn's norm_w, always true
// here). The experts are expert_feed_forward_length wide, else
// feed_forward_length / expert_used_count as llama.cpp defaults it.
type Qwen3MoE struct {
	TokenEmbd  weights.Linear  `gguf:"token_embd.weight,keep,embed" shape:"vocab,dim"`
	Blocks     []qwen3MoEBlock `gguf:"blk.%d"`
	OutputNorm []float32       `gguf:"output_norm.weight" shape:"dim"`
	Output     weights.Linear  `gguf:"output.weight,optional" shape:"vocab,dim"`

	eps     float32
	rope    *nn.Rope
	attn    nn.Attention
	routing nn.Routing
}

type qwen3MoEBlock struct {
	AttnNorm []float32      `gguf:"attn_norm.weight" shape:"dim"`
	Q        weights.Linear `gguf:"attn_q.weight" fuse:"qkv" shape:"q_dim,dim"`
	K        weights.Linear `gguf:"attn_k.weight" fuse:"qkv" shape:"kv_dim,dim"`
	V        weights.Linear `gguf:"attn_v.weight" fuse:"qkv" shape:"kv_dim,dim"`
	QNorm    []float32      `gguf:"attn_q_norm.weight" shape:"head_dim"`
	KNorm    []float32      `gguf:"attn_k_norm.weight" shape:"head_dim"`
	O        weights.Linear `gguf:"attn_output.weight" shape:"dim,q_dim"`
	FFNNorm  []float32      `gguf:"ffn_norm.weight" shape:"dim"`
	MoE      moeFFN
}

func newQwen3MoE(c *Config, f *gguf.File, src *source) (nn.Arch, error) {
	routing, err := readExperts(f, c, true, true)
	if err != nil {
		return nil, err
	}
	c.NeoX = true
	m := &Qwen3MoE{Blocks: make([]qwen3MoEBlock, c.Layers), eps: c.Eps, attn: c.attention(false), routing: routing}
	if err := nn.Bind(m, "gguf", src, c.dims()); err != nil {
		return nil, err
	}
	if m.Output == nil {
		m.Output = m.TokenEmbd
	}
	m.rope = c.rope(c.RopeBase, c.RopeScale, nil)
	return m, nil
}

// Forward is llama_model_qwen3moe's graph over one chunk.
func (m *Qwen3MoE) Forward(p *nn.Pass) {
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

		x.Add(b.MoE.forward(p, m.routing, p.RMSNorm(x, b.FFNNorm, m.eps)))

		p.Reset(mark)
	}
	p.Logits(m.Output, p.RMSNorm(p.Wanted(x), m.OutputNorm, m.eps))
}

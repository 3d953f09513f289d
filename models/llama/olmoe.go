package llama

import (
	"fmt"

	"chat/models/gguf"
	"chat/models/nn"
	"chat/models/weights"
)

// OLMoE is llama.cpp's "olmoe" (OLMoE-1B-7B; src/models/olmoe.cpp): a
// pre-norm Llama whose Q and K are RMS-normed over their whole rows before
// the rotation (as OLMo 2's), rope in the NEOX layout, its own output
// matrix, and a mixture of experts feed_forward_length wide whose top-k
// weights stay the router's probabilities (norm_w false). llama.cpp makes
// both norms n_embd wide, so K must be as wide as Q: no grouped-query
// attention.
type OLMoE struct {
	TokenEmbd  weights.Linear `gguf:"token_embd.weight,keep,embed" shape:"vocab,dim"`
	Blocks     []olmoeBlock   `gguf:"blk.%d"`
	OutputNorm []float32      `gguf:"output_norm.weight" shape:"dim"`
	Output     weights.Linear `gguf:"output.weight" shape:"vocab,dim"`

	eps     float32
	rope    *nn.Rope
	attn    nn.Attention
	routing nn.Routing
}

type olmoeBlock struct {
	AttnNorm []float32      `gguf:"attn_norm.weight" shape:"dim"`
	Q        weights.Linear `gguf:"attn_q.weight" fuse:"qkv" shape:"dim,dim"`
	K        weights.Linear `gguf:"attn_k.weight" fuse:"qkv" shape:"kv_dim,dim"`
	V        weights.Linear `gguf:"attn_v.weight" fuse:"qkv" shape:"kv_dim,dim"`
	QNorm    []float32      `gguf:"attn_q_norm.weight" shape:"dim"`
	KNorm    []float32      `gguf:"attn_k_norm.weight" shape:"dim"`
	O        weights.Linear `gguf:"attn_output.weight" shape:"dim,dim"`
	FFNNorm  []float32      `gguf:"ffn_norm.weight" shape:"dim"`
	MoE      moeFFN
}

func newOLMoE(c *Config, f *gguf.File, src *source) (nn.Arch, error) {
	if c.KVHeads*c.HeadDim != c.Dim || c.Heads*c.HeadDim != c.Dim {
		return nil, fmt.Errorf("llama: olmoe needs Q and K as wide as the embedding (%d), not %d and %d", c.Dim, c.Heads*c.HeadDim, c.KVHeads*c.HeadDim)
	}
	routing, err := readExperts(f, c, false, false)
	if err != nil {
		return nil, err
	}
	c.NeoX = true
	m := &OLMoE{Blocks: make([]olmoeBlock, c.Layers), eps: c.Eps, attn: c.attention(false), routing: routing}
	if err := nn.Bind(m, "gguf", src, c.dims()); err != nil {
		return nil, err
	}
	m.rope = c.rope(c.RopeBase, c.RopeScale, nil)
	return m, nil
}

// Forward is llama_model_olmoe's graph over one chunk.
func (m *OLMoE) Forward(p *nn.Pass) {
	x := p.Embed(m.TokenEmbd)
	for l := range m.Blocks {
		b := &m.Blocks[l]
		mark := p.Mark()

		h := p.RMSNorm(x, b.AttnNorm, m.eps)
		q, k, v := p.Mul3(b.Q, b.K, b.V, h)
		q, k = p.RMSNorm(q, b.QNorm, m.eps), p.RMSNorm(k, b.KNorm, m.eps)
		p.Rope(q, m.rope, m.attn.Heads)
		p.Rope(k, m.rope, m.attn.KVHeads)
		x.Add(p.Mul(b.O, p.Attend(l, &m.attn, q, k, v)))

		x.Add(b.MoE.forward(p, m.routing, p.RMSNorm(x, b.FFNNorm, m.eps)))

		p.Reset(mark)
	}
	p.Logits(m.Output, p.RMSNorm(p.Wanted(x), m.OutputNorm, m.eps))
}

package llama

import (
	"fmt"

	"chat/models/gguf"
	"chat/models/nn"
	"chat/models/weights"
)

// OLMo2 is llama.cpp's "olmo2" (OLMo 2; src/models/olmo2.cpp): Llama with
// the norms after the sublayers instead of before. Each block normalises Q
// and K over their whole rows (all heads at once) before the rotation, and
// the attention and feed-forward outputs before they join the residual
// stream, whose input goes in unnormalised. Rope in the NEOX layout; the
// output matrix is its own.
type OLMo2 struct {
	TokenEmbd  weights.Linear `gguf:"token_embd.weight,keep,embed" shape:"vocab,dim"`
	Blocks     []olmo2Block   `gguf:"blk.%d"`
	OutputNorm []float32      `gguf:"output_norm.weight" shape:"dim"`
	Output     weights.Linear `gguf:"output.weight" shape:"vocab,dim"`

	eps  float32
	rope *nn.Rope
	attn nn.Attention
}

type olmo2Block struct {
	Q        weights.Linear `gguf:"attn_q.weight" fuse:"qkv" shape:"q_dim,dim"`
	K        weights.Linear `gguf:"attn_k.weight" fuse:"qkv" shape:"kv_dim,dim"`
	V        weights.Linear `gguf:"attn_v.weight" fuse:"qkv" shape:"kv_dim,dim"`
	QNorm    []float32      `gguf:"attn_q_norm.weight" shape:"q_dim"`
	KNorm    []float32      `gguf:"attn_k_norm.weight" shape:"kv_dim"`
	O        weights.Linear `gguf:"attn_output.weight" shape:"dim,q_dim"`
	AttnPost []float32      `gguf:"post_attention_norm.weight" shape:"dim"`
	Gate     weights.Linear `gguf:"ffn_gate.weight" fuse:"gate_up" shape:"ffn,dim"`
	Up       weights.Linear `gguf:"ffn_up.weight" fuse:"gate_up" shape:"ffn,dim"`
	Down     weights.Linear `gguf:"ffn_down.weight" shape:"dim,ffn"`
	FFNPost  []float32      `gguf:"post_ffw_norm.weight" shape:"dim"`
}

func newOLMo2(c *Config, f *gguf.File, src *source) (nn.Arch, error) {
	// llama.cpp turns a positive sliding_window into OLMo 3's
	// sliding-window layers, which this file does not run.
	if w, ok := f.Uint(c.Arch + ".attention.sliding_window"); ok && w > 0 {
		return nil, fmt.Errorf("llama: %s.attention.sliding_window = %d: sliding-window OLMo models are not supported", c.Arch, w)
	}
	c.NeoX = true
	m := &OLMo2{Blocks: make([]olmo2Block, c.Layers), eps: c.Eps, attn: c.attention(false)}
	if err := nn.Bind(m, "gguf", src, c.dims()); err != nil {
		return nil, err
	}
	m.rope = c.rope(c.RopeBase, c.RopeScale, nil)
	return m, nil
}

// Forward is llama_model_olmo2::graph (without sliding windows) over one
// chunk.
func (m *OLMo2) Forward(p *nn.Pass) {
	x := p.Embed(m.TokenEmbd)
	for l := range m.Blocks {
		b := &m.Blocks[l]
		mark := p.Mark()

		q, k, v := p.Mul3(b.Q, b.K, b.V, x)
		q, k = p.RMSNorm(q, b.QNorm, m.eps), p.RMSNorm(k, b.KNorm, m.eps)
		p.Rope(q, m.rope, m.attn.Heads)
		p.Rope(k, m.rope, m.attn.KVHeads)
		x.Add(p.RMSNorm(p.Mul(b.O, p.Attend(l, &m.attn, q, k, v)), b.AttnPost, m.eps))

		g, u := p.Mul2(b.Gate, b.Up, x)
		nn.SwiGLU(g, u)
		x.Add(p.RMSNorm(p.Mul(b.Down, g), b.FFNPost, m.eps))

		p.Reset(mark)
	}
	p.Logits(m.Output, p.RMSNorm(p.Wanted(x), m.OutputNorm, m.eps))
}

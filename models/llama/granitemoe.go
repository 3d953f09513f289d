package llama

import (
	"fmt"

	"chat/models/gguf"
	"chat/models/nn"
	"chat/models/weights"
)

// GraniteMoE is llama.cpp's "granitemoe" (IBM Granite 3.x MoE; the MoE
// branch of src/models/granite.cpp): Granite's four scales around a
// mixture of experts, feed_forward_length wide each, their weights
// renormalised (norm_w true). Granite MoE Shared's extra expert
// (expert_shared_feed_forward_length) is not supported.
type GraniteMoE struct {
	TokenEmbd  weights.Linear    `gguf:"token_embd.weight,keep,embed" shape:"vocab,dim"`
	Blocks     []graniteMoEBlock `gguf:"blk.%d"`
	OutputNorm []float32         `gguf:"output_norm.weight" shape:"dim"`
	Output     weights.Linear    `gguf:"output.weight,optional" shape:"vocab,dim"`

	eps           float32
	embedScale    float32 // as Granite's
	residualScale float32
	invLogitScale float32
	rope          *nn.Rope
	noRope        bool
	attn          nn.Attention
	routing       nn.Routing
}

type graniteMoEBlock struct {
	AttnNorm []float32      `gguf:"attn_norm.weight" shape:"dim"`
	Q        weights.Linear `gguf:"attn_q.weight" fuse:"qkv" shape:"q_dim,dim"`
	K        weights.Linear `gguf:"attn_k.weight" fuse:"qkv" shape:"kv_dim,dim"`
	V        weights.Linear `gguf:"attn_v.weight" fuse:"qkv" shape:"kv_dim,dim"`
	O        weights.Linear `gguf:"attn_output.weight" shape:"dim,q_dim"`
	OB       []float32      `gguf:"attn_output.bias,optional" shape:"dim"`
	FFNNorm  []float32      `gguf:"ffn_norm.weight" shape:"dim"`
	MoE      moeFFN
}

func newGraniteMoE(c *Config, f *gguf.File, src *source) (nn.Arch, error) {
	noRope, err := readGranite(f, c)
	if err != nil {
		return nil, err
	}
	if n, ok := f.Uint(c.Arch + ".expert_shared_feed_forward_length"); ok && n > 0 {
		return nil, fmt.Errorf("llama: %s.expert_shared_feed_forward_length = %d: Granite MoE with a shared expert is not supported", c.Arch, n)
	}
	routing, err := readExperts(f, c, false, true)
	if err != nil {
		return nil, err
	}
	m := &GraniteMoE{Blocks: make([]graniteMoEBlock, c.Layers), eps: c.Eps, attn: c.attention(false), noRope: noRope,
		embedScale: orOne(c.EmbedScale), residualScale: orOne(c.ResidualScale), invLogitScale: 1 / c.LogitScale,
		routing: routing}
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

// Forward is llama_model_granite's graph with the MoE branch over one
// chunk.
func (m *GraniteMoE) Forward(p *nn.Pass) {
	x := p.Embed(m.TokenEmbd)
	x.Scale(m.embedScale)
	for l := range m.Blocks {
		b := &m.Blocks[l]
		mark := p.Mark()

		h := p.RMSNorm(x, b.AttnNorm, m.eps)
		q, k, v := p.Mul3(b.Q, b.K, b.V, h)
		if !m.noRope {
			p.Rope(q, m.rope, m.attn.Heads)
			p.Rope(k, m.rope, m.attn.KVHeads)
		}
		o := p.Mul(b.O, p.Attend(l, &m.attn, q, k, v))
		o.AddBias(b.OB)
		o.Scale(m.residualScale)
		x.Add(o)

		d := b.MoE.forward(p, m.routing, p.RMSNorm(x, b.FFNNorm, m.eps))
		d.Scale(m.residualScale)
		x.Add(d)

		p.Reset(mark)
	}
	p.Logits(m.Output, p.RMSNorm(p.Wanted(x), m.OutputNorm, m.eps)).Scale(m.invLogitScale)
}

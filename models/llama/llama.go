package llama

import (
	"chat/models/gguf"
	"chat/models/nn"
	"chat/models/weights"
)

// Llama is llama.cpp's "llama" architecture (src/models/llama.cpp): RMSNorm,
// grouped-query attention with rope in ggml's NORM layout (pairs of adjacent
// values; the converter permutes Q and K for it), a SwiGLU feed-forward and
// an output layer that falls back to the token embedding. Biases are taken
// when the file has them; Llama 3's rope frequency factors come from
// rope_freqs.weight or the rope scaling metadata.
type Llama struct {
	TokenEmbd  weights.Linear `gguf:"token_embd.weight,keep,embed" shape:"vocab,dim"`
	Blocks     []llamaBlock   `gguf:"blk.%d"`
	OutputNorm []float32      `gguf:"output_norm.weight" shape:"dim"`
	Output     weights.Linear `gguf:"output.weight,optional" shape:"vocab,dim"`
	OutputB    []float32      `gguf:"output.bias,optional" shape:"vocab"`

	eps  float32
	rope *nn.Rope
	attn nn.Attention
}

type llamaBlock struct {
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
	Gate     weights.Linear `gguf:"ffn_gate.weight" fuse:"gate_up" shape:"ffn,dim"`
	Up       weights.Linear `gguf:"ffn_up.weight" fuse:"gate_up" shape:"ffn,dim"`
	Down     weights.Linear `gguf:"ffn_down.weight" shape:"dim,ffn"`
	GateB    []float32      `gguf:"ffn_gate.bias,optional" shape:"ffn"`
	UpB      []float32      `gguf:"ffn_up.bias,optional" shape:"ffn"`
	DownB    []float32      `gguf:"ffn_down.bias,optional" shape:"dim"`
}

func newLlama(c *Config, _ *gguf.File, src *source) (nn.Arch, error) {
	m := &Llama{Blocks: make([]llamaBlock, c.Layers), eps: c.Eps, attn: c.attention(false)}
	if err := nn.Bind(m, "gguf", src, c.dims()); err != nil {
		return nil, err
	}
	if m.Output == nil {
		m.Output = m.TokenEmbd // tied, as llama.cpp falls back to token_embd
	}
	factors, err := ropeFactors(c, src)
	if err != nil {
		return nil, err
	}
	m.rope = c.rope(c.RopeBase, c.RopeScale, factors)
	return m, nil
}

// Forward is llm_build_llama over one chunk.
func (m *Llama) Forward(p *nn.Pass) {
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
		g.AddBias(b.GateB)
		u.AddBias(b.UpB)
		nn.SwiGLU(g, u)
		d := p.Mul(b.Down, g)
		d.AddBias(b.DownB)
		x.Add(d)

		p.Reset(mark)
	}
	p.Logits(m.Output, p.RMSNorm(p.Wanted(x), m.OutputNorm, m.eps)).AddBias(m.OutputB)
}

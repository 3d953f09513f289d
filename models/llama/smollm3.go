package llama

import (
	"chat/models/gguf"
	"chat/models/nn"
	"chat/models/weights"
)

// SmolLM3 is llama.cpp's "smollm3" (src/models/smollm3.cpp): Llama whose
// every fourth layer (3, 7, 11, ...) leaves out rope and attends by content
// alone ("NoPE"). llama.cpp sets the period in load_hparams
// (n_no_rope_layer_step = 4); no GGUF key carries it. Its rope takes no
// frequency factors.
type SmolLM3 struct {
	TokenEmbd  weights.Linear `gguf:"token_embd.weight,keep,embed" shape:"vocab,dim"`
	Blocks     []llamaBlock   `gguf:"blk.%d"`
	OutputNorm []float32      `gguf:"output_norm.weight" shape:"dim"`
	Output     weights.Linear `gguf:"output.weight,optional" shape:"vocab,dim"`

	eps        float32
	noRopeStep int // layer l is roped unless (l+1) % noRopeStep == 0
	rope       *nn.Rope
	attn       nn.Attention
}

func newSmolLM3(c *Config, _ *gguf.File, src *source) (nn.Arch, error) {
	m := &SmolLM3{Blocks: make([]llamaBlock, c.Layers), eps: c.Eps, noRopeStep: 4, attn: c.attention(false)}
	if err := nn.Bind(m, "gguf", src, c.dims()); err != nil {
		return nil, err
	}
	if m.Output == nil {
		m.Output = m.TokenEmbd
	}
	m.rope = c.rope(c.RopeBase, c.RopeScale, nil)
	return m, nil
}

// Forward is llm_build_smollm3 over one chunk.
func (m *SmolLM3) Forward(p *nn.Pass) {
	x := p.Embed(m.TokenEmbd)
	for l := range m.Blocks {
		b := &m.Blocks[l]
		mark := p.Mark()

		h := p.RMSNorm(x, b.AttnNorm, m.eps)
		q, k, v := p.Mul3(b.Q, b.K, b.V, h)
		q.AddBias(b.QB)
		k.AddBias(b.KB)
		v.AddBias(b.VB)
		if (l+1)%m.noRopeStep != 0 {
			p.Rope(q, m.rope, m.attn.Heads)
			p.Rope(k, m.rope, m.attn.KVHeads)
		}
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
	p.Logits(m.Output, p.RMSNorm(p.Wanted(x), m.OutputNorm, m.eps))
}

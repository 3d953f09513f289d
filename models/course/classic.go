package course

import (
	"chat/models/nn"
	"chat/models/weights"
)

// Classic is the course's classic Transformer (course-format §2.1): token
// and learned position embeddings, pre-LayerNorm blocks of multi-head
// attention (one key/query/value matrix per head) and a ReLU MLP, a final
// LayerNorm and a biased output layer.
type Classic struct {
	TokenEmbed weights.Linear `pt:"token_embed.weight,keep,embed" shape:"vocab_size,n_embed"`
	PosEmbed   weights.Linear `pt:"position_embed.weight,keep,embed" shape:"context_length,n_embed"`
	Blocks     []classicBlock `pt:"attn_blocks.%d"`
	NormW      []float32      `pt:"layer_norm.weight" shape:"n_embed"`
	NormB      []float32      `pt:"layer_norm.bias" shape:"n_embed"`
	Head       weights.Linear `pt:"lm_head.weight,keep" shape:"vocab_size,n_embed"`
	HeadB      []float32      `pt:"lm_head.bias" shape:"vocab_size"`

	attn nn.Attention
}

type classicBlock struct {
	LN1W  []float32      `pt:"ln1.weight" shape:"n_embed"`
	LN1B  []float32      `pt:"ln1.bias" shape:"n_embed"`
	Heads []classicHead  `pt:"attn.heads.%d"` // stacked into Q, K, V at load
	Proj  weights.Linear `pt:"attn.proj.weight" shape:"n_embed,n_head*head_dim"`
	ProjB []float32      `pt:"attn.proj.bias" shape:"n_embed"`
	LN2W  []float32      `pt:"ln2.weight" shape:"n_embed"`
	LN2B  []float32      `pt:"ln2.bias" shape:"n_embed"`
	Up    weights.Linear `pt:"mlp.hidden.weight" shape:"4*n_embed,n_embed"`
	UpB   []float32      `pt:"mlp.hidden.bias" shape:"4*n_embed"`
	Down  weights.Linear `pt:"mlp.proj.weight" shape:"n_embed,4*n_embed"`
	DownB []float32      `pt:"mlp.proj.bias" shape:"n_embed"`

	// The heads' matrices stacked in head order, [n_head·head_dim][n_embed]:
	// the concatenation the course does after computing each head.
	Q, K, V weights.Linear
}

type classicHead struct {
	Query weights.Linear `pt:"query.weight" shape:"head_dim,n_embed"`
	Key   weights.Linear `pt:"key.weight" shape:"head_dim,n_embed"`
	Value weights.Linear `pt:"value.weight" shape:"head_dim,n_embed"`
}

// newClassicShape is the model with its blocks and heads, nothing bound.
func newClassicShape(c *config) *Classic {
	m := &Classic{Blocks: make([]classicBlock, c.Blocks)}
	for i := range m.Blocks {
		m.Blocks[i].Heads = make([]classicHead, c.Heads)
	}
	return m
}

func newClassic(c *config, src nn.Source) (*Classic, error) {
	m := newClassicShape(c)
	if err := nn.Bind(m, "pt", src, c.dims()); err != nil {
		return nil, err
	}
	for i := range m.Blocks {
		b := &m.Blocks[i]
		var q, k, v []weights.Linear
		for _, h := range b.Heads {
			q, k, v = append(q, h.Query), append(k, h.Key), append(v, h.Value)
		}
		var err error
		if b.Q, err = weights.ConcatRows(q...); err != nil {
			return nil, err
		}
		if b.K, err = weights.ConcatRows(k...); err != nil {
			return nil, err
		}
		if b.V, err = weights.ConcatRows(v...); err != nil {
			return nil, err
		}
		b.Heads = nil
	}
	m.attn = c.attention()
	return m, nil
}

// Forward is the course's Transformer.forward over one chunk of tokens.
func (m *Classic) Forward(p *nn.Pass) {
	x := p.Embed(m.TokenEmbed)
	pos := p.Alloc(x.W)
	for i, at := range p.Pos {
		m.PosEmbed.Row(pos.Row(i), at)
	}
	x.Add(pos)
	for l := range m.Blocks {
		b := &m.Blocks[l]
		mark := p.Mark()

		h := p.LayerNorm(x, b.LN1W, b.LN1B, 1e-5)
		a := p.Attend(l, &m.attn, p.Mul(b.Q, h), p.Mul(b.K, h), p.Mul(b.V, h))
		y := p.Mul(b.Proj, a)
		y.AddBias(b.ProjB)
		x.Add(y)

		h = p.LayerNorm(x, b.LN2W, b.LN2B, 1e-5)
		f := p.Mul(b.Up, h)
		f.AddBias(b.UpB)
		nn.ReLU(f)
		y = p.Mul(b.Down, f)
		y.AddBias(b.DownB)
		x.Add(y)

		p.Reset(mark)
	}
	h := p.LayerNorm(p.Wanted(x), m.NormW, m.NormB, 1e-5)
	p.Logits(m.Head, h).AddBias(m.HeadB)
}

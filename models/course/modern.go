package course

import (
	"chat/models/nn"
	"chat/models/weights"
)

// Modern is the course's modern Transformer (course-format §3.2):
// pre-RMSNorm blocks of rotary attention — grouped-query (optionally with
// per-head QK-norm and a sigmoid output gate) or multi-head latent — and a
// SwiGLU or mixture-of-experts feed-forward, with an output layer tied to
// the embedding or not. The variants are the types in Attn and MLP.
type Modern struct {
	TokenEmbed weights.Linear `pt:"token_embed.weight,keep,embed" shape:"vocab_size,n_embed"`
	Head       weights.Linear `pt:"lm_head.weight,keep" shape:"vocab_size,n_embed"`
	Blocks     []modernBlock  `pt:"blocks.%d"`
	FinalNorm  []float32      `pt:"final_norm.weight" shape:"n_embed"`

	eps  float32
	rope *nn.Rope
	attn nn.Attention
	topK int // MoE: experts per token
}

type modernBlock struct {
	AttnNorm []float32 `pt:"attn_norm.weight" shape:"n_embed"`
	Attn     attention `pt:"attn"` // *gqa or *mla
	MLPNorm  []float32 `pt:"mlp_norm.weight" shape:"n_embed"`
	MLP      mlp       `pt:"mlp"` // *swiglu or *moe
}

// attention and mlp are the two places a modern block varies.
type attention interface {
	forward(p *nn.Pass, m *Modern, l int, h nn.Rows) nn.Rows
}

type mlp interface {
	forward(p *nn.Pass, m *Modern, h nn.Rows) nn.Rows
}

// newModernShape is the model with its blocks and their variants, nothing
// bound.
func newModernShape(c *config) *Modern {
	m := &Modern{Blocks: make([]modernBlock, c.Blocks), eps: float32(c.NormEps), topK: c.TopK}
	for i := range m.Blocks {
		b := &m.Blocks[i]
		if c.Attention == "mla" {
			b.Attn = &mla{}
		} else {
			b.Attn = &gqa{}
		}
		if c.Experts > 0 {
			b.MLP = &moe{Experts: make([]swiglu, c.Experts)}
		} else {
			b.MLP = &swiglu{}
		}
	}
	return m
}

func newModern(c *config, src nn.Source) (*Modern, error) {
	m := newModernShape(c)
	if err := nn.Bind(m, "pt", src, c.dims()); err != nil {
		return nil, err
	}
	if c.Tied {
		// One parameter under two names: load_state_dict copies
		// lm_head.weight last, so its values win.
		m.TokenEmbed = m.Head
	}
	m.attn = c.attention()
	if c.Attention == "mla" {
		m.rope = nn.TorchRope(c.RopeDim, c.Ctx, c.RopeTheta)
	} else {
		m.rope = nn.TorchRope(c.HeadDim, c.Ctx, c.RopeTheta)
	}
	return m, nil
}

// Forward is the course's ModernTransformer.forward over one chunk.
func (m *Modern) Forward(p *nn.Pass) {
	x := p.Embed(m.TokenEmbed)
	for l := range m.Blocks {
		b := &m.Blocks[l]
		mark := p.Mark()
		x.Add(b.Attn.forward(p, m, l, p.TorchRMSNorm(x, b.AttnNorm, m.eps)))
		x.Add(b.MLP.forward(p, m, p.TorchRMSNorm(x, b.MLPNorm, m.eps)))
		p.Reset(mark)
	}
	p.Logits(m.Head, p.TorchRMSNorm(p.Wanted(x), m.FinalNorm, m.eps))
}

// WeightBytes counts, of a mixture-of-experts layer, the experts one token
// is routed to.
func (m *Modern) WeightBytes() int64 {
	n := nn.WeightBytes(m)
	for _, b := range m.Blocks {
		if e, ok := b.MLP.(*moe); ok && len(e.Experts) > 0 {
			per := e.Experts[0].Gate.Bytes() + e.Experts[0].Up.Bytes() + e.Experts[0].Down.Bytes()
			n -= int64(len(e.Experts)-m.topK) * per
		}
	}
	return n
}

// gqa is grouped-query attention: n_kv_head key/value heads shared by the
// query heads of their group, QK-norm (RMSNorm per head) before the rotation
// when qk_norm is set, and a sigmoid gate on the output when attn_gate is.
type gqa struct {
	Q     weights.Linear `pt:"q_proj.weight" shape:"n_head*head_dim,n_embed"`
	K     weights.Linear `pt:"k_proj.weight" shape:"n_kv_head*head_dim,n_embed"`
	V     weights.Linear `pt:"v_proj.weight" shape:"n_kv_head*head_dim,n_embed"`
	O     weights.Linear `pt:"o_proj.weight" shape:"n_embed,n_head*head_dim"`
	QNorm []float32      `pt:"q_norm.weight,if=qk_norm" shape:"head_dim"`
	KNorm []float32      `pt:"k_norm.weight,if=qk_norm" shape:"head_dim"`
	Gate  weights.Linear `pt:"gate.weight,if=attn_gate" shape:"n_head*head_dim,n_embed"`
}

func (a *gqa) forward(p *nn.Pass, m *Modern, l int, h nn.Rows) nn.Rows {
	at := &m.attn
	q, k, v := p.Mul(a.Q, h), p.Mul(a.K, h), p.Mul(a.V, h)
	if a.QNorm != nil {
		nn.HeadNorm(q, at.Heads, nn.TorchRMSNorm, a.QNorm, m.eps)
		nn.HeadNorm(k, at.KVHeads, nn.TorchRMSNorm, a.KNorm, m.eps)
	}
	p.Rope(q, m.rope, at.Heads)
	p.Rope(k, m.rope, at.KVHeads)
	o := p.Attend(l, at, q, k, v)
	if a.Gate != nil {
		g := p.Mul(a.Gate, h)
		for i, gv := range g.D[:g.N*g.W] {
			o.D[i] *= nn.Sigmoid(gv)
		}
	}
	return p.Mul(a.O, o)
}

// mla is multi-head latent attention as the course writes it (§3.2,
// §10.4): each head's query is [head_dim content | rope_dim position]; the
// keys and values come from a shared latent (kv_down, then RMSNorm) through
// k_up and v_up, plus one rotated position key shared by all heads. The
// cache holds the expanded keys [k_up(latent)_h | k_pos] and values rather
// than the latent: the numbers are the ones the course computes from its
// latent cache, and attention stays the one loop.
type mla struct {
	Q      weights.Linear `pt:"q_proj.weight" shape:"n_head*mla_q_dim,n_embed"`
	KVDown weights.Linear `pt:"kv_down.weight" shape:"kv_latent_dim+rope_dim,n_embed"`
	KVNorm []float32      `pt:"kv_norm.weight" shape:"kv_latent_dim"`
	KUp    weights.Linear `pt:"k_up.weight" shape:"n_head*head_dim,kv_latent_dim"`
	VUp    weights.Linear `pt:"v_up.weight" shape:"n_head*head_dim,kv_latent_dim"`
	O      weights.Linear `pt:"o_proj.weight" shape:"n_embed,n_head*head_dim"`
}

func (a *mla) forward(p *nn.Pass, m *Modern, l int, h nn.Rows) nn.Rows {
	at := &m.attn
	H, D, Dr := at.Heads, at.DV, at.DK-at.DV
	R := a.KVNorm
	q, kv := p.Mul(a.Q, h), p.Mul(a.KVDown, h)
	lat := p.AllocN(h.N, len(R))
	for i := 0; i < h.N; i++ {
		qi, kvi := q.Row(i), kv.Row(i)
		for hh := 0; hh < H; hh++ {
			m.rope.Apply(qi[hh*at.DK+D:], p.Pos[i])
		}
		nn.TorchRMSNorm(lat.Row(i), kvi[:len(R)], R, m.eps)
		m.rope.Apply(kvi[len(R):], p.Pos[i])
	}
	kc, v := p.Mul(a.KUp, lat), p.Mul(a.VUp, lat)
	k := p.AllocN(h.N, H*at.DK)
	for i := 0; i < h.N; i++ {
		ki, kci, kpos := k.Row(i), kc.Row(i), kv.Row(i)[len(R):len(R)+Dr]
		for hh := 0; hh < H; hh++ {
			copy(ki[hh*at.DK:hh*at.DK+D], kci[hh*D:(hh+1)*D])
			copy(ki[hh*at.DK+D:(hh+1)*at.DK], kpos)
		}
	}
	return p.Mul(a.O, p.Attend(l, at, q, k, v))
}

// swiglu is the SwiGLU feed-forward, down(silu(gate(x)) ⊙ up(x)), with the
// course's float64 sigmoid.
type swiglu struct {
	Gate weights.Linear `pt:"gate.weight" shape:"ffn_hidden,n_embed"`
	Up   weights.Linear `pt:"up.weight" shape:"ffn_hidden,n_embed"`
	Down weights.Linear `pt:"down.weight" shape:"n_embed,ffn_hidden"`
}

func (f *swiglu) forward(p *nn.Pass, _ *Modern, h nn.Rows) nn.Rows {
	return gatedMLP(p, f.Gate, f.Up, f.Down, h)
}

func gatedMLP(p *nn.Pass, gate, up, down weights.Linear, h nn.Rows) nn.Rows {
	g := p.Mul(gate, h)
	nn.TorchSwiGLU(g, p.Mul(up, h))
	return p.Mul(down, g)
}

// moe is the mixture-of-experts feed-forward (nn.MoE's routing) plus the
// optional shared expert every token goes through.
type moe struct {
	Router  weights.Linear `pt:"router.weight" shape:"n_experts,n_embed"`
	Experts []swiglu       `pt:"experts.%d"`
	Shared  sharedExpert   `pt:"shared,if=n_shared_experts"`
}

// sharedExpert is n_shared_experts experts fused into one SwiGLU.
type sharedExpert struct {
	Gate weights.Linear `pt:"gate.weight" shape:"ffn_hidden*n_shared_experts,n_embed"`
	Up   weights.Linear `pt:"up.weight" shape:"ffn_hidden*n_shared_experts,n_embed"`
	Down weights.Linear `pt:"down.weight" shape:"n_embed,ffn_hidden*n_shared_experts"`
}

func (f *moe) forward(p *nn.Pass, m *Modern, h nn.Rows) nn.Rows {
	out := p.MoE(h, f.Router, nn.Routing{K: m.topK, Renorm: true}, func(e int, in nn.Rows) nn.Rows {
		x := &f.Experts[e]
		return gatedMLP(p, x.Gate, x.Up, x.Down, in)
	})
	if f.Shared.Gate != nil {
		out.Add(gatedMLP(p, f.Shared.Gate, f.Shared.Up, f.Shared.Down, h))
	}
	return out
}

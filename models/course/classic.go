package course

import "fmt"

// loadClassic takes the classic Transformer's tensors (course-format §2.1).
// Per-head key/query/value matrices are stacked in head order into one fused
// [3·H·hs][C] projection, matching the concatenation the course does.
func (m *Model) loadClassic(ts *tensorSet) error {
	c := m.cfg
	V, T, C, H, hs := c.Vocab, c.Ctx, c.Embed, c.Heads, c.HeadDim
	F := 4 * C
	var err error
	get := func(key, why string, shape ...int) []float32 {
		if err != nil {
			return nil
		}
		var w []float32
		w, err = ts.get(key, why, shape...)
		return w
	}
	vc := fmt.Sprintf("vocab_size=%d, n_embed=%d", V, C)
	tc := fmt.Sprintf("context_length=%d, n_embed=%d", T, C)
	ec := fmt.Sprintf("n_embed=%d", C)
	hc := fmt.Sprintf("n_embed=%d, n_head=%d", C, H)

	m.embed = get("token_embed.weight", vc, V, C)
	m.pos = get("position_embed.weight", tc, T, C)
	m.blocks = make([]block, c.Blocks)
	for l := range m.blocks {
		b := &m.blocks[l]
		p := fmt.Sprintf("attn_blocks.%d.", l)
		b.ln1W = get(p+"ln1.weight", ec, C)
		b.ln1B = get(p+"ln1.bias", ec, C)
		var q, k, v [][]float32
		for h := 0; h < H; h++ {
			hp := fmt.Sprintf("%sattn.heads.%d.", p, h)
			q = append(q, get(hp+"query.weight", hc, hs, C))
			k = append(k, get(hp+"key.weight", hc, hs, C))
			v = append(v, get(hp+"value.weight", hc, hs, C))
		}
		b.wO = newLinear(get(p+"attn.proj.weight", hc, C, H*hs), H*hs)
		b.bO = get(p+"attn.proj.bias", ec, C)
		b.ln2W = get(p+"ln2.weight", ec, C)
		b.ln2B = get(p+"ln2.bias", ec, C)
		b.w1 = newLinear(get(p+"mlp.hidden.weight", ec, F, C), C)
		b.b1 = get(p+"mlp.hidden.bias", ec, F)
		b.w2 = newLinear(get(p+"mlp.proj.weight", ec, C, F), F)
		b.b2 = get(p+"mlp.proj.bias", ec, C)
		if err != nil {
			return err
		}
		b.wIn = newLinear(concatRows(append(append(q, k...), v...)...), C)
	}
	m.normW = get("layer_norm.weight", ec, C)
	m.normB = get("layer_norm.bias", ec, C)
	m.head = get("lm_head.weight", vc, V, C)
	m.headB = get("lm_head.bias", fmt.Sprintf("vocab_size=%d", V), V)
	m.projW = 3 * H * hs
	m.scale = attnScale(hs)
	return err
}

// classic runs the classic blocks over tokens at positions start.., leaving
// the final hidden states (before the last LayerNorm) in s.x.
func (s *State) classic(tokens []int, start int) {
	m := s.m
	C := m.cfg.Embed
	F := 4 * C
	n := len(tokens)
	hd := m.h * m.dk // H·hs
	for i, t := range tokens {
		xi := s.x[i*C : (i+1)*C]
		e := m.embed[t*C : (t+1)*C]
		p := m.pos[(start+i)*C : (start+i+1)*C]
		for j := range xi {
			xi[j] = e[j] + p[j]
		}
	}
	for l := range m.blocks {
		b := &m.blocks[l]
		for i := 0; i < n; i++ {
			layerNorm(s.xn[i*C:(i+1)*C], s.x[i*C:], b.ln1W, b.ln1B, 1e-5)
		}
		s.mul(s.proj, &b.wIn, s.xn, n)
		for i := 0; i < n; i++ {
			row := s.proj[i*m.projW:]
			pos := start + i
			kr, vr := s.kvRow(l, pos)
			copy(kr, row[hd:2*hd])
			copy(vr, row[2*hd:3*hd])
		}
		s.attention(l, n, start)
		s.mul(s.tmp, &b.wO, s.att, n)
		addBiasResidual(s.x[:n*C], s.tmp, b.bO)

		for i := 0; i < n; i++ {
			layerNorm(s.xn[i*C:(i+1)*C], s.x[i*C:], b.ln2W, b.ln2B, 1e-5)
		}
		s.mul(s.hid, &b.w1, s.xn, n)
		h := s.hid[:n*F]
		for i := range h {
			v := h[i] + b.b1[i%F]
			if v < 0 {
				v = 0
			}
			h[i] = v
		}
		s.mul(s.tmp, &b.w2, s.hid, n)
		addBiasResidual(s.x[:n*C], s.tmp, b.b2)
	}
}

// addBiasResidual does x += y + bias row by row; y+bias is rounded first, as
// the Linear's output is before the residual add.
func addBiasResidual(x, y, bias []float32) {
	C := len(bias)
	for i := range x {
		x[i] += float32(y[i] + bias[i%C])
	}
}

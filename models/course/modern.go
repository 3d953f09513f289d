package course

import "fmt"

// swiglu is one SwiGLU MLP: down(silu(gate(x)) ⊙ up(x)), with gate and up
// fused into one [2F][C] matrix.
type swiglu struct {
	f      int
	gateUp linear // [2F][C]
	down   linear // [C][F]
}

func (w *swiglu) bytes() int64 { return w.gateUp.bytes() + w.down.bytes() }

// loadSwiGLU takes prefix+{gate,up,down}.weight of hidden width f.
func loadSwiGLU(get func(key, why string, shape ...int) []float32, prefix, why string, f, C int) swiglu {
	g := get(prefix+"gate.weight", why, f, C)
	u := get(prefix+"up.weight", why, f, C)
	d := get(prefix+"down.weight", why, C, f)
	if g == nil || u == nil || d == nil {
		return swiglu{}
	}
	return swiglu{f: f, gateUp: newLinear(concatRows(g, u), C), down: newLinear(d, f)}
}

// loadModern takes the modern model's tensors (course-format §3.2).
func (m *Model) loadModern(ts *tensorSet) error {
	c := m.cfg
	V, C, H, D := c.Vocab, c.Embed, c.Heads, c.HeadDim
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
	ec := fmt.Sprintf("n_embed=%d", C)

	embed := get("token_embed.weight", vc, V, C)
	head := get("lm_head.weight", vc, V, C)
	if err != nil {
		return err
	}
	if c.Tied {
		// One parameter under two names: load_state_dict copies lm_head.weight
		// last, so its values win; count it once.
		m.embed, m.head = head, head
		ts.params -= int64(V * C)
	} else {
		m.embed, m.head = embed, head
	}
	m.normW = get("final_norm.weight", ec, C)

	m.blocks = make([]block, c.Blocks)
	for l := range m.blocks {
		b := &m.blocks[l]
		p := fmt.Sprintf("blocks.%d.", l)
		b.attnNorm = get(p+"attn_norm.weight", ec, C)
		b.mlpNorm = get(p+"mlp_norm.weight", ec, C)
		if c.Attention == "mla" {
			m.loadMLA(b, p+"attn.", get)
		} else {
			m.loadGQA(b, p+"attn.", get)
		}
		if c.Experts > 0 {
			m.loadMoE(b, p+"mlp.", get)
		} else {
			b.mlp = loadSwiGLU(get, p+"mlp.", fmt.Sprintf("n_embed=%d, ffn_hidden=%d", C, c.FFN), c.FFN, C)
		}
		if err != nil {
			return err
		}
	}
	if c.Attention == "mla" {
		m.rope = newRope(c.RopeDim, c.Ctx, c.RopeTheta)
		m.projW = H*(D+c.RopeDim) + c.Latent + c.RopeDim
		m.scale = attnScale(D + c.RopeDim)
	} else {
		m.rope = newRope(D, c.Ctx, c.RopeTheta)
		m.projW = (H + 2*c.KVHeads) * D
		if c.AttnGate {
			m.projW += H * D
		}
		m.scale = attnScale(D)
	}
	return err
}

// loadGQA fuses q|k|v(|gate) into one projection.
func (m *Model) loadGQA(b *block, p string, get func(key, why string, shape ...int) []float32) {
	c := m.cfg
	C, H, Hkv, D := c.Embed, c.Heads, c.KVHeads, c.HeadDim
	qc := fmt.Sprintf("n_embed=%d, n_head=%d", C, H)
	kc := fmt.Sprintf("n_embed=%d, n_head=%d, n_kv_head=%d", C, H, Hkv)
	dc := fmt.Sprintf("head_dim=%d", D)
	q := get(p+"q_proj.weight", qc, H*D, C)
	k := get(p+"k_proj.weight", kc, Hkv*D, C)
	v := get(p+"v_proj.weight", kc, Hkv*D, C)
	b.wO = newLinear(get(p+"o_proj.weight", qc, C, H*D), H*D)
	parts := [][]float32{q, k, v}
	if c.QKNorm {
		b.qNorm = get(p+"q_norm.weight", dc, D)
		b.kNorm = get(p+"k_norm.weight", dc, D)
	}
	if c.AttnGate {
		parts = append(parts, get(p+"gate.weight", qc, H*D, C))
	}
	if q == nil || k == nil || v == nil || parts[len(parts)-1] == nil {
		return // a load error, already recorded
	}
	b.wIn = newLinear(concatRows(parts...), C)
}

// modern runs the modern blocks over tokens at positions start.., leaving
// the final hidden states (before final_norm) in s.x.
func (s *State) modern(tokens []int, start int) {
	m := s.m
	c := m.cfg
	C := c.Embed
	n := len(tokens)
	eps := float32(c.NormEps)
	for i, t := range tokens {
		copy(s.x[i*C:(i+1)*C], m.embed[t*C:(t+1)*C])
	}
	for l := range m.blocks {
		b := &m.blocks[l]
		for i := 0; i < n; i++ {
			rmsNorm(s.xn[i*C:(i+1)*C], s.x[i*C:], b.attnNorm, eps)
		}
		s.mul(s.proj, &b.wIn, s.xn, n)
		if c.Attention == "mla" {
			s.mlaKV(l, b, n, start)
		} else {
			s.gqaKV(l, b, n, start)
		}
		s.attention(l, n, start)
		if c.AttnGate {
			hd := m.h * m.dv
			off := (m.h + 2*m.hkv) * m.dk
			for i := 0; i < n; i++ {
				y := s.att[i*hd : (i+1)*hd]
				g := s.proj[i*m.projW+off:]
				for j := range y {
					y[j] *= sigmoid(g[j])
				}
			}
		}
		s.mul(s.tmp, &b.wO, s.att, n)
		addResidual(s.x[:n*C], s.tmp)

		for i := 0; i < n; i++ {
			rmsNorm(s.xn[i*C:(i+1)*C], s.x[i*C:], b.mlpNorm, eps)
		}
		if c.Experts > 0 {
			s.moe(b, n)
		} else {
			s.swiglu(&b.mlp, s.tmp, s.xn, n)
		}
		addResidual(s.x[:n*C], s.tmp)
	}
}

// gqaKV applies QK-norm and RoPE to the projected queries (in place in
// s.proj) and keys, and appends keys and values to layer l's cache.
func (s *State) gqaKV(l int, b *block, n, start int) {
	m := s.m
	H, Hkv, D := m.h, m.hkv, m.dk
	eps := float32(m.cfg.NormEps)
	kw := Hkv * D
	for i := 0; i < n; i++ {
		pos := start + i
		row := s.proj[i*m.projW:]
		q := row[:H*D]
		k := row[H*D : H*D+kw]
		v := row[H*D+kw : H*D+2*kw]
		for h := 0; h < H; h++ {
			qh := q[h*D : (h+1)*D]
			if b.qNorm != nil {
				rmsNorm(qh, qh, b.qNorm, eps)
			}
			m.rope.apply(qh, pos)
		}
		for h := 0; h < Hkv; h++ {
			kh := k[h*D : (h+1)*D]
			if b.kNorm != nil {
				rmsNorm(kh, kh, b.kNorm, eps)
			}
			m.rope.apply(kh, pos)
		}
		kr, vr := s.kvRow(l, pos)
		copy(kr, k)
		copy(vr, v)
	}
}

// swiglu computes out[i] = w(x[i]) for n rows of x.
func (s *State) swiglu(w *swiglu, out, x []float32, n int) {
	F := w.f
	s.mul(s.hid, &w.gateUp, x, n)
	for i := 0; i < n; i++ {
		g := s.hid[i*2*F : i*2*F+F]
		u := s.hid[i*2*F+F : (i+1)*2*F]
		a := s.act[i*F : (i+1)*F]
		for j := range a {
			a[j] = silu(g[j]) * u[j]
		}
	}
	s.mul(out, &w.down, s.act, n)
}

func addResidual(x, y []float32) {
	for i := range x {
		x[i] += y[i]
	}
}

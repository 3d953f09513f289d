package course

import "fmt"

// loadMLA fuses q_proj|kv_down into one projection and k_up|v_up into
// another (course-format §3.2, §10.4).
func (m *Model) loadMLA(b *block, p string, get func(key, why string, shape ...int) []float32) {
	c := m.cfg
	C, H, D, R, Dr := c.Embed, c.Heads, c.HeadDim, c.Latent, c.RopeDim
	dims := fmt.Sprintf("n_embed=%d, n_head=%d, kv_latent_dim=%d, rope_dim=%d", C, H, R, Dr)
	q := get(p+"q_proj.weight", dims, H*(D+Dr), C)
	kvDown := get(p+"kv_down.weight", dims, R+Dr, C)
	b.kvNorm = get(p+"kv_norm.weight", dims, R)
	kUp := get(p+"k_up.weight", dims, H*D, R)
	vUp := get(p+"v_up.weight", dims, H*D, R)
	b.wO = newLinear(get(p+"o_proj.weight", dims, C, H*D), H*D)
	if q == nil || kvDown == nil || kUp == nil || vUp == nil {
		return // a load error, already recorded
	}
	b.wIn = newLinear(concatRows(q, kvDown), C)
	b.kvUp = newLinear(concatRows(kUp, vUp), R)
}

// mlaKV finishes MLA's projections for n tokens: RoPE on each query head's
// position part (in place in s.proj, laid out [D content | Dr position]),
// then latent = kv_norm(kv_down[:R]) and k_pos = rope(kv_down[R:]), and
// appends the expanded keys [k_up(latent)_h | k_pos] and values v_up(latent)
// to layer l's cache.
func (s *State) mlaKV(l int, b *block, n, start int) {
	m := s.m
	c := m.cfg
	H, D, R, Dr := c.Heads, c.HeadDim, c.Latent, c.RopeDim
	dk := D + Dr
	eps := float32(c.NormEps)
	for i := 0; i < n; i++ {
		pos := start + i
		row := s.proj[i*m.projW:]
		for h := 0; h < H; h++ {
			m.rope.apply(row[h*dk+D:(h+1)*dk], pos)
		}
		kv := row[H*dk : H*dk+R+Dr]
		rmsNorm(s.lat[i*R:(i+1)*R], kv[:R], b.kvNorm, eps)
		m.rope.apply(kv[R:], pos)
	}
	hd := H * D
	s.mul(s.kvx, &b.kvUp, s.lat, n)
	for i := 0; i < n; i++ {
		pos := start + i
		kpos := s.proj[i*m.projW+H*dk+R : i*m.projW+H*dk+R+Dr]
		kc := s.kvx[i*2*hd : i*2*hd+hd]
		krow, vrow := s.kvRow(l, pos)
		for h := 0; h < H; h++ {
			copy(krow[h*dk:h*dk+D], kc[h*D:(h+1)*D])
			copy(krow[h*dk+D:(h+1)*dk], kpos)
		}
		copy(vrow, s.kvx[i*2*hd+hd:(i+1)*2*hd])
	}
}

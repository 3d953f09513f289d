package llama

import (
	"chat/models"
	"chat/models/kernels"
)

// The paged KV path (models.PagedModel): a State made by NewPagedState keeps
// its keys and values in the blocks of a models.KV handle. A batch's keys and
// values are computed into scratch rows (kbuf, vbuf) as in the contiguous
// path, then copied into their blocks; attention reads each block's rows as
// one contiguous run, with the same products in the same order as the
// contiguous loop, so logits are bit-identical.

var _ models.PagedModel = (*Model)(nil)

// KVLayout is one position's cache: KVHeads·HeadDim key and value floats per
// layer.
func (m *Model) KVLayout() models.KVLayout {
	d := m.cfg.KVHeads * m.cfg.HeadDim
	return models.KVLayout{Layers: m.cfg.Layers, KDim: d, VDim: d, Heads: m.cfg.KVHeads}
}

// NewPagedState returns a State over kv (no contiguous cache of its own).
func (m *Model) NewPagedState(kv models.KV) models.State {
	c := m.cfg
	s := &State{
		m: m, cap: min(m.info.ContextLength, kv.Cap()), kv: kv,
		att:    make([]float32, m.info.ContextLength),
		logits: make([]float32, c.Vocab),
	}
	nb := (s.cap+kv.BlockSize()-1)/kv.BlockSize() + 1
	s.pk, s.pv = make([][]float32, 0, nb), make([][]float32, 0, nb)
	if qk, qv := kv.Quantized(); qk || qv {
		d, bs := c.KVHeads*c.HeadDim, kv.BlockSize()
		s.pq = &pagedQuant{kb: make([]float32, bs*d), vb: make([]float32, bs*d),
			sc: make([]float32, c.Heads*m.info.ContextLength), stride: m.info.ContextLength}
	}
	s.grow(1)
	return s
}

// kvDest is where layer l's keys and values of a batch of n tokens at
// positions pos.. are computed: the cache rows themselves, or the paged
// scratch rows (kvStore copies them into their blocks).
func (s *State) kvDest(l, pos, n int) (kc, vc []float32) {
	kvDim := s.m.cfg.KVHeads * s.m.cfg.HeadDim
	if s.kv != nil {
		if len(s.kbuf) < n*kvDim {
			s.kbuf = make([]float32, s.batch*kvDim)
			s.vbuf = make([]float32, s.batch*kvDim)
		}
		return s.kbuf[:n*kvDim], s.vbuf[:n*kvDim]
	}
	return s.k[l][pos*kvDim : (pos+n)*kvDim], s.v[l][pos*kvDim : (pos+n)*kvDim]
}

// kvStore copies the paged scratch rows into their blocks, and looks up
// layer l's blocks up to the batch's last position once for attendPaged.
func (s *State) kvStore(l, pos int, kc, vc []float32) {
	if s.kv == nil {
		return
	}
	kvDim := s.m.cfg.KVHeads * s.m.cfg.HeadDim
	n := len(kc) / kvDim
	if s.pq != nil {
		for i := 0; i < n; i++ {
			s.kv.WriteRow(l, pos+i, kc[i*kvDim:(i+1)*kvDim], vc[i*kvDim:(i+1)*kvDim])
		}
		return
	}
	for i := 0; i < n; i++ {
		kr, vr := s.kv.Row(l, pos+i)
		copy(kr, kc[i*kvDim:(i+1)*kvDim])
		copy(vr, vc[i*kvDim:(i+1)*kvDim])
	}
	s.pk, s.pv = s.pk[:0], s.pv[:0]
	for b := 0; b <= (pos+n-1)/s.kv.BlockSize(); b++ {
		k, v := s.kv.Block(l, b)
		s.pk, s.pv = append(s.pk, k), append(s.pv, v)
	}
}

// attendPaged is the attention of query row qi (position p, layer l) over
// positions start..p read block by block (the blocks kvStore looked up),
// written to out [Heads][HeadDim].
func (s *State) attendPaged(out, qi []float32, l, p, start int, scale float32) {
	if s.pq != nil {
		s.attendQuant(out, qi, l, p, start, scale)
		return
	}
	c := &s.m.cfg
	hd, kvDim := c.HeadDim, c.KVHeads*c.HeadDim
	group := c.Heads / c.KVHeads
	bs := s.kv.BlockSize()
	att := s.att[:p+1-start]
	for h := 0; h < c.Heads; h++ {
		qh := qi[h*hd : (h+1)*hd]
		off := (h / group) * hd
		for b := start / bs; b*bs <= p; b++ {
			kb := s.pk[b]
			base := b * bs
			t0 := max(start, base)
			kernels.AttnScores(att[t0-start:], qh, kb[(t0-base)*kvDim+off:], kvDim, min(p+1, base+bs)-t0, scale)
		}
		if c.AttnSoftcap != 0 {
			softcap(att, c.AttnSoftcap)
		}
		softmax(att)
		o := out[h*hd : (h+1)*hd]
		clear(o)
		for b := start / bs; b*bs <= p; b++ {
			vb := s.pv[b]
			base := b * bs
			t0 := max(start, base)
			kernels.AttnMixAdd(o, att[t0-start:], vb[(t0-base)*kvDim+off:], kvDim, min(p+1, base+bs)-t0)
		}
	}
}

// pagedQuant is a paged State's scratch over a cache that stores keys or
// values as int8: attention dequantizes one block at a time into kb, vb and
// keeps every head's scores in sc, [Heads][stride].
type pagedQuant struct {
	kb, vb []float32 // [BlockSize][KVHeads·HeadDim]
	sc     []float32 // [Heads][ContextLength]
	stride int
}

// attendQuant is attendPaged over an int8 cache: each block's keys are
// dequantized once (BlockK) and scored against every head, then each
// block's values once (BlockV) and mixed into every head. The kernel calls
// are the ones attendPaged makes, on the dequantized rows.
func (s *State) attendQuant(out, qi []float32, l, p, start int, scale float32) {
	c := &s.m.cfg
	hd, kvDim := c.HeadDim, c.KVHeads*c.HeadDim
	group := c.Heads / c.KVHeads
	bs, st := s.kv.BlockSize(), s.pq.stride
	sc := s.pq.sc
	for b := start / bs; b*bs <= p; b++ {
		kb := s.kv.BlockK(l, b, s.pq.kb)
		base := b * bs
		t0 := max(start, base)
		for h := 0; h < c.Heads; h++ {
			off := (h / group) * hd
			kernels.AttnScores(sc[h*st+t0-start:], qi[h*hd:(h+1)*hd], kb[(t0-base)*kvDim+off:], kvDim, min(p+1, base+bs)-t0, scale)
		}
	}
	for h := 0; h < c.Heads; h++ {
		att := sc[h*st : h*st+p+1-start]
		if c.AttnSoftcap != 0 {
			softcap(att, c.AttnSoftcap)
		}
		softmax(att)
		clear(out[h*hd : (h+1)*hd])
	}
	for b := start / bs; b*bs <= p; b++ {
		vb := s.kv.BlockV(l, b, s.pq.vb)
		base := b * bs
		t0 := max(start, base)
		for h := 0; h < c.Heads; h++ {
			off := (h / group) * hd
			kernels.AttnMixAdd(out[h*hd:(h+1)*hd], sc[h*st+t0-start:], vb[(t0-base)*kvDim+off:], kvDim, min(p+1, base+bs)-t0)
		}
	}
}

package course

import (
	"chat/models"
	"chat/models/kernels"
)

// The paged KV path (models.PagedModel): a State made by NewPagedState keeps
// its keys and values in the blocks of a models.KV handle instead of its own
// [Ctx][Hkv·dk] slabs. Rows are written through kvRow; attention reads each
// block's rows as one contiguous run, with the same products in the same
// order as attend, so logits are bit-identical to the contiguous path.

// KVLayout is one position's cache: Hkv·dk key and Hkv·dv value floats per
// layer (MLA caches the expanded keys and values, see State).
func (m *Model) KVLayout() models.KVLayout {
	return models.KVLayout{Layers: m.cfg.Blocks, KDim: m.hkv * m.dk, VDim: m.hkv * m.dv, Heads: m.hkv}
}

// NewPagedState returns a State over kv with scratch for a full-context batch.
func (m *Model) NewPagedState(kv models.KV) models.State {
	s := m.newStateKV(kv)
	nb := (m.cfg.Ctx+kv.BlockSize()-1)/kv.BlockSize() + 1
	s.pk, s.pv = make([][]float32, 0, nb), make([][]float32, 0, nb)
	if qk, qv := kv.Quantized(); qk || qv {
		bs, kw, vw := kv.BlockSize(), m.hkv*m.dk, m.hkv*m.dv
		s.q = &pagedQuant{pos: -1, k: make([]float32, kw), v: make([]float32, vw),
			kb: make([]float32, bs*kw), vb: make([]float32, bs*vw), sc: make([]float32, m.h*m.cfg.Ctx), stride: m.cfg.Ctx}
	}
	return s
}

// pagedQuant is a paged State's scratch over a cache that stores keys or
// values as int8: a position's rows are written to the staging rows k, v
// and stored (quantized) by flushRow; attention dequantizes one block at a
// time into kb, vb and keeps every head's scores in sc, [H][stride].
type pagedQuant struct {
	l, pos int       // the staged row (pos -1: none)
	k, v   []float32 // [Hkv·dk], [Hkv·dv]
	kb, vb []float32 // [BlockSize][Hkv·dk], [BlockSize][Hkv·dv]
	sc     []float32 // [H][ctx]
	stride int
}

// flushRow stores the staged row, if any, in the cache.
func (s *State) flushRow() {
	if q := s.q; q.pos >= 0 {
		s.kv.WriteRow(q.l, q.pos, q.k, q.v)
		q.pos = -1
	}
}

// kvRow is where layer l's keys and values of position pos are written: the
// cache's rows, or over an int8 cache the staging rows (stored at the next
// kvRow or attention call).
func (s *State) kvRow(l, pos int) (k, v []float32) {
	if s.q != nil {
		s.flushRow()
		s.q.l, s.q.pos = l, pos
		return s.q.k, s.q.v
	}
	if s.kv != nil {
		return s.kv.Row(l, pos)
	}
	kw, vw := s.m.hkv*s.m.dk, s.m.hkv*s.m.dv
	return s.k[l][pos*kw : (pos+1)*kw], s.v[l][pos*vw : (pos+1)*vw]
}

// attentionPaged is attention over the paged cache.
func (s *State) attentionPaged(l, n, start int) {
	m := s.m
	hv := m.h * m.dv
	if s.q != nil {
		s.flushRow()
		for i := 0; i < n; i++ {
			hi := start + i + 1
			lo := 0
			if w := m.cfg.Sliding; w > 0 && hi > w {
				lo = hi - w
			}
			s.attendQuant(s.att[i*hv:(i+1)*hv], s.proj[i*m.projW:], l, lo, hi)
		}
		return
	}
	s.pk, s.pv = s.pk[:0], s.pv[:0]
	for b := 0; b <= (start+n-1)/s.kv.BlockSize(); b++ {
		k, v := s.kv.Block(l, b)
		s.pk, s.pv = append(s.pk, k), append(s.pv, v)
	}
	for i := 0; i < n; i++ {
		hi := start + i + 1
		lo := 0
		if w := m.cfg.Sliding; w > 0 && hi > w {
			lo = hi - w
		}
		attendPaged(s.att[i*hv:(i+1)*hv], s.proj[i*m.projW:], s.pk, s.pv, s.kv.BlockSize(), s.scores, lo, hi, m.h, m.hkv, m.dk, m.dv, m.scale)
	}
}

// attendPaged is attend reading keys and values block by block: kb[i] and
// vb[i] are the rows of the i-th block of bs positions.
func attendPaged(out, q []float32, kbs, vbs [][]float32, bs int, scores []float32, lo, hi, h, hkv, dk, dv int, scale float32) {
	group := h / hkv
	kw, vw := hkv*dk, hkv*dv
	sc := scores[:hi-lo]
	for hh := 0; hh < h; hh++ {
		g := hh / group
		qh := q[hh*dk : (hh+1)*dk]
		for b := lo / bs; b*bs < hi; b++ {
			kb := kbs[b]
			base := b * bs
			j0 := max(lo, base)
			kernels.AttnScores(sc[j0-lo:], qh, kb[(j0-base)*kw+g*dk:], kw, min(hi, base+bs)-j0, scale)
		}
		softmax(sc)
		oh := out[hh*dv : (hh+1)*dv]
		clear(oh)
		for b := lo / bs; b*bs < hi; b++ {
			vb := vbs[b]
			base := b * bs
			j0 := max(lo, base)
			kernels.AttnMixAdd(oh, sc[j0-lo:], vb[(j0-base)*vw+g*dv:], vw, min(hi, base+bs)-j0)
		}
	}
}

// attendQuant is attendPaged over an int8 cache: each block's keys are
// dequantized once (BlockK) and scored against every head, then each
// block's values once (BlockV) and mixed into every head. The kernel calls
// are the ones attendPaged makes, on the dequantized rows.
func (s *State) attendQuant(out, q []float32, l, lo, hi int) {
	m := s.m
	h, dk, dv := m.h, m.dk, m.dv
	group := h / m.hkv
	kw, vw := m.hkv*dk, m.hkv*dv
	bs, st := s.kv.BlockSize(), s.q.stride
	sc := s.q.sc
	for b := lo / bs; b*bs < hi; b++ {
		kb := s.kv.BlockK(l, b, s.q.kb)
		base := b * bs
		j0 := max(lo, base)
		for hh := 0; hh < h; hh++ {
			g := hh / group
			kernels.AttnScores(sc[hh*st+j0-lo:], q[hh*dk:(hh+1)*dk], kb[(j0-base)*kw+g*dk:], kw, min(hi, base+bs)-j0, m.scale)
		}
	}
	for hh := 0; hh < h; hh++ {
		softmax(sc[hh*st : hh*st+hi-lo])
		clear(out[hh*dv : (hh+1)*dv])
	}
	for b := lo / bs; b*bs < hi; b++ {
		vb := s.kv.BlockV(l, b, s.q.vb)
		base := b * bs
		j0 := max(lo, base)
		for hh := 0; hh < h; hh++ {
			g := hh / group
			kernels.AttnMixAdd(out[hh*dv:(hh+1)*dv], sc[hh*st+j0-lo:], vb[(j0-base)*vw+g*dv:], vw, min(hi, base+bs)-j0)
		}
	}
}

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
	return models.KVLayout{Layers: m.cfg.Blocks, KDim: m.hkv * m.dk, VDim: m.hkv * m.dv}
}

// NewPagedState returns a State over kv with scratch for a full-context batch.
func (m *Model) NewPagedState(kv models.KV) models.State {
	s := m.newStateKV(kv)
	nb := (m.cfg.Ctx+kv.BlockSize()-1)/kv.BlockSize() + 1
	s.pk, s.pv = make([][]float32, 0, nb), make([][]float32, 0, nb)
	return s
}

// kvRow is where layer l's keys and values of position pos are written.
func (s *State) kvRow(l, pos int) (k, v []float32) {
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

package kvcache

import "chat/models"

var _ models.KV = (*Seq)(nil)

// LayoutOf is m's KV layout with keys stored as k and values as v.
func LayoutOf(m models.Model, k, v Format) Layout {
	l := m.KVLayout()
	return Layout{Layers: l.Layers, KDim: l.KDim, VDim: l.VDim, Heads: l.Heads, K: k, V: v}
}

// NewState returns a State of m over a pool of its own with room for one
// sequence of the model's whole context, keys and values as float32: the
// cache of a single sequence, for a draft model, a benchmark or a test.
func NewState(m models.Model) *models.State {
	st, err := NewStateAs(m, F32)
	if err != nil {
		panic(err) // the layout of a loaded model is valid
	}
	return st
}

// NewStateAs is NewState with keys and values stored as f.
func NewStateAs(m models.Model, f Format) (*models.State, error) {
	s, err := private(m, DefaultBlockSize, f)
	if err != nil {
		return nil, err
	}
	return models.NewState(m, s), nil
}

// Private returns an empty sequence of m's context length over a pool of
// its own (float32 keys and values, bs positions per block).
func Private(m models.Model, bs int) (*Seq, error) { return private(m, bs, F32) }

func private(m models.Model, bs int, f Format) (*Seq, error) {
	ctx := m.Info().ContextLength
	p, err := NewPool(LayoutOf(m, f, f), bs, (ctx+bs-1)/bs+1)
	if err != nil {
		return nil, err
	}
	return p.NewSeq(ctx), nil
}

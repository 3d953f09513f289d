package kvcache

import "chat/models"

var _ models.KV = (*Seq)(nil)

// NewState returns a State of m over a pool of its own with room for one
// sequence of the model's whole context, keys and values as float32: the
// cache of a single sequence, for a draft model, a benchmark or a test.
func NewState(m models.Model) *models.State {
	s, err := Private(m, DefaultBlockSize)
	if err != nil {
		panic(err) // the layout of a loaded model is valid
	}
	return models.NewState(m, s)
}

// Private returns an empty sequence of m's context length over a pool of
// its own (float32 keys and values, bs positions per block).
func Private(m models.Model, bs int) (*Seq, error) {
	l, ctx := m.KVLayout(), m.Info().ContextLength
	p, err := NewPool(Layout{Layers: l.Layers, KDim: l.KDim, VDim: l.VDim, Heads: l.Heads}, bs, (ctx+bs-1)/bs+1)
	if err != nil {
		return nil, err
	}
	return p.NewSeq(ctx), nil
}

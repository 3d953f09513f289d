package nn

import (
	"fmt"

	"chat/models"
	"chat/models/kvcache"
)

// Embed is the embedding of a token sequence, as ollama's /api/embed and
// llama-server's mean pooling make one from a generative model: the mean,
// over every position, of the final hidden state, the row the output
// matrix would turn into logits (after the final norm). ids run as one
// sequence over a cache of their own length; they must fit the context.
func (m *Model) Embed(ids []int) ([]float32, error) {
	if len(ids) == 0 {
		return nil, fmt.Errorf("nn: nothing to embed")
	}
	if n := m.info.ContextLength; len(ids) > n {
		return nil, fmt.Errorf("nn: %d tokens to embed, past the model's context of %d", len(ids), n)
	}
	bs := kvcache.DefaultBlockSize
	pool, err := kvcache.NewPool(kvcache.LayoutOf(m, kvcache.F32, kvcache.F32), bs, (len(ids)+bs-1)/bs)
	if err != nil {
		return nil, fmt.Errorf("nn: %w", err)
	}
	r := m.NewRunner().(*Runner)
	var sum []float64
	r.p.hidden = func(h Rows) {
		if sum == nil {
			sum = make([]float64, h.W)
		}
		for i := range h.N {
			for j, v := range h.Row(i) {
				sum[j] += float64(v)
			}
		}
	}
	var b models.Batch
	b.AddRun(0, 0, ids, len(ids))
	if _, err := r.Forward(&b, []models.KV{pool.NewSeq(len(ids))}); err != nil {
		return nil, err
	}
	out := make([]float32, len(sum))
	for j, v := range sum {
		out[j] = float32(v / float64(len(ids)))
	}
	return out, nil
}

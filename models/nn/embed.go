package nn

import (
	"fmt"

	"chat/models"
	"chat/models/kvcache"
)

// Embed is the embedding of a token sequence, made of its final hidden
// states (the rows the output matrix would turn into logits, after the
// final norm) as the model's Pooling says: their mean, as ollama and
// llama-server's mean pooling make one from a generative model, or the
// first or the last position's (a GGUF file's pooling_type cls or last,
// Qwen3-Embedding's). ids run as one sequence over a cache of their own
// length; they must fit the context.
func (m *Model) Embed(ids []int) ([]float32, error) {
	if len(ids) == 0 {
		return nil, fmt.Errorf("nn: nothing to embed")
	}
	pooling := m.info.Pooling
	if pooling == models.PoolRank {
		return nil, fmt.Errorf("nn: %s: %w", m.info.Name, models.ErrNoEmbeddings)
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
	var sum []float64 // the rows' sum, or the first or the last row
	seen := 0
	r.p.hidden = func(h Rows) { // every position's row, in order, a chunk at a time
		if sum == nil {
			sum = make([]float64, h.W)
		}
		for i := range h.N {
			switch {
			case pooling == models.PoolCLS && seen+i > 0:
				continue
			case pooling == models.PoolLast:
				clear(sum)
			}
			for j, v := range h.Row(i) {
				sum[j] += float64(v)
			}
		}
		seen += h.N
	}
	var b models.Batch
	b.AddRun(0, 0, ids, len(ids))
	if _, err := r.Forward(&b, []models.KV{pool.NewSeq(len(ids))}); err != nil {
		return nil, err
	}
	n := 1.0
	if pooling == models.PoolMean {
		n = float64(len(ids))
	}
	out := make([]float32, len(sum))
	for j, v := range sum {
		out[j] = float32(v / n)
	}
	return out, nil
}

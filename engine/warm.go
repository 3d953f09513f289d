package engine

import (
	"chat/engine/sampler"
	"chat/models"
	"chat/models/kvcache"
)

// Warm runs one forward pass of the largest step the scheduler plans (every
// place decoding, one of them with a prompt chunk of the step budget) on
// throwaway sequences, so that the runner's buffers are allocated and
// resident before the first requests come: vLLM runs such a pass at
// startup, llama.cpp a warm-up decode. Without it the first burst of
// concurrent requests paid for the allocation (chat serve, bench110M Q8_0,
// 16 requests at a fresh server: TTFT p50 ~310 ms against ~210 with it).
// It also makes a sampler for every place (newSampler says why). It fails
// while a reply runs.
func (e *Engine) Warm() error { return e.WarmTokens(0) }

// WarmTokens is Warm with a prompt chunk of n tokens for the first place
// (0: the step budget's, as Warm). A session warms with the largest chunk
// a prompt is fed in (nn.MaxChunk, 64): the runner's scratch grows to a
// pass's size the first time one that large runs, and on a 1B model that
// first growth cost ~300 ms of page faults (Llama 3.2 1B Q8_0: the first
// reply's time to first token 430 ms, the next ones' 150 ms). The pool is
// held during the pass, as the batcher holds it for a step.
func (e *Engine) WarmTokens(n int) error {
	return e.idle(func() error {
		for len(e.samplers) < cap(e.samplers) {
			e.keepSampler(sampler.New(e.vocab, sampler.Params{}))
		}
		e.kvmu.Lock()
		defer e.kvmu.Unlock()
		bs := e.pool.BlockSize()
		chunk := min(max(e.q.budget, bs), e.window)
		if n > 0 {
			chunk = min(n, e.window)
		}
		places := min(e.maxSeqs, e.pool.Free()-(chunk+bs-1)/bs)
		if places < 1 {
			return nil // a pool this small has nothing to warm for
		}
		var b models.Batch
		kvs := make([]models.KV, places)
		seqs := make([]*kvcache.Seq, places)
		ids := make([]int, chunk)
		for i := range places {
			seqs[i] = e.pool.NewSeq(e.window)
			kvs[i] = seqs[i]
			if i == 0 {
				b.AddRun(i, 0, ids, 1)
			} else {
				b.AddRun(i, 0, ids[:1], 1)
			}
		}
		_, err := e.b.runner.Forward(&b, kvs)
		for _, s := range seqs {
			s.Free()
		}
		return err
	})
}

package engine

import (
	"sync"

	"chat/models"
	"chat/models/kvcache"
)

// The batcher turns the forward passes the running replies ask for into
// shared batches. Each reply's goroutine calls forward and waits; when every
// running reply is waiting, the last one to arrive runs them all as one
// models.Batch (one weight read for all of them) and hands each its logits.
// With one reply running, its forward runs at once on its own goroutine,
// with nothing added. A reply that starts joins the next batch; one that
// ends leaves, and if the others were only waiting for it, it runs their
// batch on its way out.
//
// Logits are views of the runner's buffer: a reply uses them before it asks
// for its next forward, and the next batch cannot run before it does.
type batcher struct {
	e       *Engine
	mu      sync.Mutex
	active  int
	waiting []*feedReq
	spare   []*feedReq

	// Used by whichever goroutine runs a batch (one at a time: every other
	// running reply is waiting in it).
	runner models.Runner
	batch  models.Batch
	kvs    []models.KV
}

// feedReq is one reply's part of a batch: ids fed to its sequence, and the
// logits of the last rows of them back.
type feedReq struct {
	seq    *kvcache.Seq
	ids    []int
	rows   int
	logits []float32
	err    error
	seqs   int           // sequences in the batch it ran in
	done   chan struct{} // signalled (buffer 1) when another goroutine ran the batch
}

func (b *batcher) init(e *Engine) {
	b.e = e
	if e.model != nil && e.err == nil {
		b.runner = e.model.NewRunner()
	}
}

func (b *batcher) join() {
	b.mu.Lock()
	b.active++
	b.mu.Unlock()
}

// leave takes a finished reply out; it runs the batch the others were
// waiting for when it was the last one missing.
func (b *batcher) leave() {
	b.mu.Lock()
	b.active--
	var reqs []*feedReq
	if b.active > 0 && len(b.waiting) == b.active {
		reqs = b.take()
	}
	b.mu.Unlock()
	if reqs != nil {
		b.run(reqs, nil)
	}
}

// forward adds req to the next batch and returns when it has run.
func (b *batcher) forward(req *feedReq) {
	b.mu.Lock()
	b.waiting = append(b.waiting, req)
	if len(b.waiting) < b.active {
		b.mu.Unlock()
		<-req.done
		return
	}
	reqs := b.take()
	b.mu.Unlock()
	b.run(reqs, req)
}

// take hands the waiting requests over for a run (under mu).
func (b *batcher) take() []*feedReq {
	reqs := b.waiting
	b.waiting, b.spare = b.spare[:0], reqs
	return reqs
}

// run computes one batch and wakes the goroutines waiting for its requests
// (all but self, the caller's own, if any).
func (b *batcher) run(reqs []*feedReq, self *feedReq) {
	e := b.e
	e.kvmu.Lock()
	err := b.runBatch(reqs)
	if err != nil && len(reqs) > 1 {
		// One sequence's failure (a full pool) must not take the others
		// with it: run each alone.
		for _, r := range reqs {
			r.err = b.runBatch([]*feedReq{r})
		}
	} else {
		for _, r := range reqs {
			r.err = err
		}
	}
	e.kvmu.Unlock()
	for _, r := range reqs {
		if r != self {
			r.done <- struct{}{} // buffered: never blocks
		}
	}
}

// runBatch runs reqs as one batch (under kvmu), freeing prefix-tree blocks
// first when the pool lacks what the batch needs.
func (b *batcher) runBatch(reqs []*feedReq) error {
	e := b.e
	need := 0
	for _, r := range reqs {
		need += r.seq.Need(len(r.ids))
	}
	e.makeRoom(need)
	b.batch.Reset()
	b.kvs = b.kvs[:0]
	for i, r := range reqs {
		b.kvs = append(b.kvs, r.seq)
		b.batch.AddRun(i, r.seq.Len(), r.ids, r.rows)
	}
	logits, err := b.runner.Forward(&b.batch, b.kvs)
	if err != nil {
		return err
	}
	off := 0
	for _, r := range reqs {
		n := r.rows * e.vocab
		r.logits, r.seqs = logits[off:off+n:off+n], len(reqs)
		off += n
	}
	return nil
}

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
// batch on its way out. What each request puts into a step — all of it, a
// chunk of a long prompt, or nothing yet — is the scheduler's choice
// (schedule.go); a request fed only in part stays waiting for the next
// step, and the goroutine running a batch runs the next one too while all
// the running replies still wait.
//
// Logits are views of the runner's buffer: a reply uses them before it asks
// for its next forward, and the next batch cannot run before it does.
type batcher struct {
	e       *Engine
	mu      sync.Mutex
	active  int
	busy    bool // a goroutine is running a batch
	waiting []*feedReq
	spare   []*feedReq

	// Used by whichever goroutine runs a batch (one at a time: every other
	// running reply is waiting in it).
	runner models.Runner
	batch  models.Batch
	kvs    []models.KV
	step   []*feedReq // the requests fed in this step (schedule.go)
	pre    []*feedReq // the prompt chunks competing for the budget
}

// feedReq is one reply's part of a batch: ids fed to its sequence, and the
// logits of the last rows of them back.
type feedReq struct {
	owner  *gen
	seq    *kvcache.Seq
	ids    []int // not fed yet
	rows   int
	logits []float32
	err    error
	seqs   int           // sequences in the batch it ran in
	done   chan struct{} // signalled (buffer 1) when another goroutine finished it

	n        int  // ids fed in this step (schedule.go)
	fed      int  // ids fed so far
	finished bool // all fed, or failed (under mu)
	held     int  // steps it has been held back in a row (firstTokensFirst)
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
	b.drive(nil)
	b.mu.Unlock()
}

// forward adds req to the next batch and returns when all of it has run.
func (b *batcher) forward(req *feedReq) {
	b.mu.Lock()
	req.fed, req.err, req.finished, req.held = 0, nil, false, 0
	b.waiting = append(b.waiting, req)
	b.drive(req)
	fin := req.finished
	b.mu.Unlock()
	if !fin {
		<-req.done
	}
}

// drive runs batches (under mu, released while one runs) while every
// running reply is waiting, until self is finished.
func (b *batcher) drive(self *feedReq) {
	waited := false
	for !b.busy && len(b.waiting) > 0 && len(b.waiting) >= b.active {
		if !waited && b.e.q.starting.Load() > 0 {
			// A reply is being started: once admitted it is active, and the
			// step waits for its first forward (see awaitStarts). Busy
			// meanwhile, so that no other goroutine runs a step.
			waited, b.busy = true, true
			b.mu.Unlock()
			b.e.awaitStarts()
			b.mu.Lock()
			b.busy = false
			continue
		}
		waited = false
		reqs := b.waiting
		b.waiting, b.spare = b.spare[:0], reqs
		b.busy = true
		b.mu.Unlock()
		b.run(reqs)
		b.mu.Lock()
		b.busy = false
		// A request fed in part waits for the next step; the others are done.
		for _, r := range reqs {
			if r.err == nil && len(r.ids) > 0 {
				b.waiting = append(b.waiting, r)
				continue
			}
			r.finished = true
			if r != self {
				r.done <- struct{}{} // buffered: never blocks
			}
		}
		if self != nil && self.finished {
			return
		}
	}
}

// run computes one step of reqs.
func (b *batcher) run(reqs []*feedReq) {
	e := b.e
	e.admitWaiting()
	e.kvmu.Lock()
	step := b.plan(reqs)
	err := b.runBatch(step)
	if err != nil && len(step) > 1 {
		// One sequence's failure must not take the others with it: run
		// each alone.
		for _, r := range step {
			r.err = b.runBatch([]*feedReq{r})
		}
	} else if err != nil {
		for _, r := range step {
			r.err = err
		}
	}
	e.kvmu.Unlock()
}

// runBatch runs the planned part of each request as one batch (under kvmu).
func (b *batcher) runBatch(step []*feedReq) error {
	e := b.e
	b.batch.Reset()
	b.kvs = b.kvs[:0]
	for i, r := range step {
		rows := 0
		if r.n == len(r.ids) {
			rows = r.rows // the last chunk asks for the logits
		}
		b.kvs = append(b.kvs, r.seq)
		b.batch.AddRun(i, r.seq.Len(), r.ids[:r.n], rows)
	}
	if len(step) == 0 {
		return nil
	}
	logits, err := b.runner.Forward(&b.batch, b.kvs)
	if err != nil {
		return err
	}
	off := 0
	for _, r := range step {
		if r.n == len(r.ids) {
			n := r.rows * e.vocab
			r.logits = logits[off : off+n : off+n]
			off += n
		}
		r.ids, r.fed, r.seqs = r.ids[r.n:], r.fed+r.n, len(step)
	}
	return nil
}

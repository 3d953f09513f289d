package engine

import (
	"errors"
	"runtime"
	"slices"
	"sync/atomic"
	"time"
)

// Continuous batching: iteration-level scheduling, as vLLM's and SGLang's
// schedulers do it, on top of the batcher (batch.go).
//
// Admission. Start runs a reply at once while fewer than Options.MaxSeqs
// run (and, with a queue, while the pool has room for its prompt besides a
// block for each running sequence to grow); otherwise it waits in a FIFO
// queue of Options.MaxWaiting. The queue is looked at whenever a reply ends
// and before every forward pass, so a waiting reply joins the running batch
// at the next step.
//
// The step. plan chooses what each waiting request puts into the next
// forward pass: decode tokens and speculative rounds whole, then prompt
// chunks in what Options.MaxBatchTokens leaves, shortest first, so a short
// prompt that arrives is prefilled at the next step; each chunk is at most
// chunkMax, and the oldest prompt gets that much every step so that it
// always advances. A prompt's last chunk carries the rows whose logits it
// wants. So a long prompt is prefilled over several steps while the other
// sequences keep decoding. Time to first token under load is the step in
// flight plus the new reply's own, so both are kept short: the chunks are
// small, and replies that get their first token from a step get it to
// themselves (firstTokensFirst).
//
// Memory. The pool and the prefix tree are shared by every sequence; a
// matched prefix is locked while it is used and never evicted. When a step
// needs more blocks than are free, plan evicts the least recently used
// cached prefixes, then holds back prompt chunks, then preempts the most
// recently arrived sequences: their blocks go back to the pool and they wait
// at the front of the queue, to recompute their cache from their ids when
// there is room again (vLLM's recompute preemption). The recomputed keys and
// values are the ones computed before, so the output does not change.
//
// Cancellation. Reply.Stop takes a queued reply out of the queue at once; a
// running one is left out of the next step before it is fed, and ends then.

// sched is the engine's queue and step budget.
type sched struct {
	maxWait int // Options.MaxWaiting
	budget  int // Options.MaxBatchTokens; 0: none
	// startWait bounds awaitStarts (tests that check which step a reply
	// joins raise it, so that a slow goroutine cannot miss the step).
	startWait time.Duration

	// Under Engine.mu.
	waiting  []*Reply
	arrivals uint64

	nwait       atomic.Int32 // len(waiting), read without the lock before a step
	starting    atomic.Int32 // Start calls between their first line and admission
	preemptions atomic.Int64
}

var (
	errPreempted = errors.New("engine: preempted")
	errStopped   = errors.New("engine: stopped")
)

// enqueue admits r or queues it (under mu). It reports false when the
// queue is full.
func (e *Engine) enqueue(r *Reply) bool {
	q := &e.q
	r.order = q.arrivals
	q.arrivals++
	if len(q.waiting) == 0 && e.running < e.maxSeqs && (q.maxWait == 0 || e.running == 0 || e.room(r)) {
		e.admit(r)
		return true
	}
	if len(q.waiting) >= q.maxWait {
		return false
	}
	q.waiting = append(q.waiting, r)
	q.nwait.Add(1)
	return true
}

// admit lets r run (under mu): it joins the batcher and may take the
// drafter, which a request for logprobs never speculates with.
func (e *Engine) admit(r *Reply) {
	e.running++
	r.running = true
	if r.drafter == nil && e.drafter != nil && !e.drafterBusy && !r.req.Logprobs {
		r.spec, r.drafter = e.spec, e.drafter
		e.drafterBusy = true
	}
	e.b.join()
	r.admit <- struct{}{}
}

// admitLocked admits waiting replies while there are places and room
// (under mu).
func (e *Engine) admitLocked() {
	q := &e.q
	for len(q.waiting) > 0 && e.running < e.maxSeqs {
		r := q.waiting[0]
		if e.running > 0 && !e.room(r) {
			return
		}
		q.waiting = slices.Delete(q.waiting, 0, 1)
		q.nwait.Add(-1)
		e.admit(r)
	}
}

// awaitStarts gives replies being started (Engine.Start, which may wait for
// the step in flight to end to see the pool's room) up to startWait to be
// admitted before the next step is planned, so they join it rather than
// the one after (a step's worth of time to first token under load).
func (e *Engine) awaitStarts() {
	for t0 := time.Now(); e.q.starting.Load() > 0 && time.Since(t0) < e.q.startWait; {
		runtime.Gosched()
	}
}

// startWait is sched.startWait's default: admission takes microseconds once the
// step in flight has ended.
const startWait = 2 * time.Millisecond

// admitWaiting is admission before a step (no lock held).
func (e *Engine) admitWaiting() {
	if e.q.nwait.Load() == 0 {
		return
	}
	e.mu.Lock()
	e.admitLocked()
	e.mu.Unlock()
}

// room reports whether the pool can take r's prompt window now, keeping a
// block for each running sequence to grow; it evicts cached prefixes to
// make it (under mu).
func (e *Engine) room(r *Reply) bool {
	bs := e.pool.BlockSize()
	need := (min(len(r.req.Prompt), e.window)+bs)/bs + e.running
	e.kvmu.Lock()
	defer e.kvmu.Unlock()
	e.makeRoom(need)
	return e.pool.Free() >= need
}

// wait blocks until r is admitted (true) or stopped while it waits (false;
// it has left the queue).
func (e *Engine) wait(r *Reply) bool {
	select {
	case <-r.admit:
		return true
	case <-r.stopCh:
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if i := slices.Index(e.q.waiting, r); i >= 0 {
		e.q.waiting = slices.Delete(e.q.waiting, i, i+1)
		e.q.nwait.Add(-1)
		return false
	}
	<-r.admit // admitted meanwhile: the token is there
	return true
}

// release is run's bookkeeping when r has ended (under mu): its place and
// its drafter go to the next reply.
func (e *Engine) release(r *Reply) {
	if r.running {
		e.running--
		r.running = false
	}
	if r.drafter != nil {
		e.drafterBusy = false
	}
	e.admitLocked()
}

// recompute is a preempted reply's way back (its goroutine, in forward): it
// leaves the batcher, waits at the front of the queue, and when admitted
// again takes the longest cached prefix of its ids — those it held and
// rest, the ones it was feeding — and returns the ids still to feed; nil if
// it was stopped while it waited.
func (g *gen) recompute(rest []int, rows int) []int {
	e, r := g.e, g.r
	full := append(append(make([]int, 0, len(g.cached)+len(rest)), g.cached...), rest...)
	g.cached = g.cached[:0]
	g.left = true
	e.b.leave()
	e.mu.Lock()
	if r.running {
		e.running--
		r.running = false
	}
	e.q.waiting = slices.Insert(e.q.waiting, 0, r)
	e.q.nwait.Add(1)
	e.admitLocked()
	e.mu.Unlock()
	if !e.wait(r) {
		return nil
	}
	g.left = false
	n := g.rematch(full, rows)
	return full[n:]
}

// rematch gives a recomputing reply a sequence holding the longest cached
// prefix of ids, keeping at least rows ids to feed; it returns how many ids
// the sequence holds.
func (g *gen) rematch(ids []int, rows int) int {
	e := g.e
	e.kvmu.Lock()
	defer e.kvmu.Unlock()
	if e.tree == nil {
		g.seq = e.pool.NewSeq(e.window)
		g.r.seq = g.seq
		return 0
	}
	blocks, m, at := e.tree.Match(ids)
	bs := e.pool.BlockSize()
	if lim := (len(ids) - rows) / bs * bs; m > lim {
		m = max(lim, 0)
		blocks = blocks[:m/bs]
	}
	g.seq, _ = e.pool.SeqFrom(blocks, m, e.window) // blocks hold exactly m positions
	g.r.seq = g.seq
	e.tree.Lock(at)
	g.lockAt, g.locked = at, true
	g.cached = append(g.cached[:0], ids[:m]...)
	return m
}

// plan chooses this step's part of every request (r.n; under kvmu) and
// returns those that are fed. Stopped replies and preempted sequences get
// their error instead. It allocates nothing.
func (b *batcher) plan(reqs []*feedReq) []*feedReq {
	e := b.e
	budget := e.q.budget
	step, pre := b.step[:0], b.pre[:0]
	used := 0
	for _, r := range reqs {
		r.n = 0
		switch {
		case r.owner != nil && r.owner.r.stopped():
			r.err = errStopped
		case budget == 0:
			r.n = soloChunk(len(r.ids), r.rows)
			used += r.n
			step = append(step, r)
		case len(r.ids) <= r.rows:
			r.n = len(r.ids)
			used += r.n
			step = append(step, r)
		default:
			pre = append(pre, r)
		}
	}
	if len(pre) > 0 {
		oldest := pre[0]
		for _, r := range pre {
			if r.order() < oldest.order() {
				oldest = r
			}
		}
		// Prompts share what the decode tokens leave, shortest first, each
		// at most chunkMax; the oldest gets chunkMax in any case, so that it
		// always advances.
		slices.SortStableFunc(pre, func(x, y *feedReq) int { return len(x.ids) - len(y.ids) })
		most := chunkMax(budget, used)
		room := max(budget-used, 0)
		for _, r := range pre {
			avail := min(room, most)
			if r == oldest {
				avail = most
			}
			if r.n = chunk(len(r.ids), r.rows, avail); r.n > 0 {
				room = max(room-r.n, 0)
				step = append(step, r)
			}
		}
	}
	step = firstTokensFirst(step)
	step = b.fit(reqs, step)
	b.step, b.pre = step, pre
	return step
}

// firstTokensFirst gives the replies that get their first token from this
// step (a new reply's prompt, or its last chunk) a step of their own: the
// decode tokens and prompt chunks of the others wait, at most maxHeld steps
// in a row. Time to first token under load is the step in flight plus the
// new reply's own, and its own is then as short as it can be; the others
// lose a short step or two. SGLang runs new prefills before decoding for the
// same reason.
func firstTokensFirst(step []*feedReq) []*feedReq {
	isFirst := func(r *feedReq) bool { return r.n == len(r.ids) && r.owner != nil && r.owner.stats.GenTokens == 0 }
	first := slices.ContainsFunc(step, isFirst)
	return slices.DeleteFunc(step, func(r *feedReq) bool {
		if isFirst(r) {
			return false
		}
		if !first || r.held >= maxHeld {
			r.held = 0
			return false
		}
		r.n = 0
		r.held++
		return true
	})
}

// maxHeld is how many steps in a row firstTokensFirst may hold a request
// back. New requests arrive in bursts that straddle two steps (clients that
// finish together send their next requests together); with one step, the
// second part of a burst waited for a step with every decode token in it.
// bench110M Q8_0, scripts/bench-serve.sh, six alternating pairs: TTFT p99
// beside a 1,000-token prompt 40-48 ms with two against 49-72 with one.
const maxHeld = 2

// chunkMax bounds one prompt's chunk in a step. Beside decode tokens it
// is a quarter of the budget, so that the step stays close to a step of
// decode tokens, since the replies that arrive meanwhile wait for it
// (vLLM's long_prefill_token_threshold); prompts alone take chunks of half
// the budget, a compromise between a lone long prompt's time to first token
// and the replies that arrive while it is prefilled (BENCHMARKS.md, "chat
// serve: time to first token beside a long prompt", has the measurements).
func chunkMax(budget, decode int) int {
	if decode == 0 {
		return max(budget/2, 1)
	}
	return max(budget/4, 1)
}

// soloStep bounds a prompt's part of one step when steps have no token
// budget (the TUI, a headless reply): a stop (Ctrl+C, Esc) is seen between
// steps, and a 3,000-token prompt fed in one step went on for its whole
// prefill, 10-20 s on a 1B model, after the user asked it to stop. It is a
// multiple of the models' 64-token passes (nn.MaxChunk), and soloChunk
// never leaves a last part shorter than 64, so each pass sees the rows it
// saw in one step over the whole prompt: the same kernels, the same bits.
const soloStep = 256

// soloChunk is how many of n ids (the last rows wanting logits) a step
// without a budget feeds: all of them, or soloStep when at least 64 more
// (and the rows) are left for later steps.
func soloChunk(n, rows int) int {
	if n-soloStep < max(64, rows) {
		return n
	}
	return soloStep
}

// chunk is how many of n ids to feed within avail tokens: all of them, or a
// part that leaves the last rows (those wanting logits) for a later step.
func chunk(n, rows, avail int) int {
	if avail >= n {
		return n
	}
	return max(min(avail, n-rows), 0)
}

// fit makes the step's blocks free (under kvmu): it evicts cached
// prefixes, then holds back prompt chunks, then preempts the most recently
// arrived sequences, until the step fits or one request is left.
func (b *batcher) fit(reqs, step []*feedReq) []*feedReq {
	e := b.e
	need := 0
	for _, r := range step {
		need += r.seq.Need(r.n)
	}
	e.makeRoom(need)
	for e.pool.Free() < need && len(step) > 1 {
		// A prompt chunk (the last planned) waits for a later step.
		i := len(step) - 1
		for i >= 0 && len(step[i].ids) <= step[i].rows {
			i--
		}
		if i < 0 {
			break
		}
		need -= step[i].seq.Need(step[i].n)
		step[i].n = 0
		step = slices.Delete(step, i, i+1)
	}
	for e.pool.Free() < need {
		var v *feedReq // the latest arrival holding blocks or planned
		held := 0
		for _, r := range reqs {
			if r.err == nil && r.owner != nil && (r.n > 0 || r.seq.Len() > 0) {
				held++
				if v == nil || r.order() > v.order() {
					v = r
				}
			}
		}
		if held <= 1 {
			break // one sequence left: the forward pass says the pool is full
		}
		if v.n > 0 {
			need -= v.seq.Need(v.n)
			step = slices.DeleteFunc(step, func(r *feedReq) bool { return r == v })
			v.n = 0
		}
		v.err = errPreempted
		v.owner.dropSeq()
		e.q.preemptions.Add(1)
		e.makeRoom(need)
	}
	if len(step) == 0 {
		// Nothing fits: feed the first request anyway, so that the step
		// makes progress or fails with the pool's error.
		for _, r := range reqs {
			if r.err == nil {
				r.n = len(r.ids)
				if budget := e.q.budget; budget > 0 {
					r.n = max(chunk(len(r.ids), r.rows, budget), 1)
				}
				step = append(step, r)
				break
			}
		}
	}
	return step
}

// order is the arrival order of the request's reply (a request without an
// owner, in tests, counts as the oldest).
func (r *feedReq) order() uint64 {
	if r.owner == nil {
		return 0
	}
	return r.owner.r.order
}

// dropSeq frees a preempted sequence's blocks (under kvmu).
func (g *gen) dropSeq() {
	if g.locked {
		g.e.tree.Unlock(g.lockAt)
		g.locked = false
	}
	g.seq.Truncate(0)
}

// Load is what the scheduler and the KV pool hold now, for a server's
// metrics.
type Load struct {
	Running, Waiting int   // replies decoding, and queued
	Preemptions      int64 // sequences preempted since New
	PoolBlocks       int   // blocks in the pool
	PoolUsed         int   // blocks held by sequences or the prefix tree
	TreeBlocks       int   // blocks the prefix tree holds
	Evictions        int64 // blocks evicted from the prefix tree since New
	PromptTokens     int   // prompt tokens of every reply since New
	ReusedTokens     int   // those whose K/V were cached
}

// Load reports the scheduler's and the pool's state.
func (e *Engine) Load() Load {
	if e.err != nil {
		return Load{}
	}
	l := Load{Preemptions: e.q.preemptions.Load()}
	l.Running, l.Waiting = e.Queue()
	e.kvmu.Lock()
	defer e.kvmu.Unlock()
	l.PoolBlocks, l.PoolUsed = e.pool.Blocks(), e.pool.Used()
	if e.tree != nil {
		l.TreeBlocks, l.Evictions = e.tree.Blocks(), e.tree.Evicted()
	}
	l.PromptTokens, l.ReusedTokens = e.totalPrompt, e.totalReused
	return l
}

// Queue reports Load's Running and Waiting without the pool's figures: it
// does not wait for the step in flight, which holds the pool (a server
// refusing a request as full answers at once).
func (e *Engine) Queue() (running, waiting int) {
	if e.err != nil {
		return 0, 0
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.running, len(e.q.waiting)
}

// Starting reports the replies inside Start now: waiting for the engine's
// lock or for the pool, which the step in flight holds. It takes no lock.
func (e *Engine) Starting() int { return int(e.q.starting.Load()) }

// ClearCache empties the prefix cache and drops the last reply's sequence,
// so every block of the pool is free. It fails while a reply runs.
func (e *Engine) ClearCache() error {
	return e.idle(func() error {
		e.kvmu.Lock()
		defer e.kvmu.Unlock()
		if e.tree != nil {
			e.tree.Clear()
		}
		if e.last != nil {
			e.last.Free()
			e.lastIDs = e.lastIDs[:0]
		}
		return nil
	})
}

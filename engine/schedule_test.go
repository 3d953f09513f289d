package engine

import (
	"math"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"chat/engine/sampler"
	"chat/models"
	"chat/models/testmodels"
)

// countingModel records the largest batch its runners were given.
type countingModel struct {
	models.Model
	most atomic.Int64
}

type countingRunner struct {
	models.Runner
	m *countingModel
}

func (m *countingModel) NewRunner() models.Runner { return countingRunner{m.Model.NewRunner(), m} }

func (r countingRunner) Forward(b *models.Batch, kv []models.KV) ([]float32, error) {
	for {
		old := r.m.most.Load()
		if int64(b.Len()) <= old || r.m.most.CompareAndSwap(old, int64(b.Len())) {
			break
		}
	}
	return r.Runner.Forward(b, kv)
}

// TestContinuousBatchingMatchesAlone: 16 replies started at once on an
// engine with 4 places, a queue, a 6-token step budget (so prompts are
// chunked) and a pool too small for four full windows (so sequences are
// preempted and recomputed) each give exactly the ids they give alone —
// greedy, sampled and with penalties, under both window rules, one of them
// with a prompt longer than the window. Afterwards no sequence holds a
// block, and ClearCache frees the pool.
func TestContinuousBatchingMatchesAlone(t *testing.T) {
	for rname, rule := range rules() {
		t.Run(rname, func(t *testing.T) {
			fake := newFake(rule, 48)
			reqs := make([]Request, 16)
			names := []string{"greedy", "sampled", "penalties"}
			for i := range reqs {
				p := prompt(2+(7*i)%29, i)
				if i == 3 {
					p = prompt(70, i) // longer than the window
				}
				s := knobs[names[i%3]]
				s.Seed = uint64(i + 1)
				reqs[i] = Request{Prompt: p, MaxTokens: 20 + 3*i, Sampler: s}
			}
			alone := make([]Result, len(reqs))
			for i, r := range reqs {
				e := New(fake)
				alone[i] = run(t, e, r)
				e.Close()
			}

			m := &countingModel{Model: fake}
			e := NewWithOptions(m, Options{MaxSeqs: 4, MaxWaiting: 16, MaxBatchTokens: 6, BlockSize: 4, KVMem: 1})
			defer e.Close()
			replies := make([]*Reply, len(reqs))
			for i, r := range reqs {
				var err error
				if replies[i], err = e.Start(r); err != nil {
					t.Fatal(err)
				}
			}
			for i, r := range replies {
				res := r.Wait()
				if res.Err != nil || !slices.Equal(res.IDs, alone[i].IDs) || res.Reason != alone[i].Reason {
					t.Fatalf("reply %d: %v %q %v, alone %q %v", i, res.Err, res.Reason, res.IDs, alone[i].Reason, alone[i].IDs)
				}
			}
			l := e.Load()
			if l.Running != 0 || l.Waiting != 0 {
				t.Errorf("after the replies: %+v", l)
			}
			if l.Preemptions == 0 {
				t.Errorf("no sequence was preempted in a pool of %d blocks", l.PoolBlocks)
			}
			// Four places, a budget of 6 and blocks of 4: at most 4
			// decode tokens, prompt chunks within max(6-4, 4) and a block
			// for the oldest prompt.
			if most := m.most.Load(); most > 4+4+4 {
				t.Errorf("a batch of %d tokens with a budget of 6", most)
			}
			e.kvmu.Lock()
			used, tree, last := e.pool.Used(), e.tree.Blocks(), len(e.last.Table())
			e.kvmu.Unlock()
			if used > tree+last {
				t.Errorf("%d blocks in use; the tree holds %d and the last reply %d", used, tree, last)
			}
			if err := e.ClearCache(); err != nil {
				t.Fatal(err)
			}
			if l := e.Load(); l.PoolUsed != 0 {
				t.Errorf("after ClearCache %d blocks are used", l.PoolUsed)
			}
		})
	}
}

// TestQueueLimit: beyond MaxSeqs running and MaxWaiting queued, Start says
// ErrBusy; a queued reply runs when a place frees.
func TestQueueLimit(t *testing.T) {
	e := NewWithOptions(newFake(models.WindowHalf, 64), Options{MaxSeqs: 1, MaxWaiting: 1})
	defer e.Close()
	long := Request{Prompt: prompt(3, 0), MaxTokens: 1 << 20, Sampler: knobs["greedy"]}
	a, err := e.Start(long)
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.Start(Request{Prompt: prompt(3, 1), MaxTokens: 5, Sampler: knobs["greedy"]})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Start(long); err != ErrBusy {
		t.Fatalf("a third reply: %v, want ErrBusy", err)
	}
	if l := e.Load(); l.Running != 1 || l.Waiting != 1 {
		t.Errorf("load %+v, want 1 running and 1 waiting", l)
	}
	a.Stop()
	if res := b.Wait(); res.Err != nil || len(res.IDs) != 5 {
		t.Fatalf("the queued reply: %v %v", res.Err, res.IDs)
	}
	if res := a.Wait(); res.Reason != ReasonStopped {
		t.Errorf("the stopped reply ended %q", res.Reason)
	}
}

// TestStopQueuedAndMidPrefill: a queued reply that is stopped leaves the
// queue at once without running; one stopped in the middle of a chunked
// prompt ends at the next step; neither leaves a block held by a sequence.
func TestStopQueuedAndMidPrefill(t *testing.T) {
	e := NewWithOptions(newFake(models.WindowHalf, 512), Options{MaxSeqs: 1, MaxWaiting: 4, MaxBatchTokens: 16})
	defer e.Close()
	slow := Request{Prompt: prompt(500, 0), MaxTokens: 1 << 20, Sampler: knobs["greedy"]}
	a, err := e.Start(slow)
	if err != nil {
		t.Fatal(err)
	}
	b, err := e.Start(Request{Prompt: prompt(4, 1), MaxTokens: 5, Sampler: knobs["greedy"]})
	if err != nil {
		t.Fatal(err)
	}
	b.Stop()
	select {
	case <-b.Done():
	case <-time.After(testmodels.HangAfter):
		t.Fatal("a stopped queued reply did not end")
	}
	if res := b.Wait(); res.Reason != ReasonStopped || res.Stats.GenTokens != 0 {
		t.Errorf("queued reply: %q after %d tokens", res.Reason, res.Stats.GenTokens)
	}
	for e.Load().PoolUsed == 0 { // its prompt is being fed
		time.Sleep(time.Millisecond)
	}
	a.Stop()
	if res := a.Wait(); res.Reason != ReasonStopped || res.Err != nil {
		t.Errorf("the long reply: %q %v", res.Reason, res.Err)
	}
	if l := e.Load(); l.Running != 0 || l.Waiting != 0 || l.PoolUsed > l.TreeBlocks+len(e.last.Table()) {
		t.Errorf("after both: %+v", l)
	}
}

// TestConcurrentQueueStartStop: many goroutines start, stop and wait on a
// queueing engine at once (run with -race); every reply ends and nothing
// stays queued or running.
func TestConcurrentQueueStartStop(t *testing.T) {
	e := NewWithOptions(newFake(models.WindowHalf, 64), Options{MaxSeqs: 3, MaxWaiting: 8, MaxBatchTokens: 5, BlockSize: 4, KVMem: 1})
	defer e.Close()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 12 {
				r, err := e.Start(Request{Prompt: prompt(2+(i*5)%40, g), MaxTokens: 5 + i, Sampler: sampler.Params{Temperature: 1, Seed: uint64(g*100 + i)}})
				if err == ErrBusy {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				if i%3 == 0 {
					r.Stop()
				}
				if res := r.Wait(); res.Err != nil {
					t.Errorf("goroutine %d reply %d: %v", g, i, res.Err)
				}
			}
		}()
	}
	wg.Wait()
	if l := e.Load(); l.Running != 0 || l.Waiting != 0 {
		t.Errorf("after the storm: %+v", l)
	}
}

// TestLogprobs: each generated id's log-probability and the top ids are
// the log-softmax of the logits a cold forward gives for its history;
// greedy ids are the top of their own list.
func TestLogprobs(t *testing.T) {
	m := newFake(models.WindowHalf, 64)
	e := New(m)
	defer e.Close()
	p := prompt(6, 2)
	res := run(t, e, Request{Prompt: p, MaxTokens: 8, Sampler: knobs["greedy"], Logprobs: true, TopLogprobs: 3})
	if len(res.Logprobs) != len(res.IDs) {
		t.Fatalf("%d logprobs for %d ids", len(res.Logprobs), len(res.IDs))
	}
	hist := slices.Clone(p)
	for i, lp := range res.Logprobs {
		logits := refLogits(t, m, hist)
		sum, best := 0.0, 0
		for j, v := range logits {
			sum += math.Exp(float64(v))
			if v > logits[best] {
				best = j
			}
		}
		want := float64(logits[lp.ID]) - math.Log(sum)
		if lp.ID != res.IDs[i] || math.Abs(lp.Logprob-want) > 1e-9 || len(lp.Top) != 3 || lp.Top[0].ID != best || lp.Top[0].ID != lp.ID {
			t.Fatalf("token %d: %+v, want id %d logprob %v top %d", i, lp, res.IDs[i], want, best)
		}
		if lp.Top[1].Logprob > lp.Top[0].Logprob || lp.Top[2].Logprob > lp.Top[1].Logprob {
			t.Errorf("token %d: top not sorted: %+v", i, lp.Top)
		}
		hist = append(hist, lp.ID)
	}
}

// gatedModel can hold one forward pass until released, and records the
// passes that fed a position 0 (a new reply's prompt).
type gatedModel struct {
	models.Model
	calls   atomic.Int64
	hold    atomic.Bool
	holdLen atomic.Int32  // when set, only a pass of this many tokens is held
	held    chan int64    // the held pass
	release chan struct{} // a send releases one held pass, a close all
	mu      sync.Mutex
	fresh   []int64 // passes feeding position 0
	lens    []int   // every pass's tokens
}

type gatedRunner struct {
	models.Runner
	m *gatedModel
}

func (m *gatedModel) NewRunner() models.Runner { return gatedRunner{m.Model.NewRunner(), m} }

func (r gatedRunner) Forward(b *models.Batch, kv []models.KV) ([]float32, error) {
	call := r.m.calls.Add(1)
	r.m.mu.Lock()
	if slices.Contains(b.Pos, 0) {
		r.m.fresh = append(r.m.fresh, call)
	}
	r.m.lens = append(r.m.lens, b.Len())
	r.m.mu.Unlock()
	if n := r.m.holdLen.Load(); (n == 0 || b.Len() == int(n)) && r.m.hold.CompareAndSwap(true, false) {
		r.m.held <- call
		<-r.m.release
	}
	return r.Runner.Forward(b, kv)
}

// TestQueueDuringStep: Queue answers while a step is in flight (Load waits
// for it, as the step holds the pool): a server refusing a request as full
// used Load and waited for the step.
func TestQueueDuringStep(t *testing.T) {
	m := &gatedModel{Model: newFake(models.WindowHalf, 1<<15), held: make(chan int64), release: make(chan struct{})}
	e := NewWithOptions(m, Options{MaxSeqs: 1})
	defer e.Close()
	m.hold.Store(true)
	a, err := e.Start(Request{Prompt: prompt(3, 0), MaxTokens: 4, Sampler: knobs["greedy"]})
	if err != nil {
		t.Fatal(err)
	}
	<-m.held
	var running, waiting int
	testmodels.Bounded(t, "Queue during a step", func() error { running, waiting = e.Queue(); return nil })
	close(m.release)
	if running != 1 || waiting != 0 {
		t.Errorf("Queue during a step: %d running, %d waiting; want 1, 0", running, waiting)
	}
	a.Wait()
}

// TestStartJoinsNextStep: a reply started while a step is in flight (its
// admission waits for that step, to see the pool's room) is prefilled in
// the very next step, not the one after: the step waits for its admission
// (awaitStarts). Before, under load, every new reply lost a step's worth of
// time to first token.
func TestStartJoinsNextStep(t *testing.T) {
	m := &gatedModel{Model: newFake(models.WindowHalf, 1<<15), held: make(chan int64), release: make(chan struct{})}
	e := NewWithOptions(m, Options{MaxSeqs: 4, MaxWaiting: 4, MaxBatchTokens: 16})
	e.q.startWait = time.Hour // the step waits for the admission however slow this host is
	defer e.Close()
	a, err := e.Start(Request{Prompt: prompt(3, 0), MaxTokens: 1 << 20, Sampler: knobs["greedy"]})
	if err != nil {
		t.Fatal(err)
	}
	defer a.Stop()
	for m.calls.Load() < 5 { // a is decoding
		time.Sleep(time.Millisecond)
	}
	m.hold.Store(true)
	held := <-m.held
	started := make(chan *Reply, 1)
	go func() {
		b, err := e.Start(Request{Prompt: prompt(4, 1), MaxTokens: 3, Sampler: knobs["greedy"]})
		if err != nil {
			t.Error(err)
		}
		started <- b
	}()
	for e.q.starting.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // into Start's wait for the step (the test also passes when shorter)
	close(m.release)
	b := <-started
	if b == nil {
		return
	}
	if res := b.Wait(); res.Err != nil || len(res.IDs) != 3 {
		t.Fatalf("the second reply: %v %v", res.Err, res.IDs)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	i, _ := slices.BinarySearch(m.fresh, held+1)
	if i == len(m.fresh) || m.fresh[i] != held+1 {
		t.Errorf("the step in flight was pass %d; passes from position 0 on: %v, want the next", held, m.fresh)
	}
}

// TestFirstTokenStepCarriesNoChunk: a long prompt is prefilled in chunks
// of a quarter of the budget beside a decoding reply; a short reply that
// arrives meanwhile gets its first token from a step of its own prompt
// alone, and at the step after the other two go on beside its first decode
// token.
func TestFirstTokenStepCarriesNoChunk(t *testing.T) {
	const budget = 16
	// dec is held at its first decode token while long starts, then the
	// pass held is long's first chunk beside dec's next token. Neither runs
	// free meanwhile: the fake model steps in microseconds, and a test
	// goroutine set aside for milliseconds found long's prompt done, or dec
	// past its window and re-prefilling beside long.
	m := &gatedModel{Model: newFake(models.WindowHalf, 1<<15), held: make(chan int64), release: make(chan struct{})}
	m.holdLen.Store(1)
	m.hold.Store(true)
	e := NewWithOptions(m, Options{MaxSeqs: 4, MaxWaiting: 4, MaxBatchTokens: budget, BlockSize: 4})
	e.q.startWait = time.Hour // the step waits for the admission however slow this host is
	defer e.Close()
	greedy := knobs["greedy"]
	dec, err := e.Start(Request{Prompt: prompt(2, 2), MaxTokens: 1 << 20, Sampler: greedy})
	if err != nil {
		t.Fatal(err)
	}
	defer dec.Stop()
	<-m.held
	longc := make(chan *Reply, 1)
	go func() {
		r, err := e.Start(Request{Prompt: prompt(200, 0), MaxTokens: 2, Sampler: greedy})
		if err != nil {
			t.Error(err)
		}
		longc <- r
	}()
	for e.q.starting.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	m.holdLen.Store(1 + budget/4)
	m.hold.Store(true)
	m.release <- struct{}{}
	held := <-m.held
	long := <-longc
	if long == nil {
		close(m.release)
		return
	}
	started := make(chan *Reply, 1)
	go func() {
		r, err := e.Start(Request{Prompt: prompt(3, 1), MaxTokens: 2, Sampler: greedy})
		if err != nil {
			t.Error(err)
		}
		started <- r
	}()
	for e.q.starting.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	close(m.release)
	short := <-started
	if short == nil {
		return
	}
	if res := short.Wait(); res.Err != nil {
		t.Fatal(res.Err)
	}
	if res := long.Wait(); res.Err != nil || len(res.IDs) != 2 {
		t.Fatalf("the long reply: %v %v", res.Err, res.IDs)
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, found := slices.BinarySearch(m.fresh, held); !found {
		t.Errorf("the held pass %d did not begin long's prompt (passes from position 0 on: %v)", held, m.fresh)
	}
	if len(m.lens) <= int(held)+1 || m.lens[held] != 3 || m.lens[held+1] != 2+budget/4 {
		t.Errorf("passes after the held one: %v; want the short prompt alone (3), then two decode tokens beside a chunk (2+%d)", m.lens[held:], budget/4)
	}
}

// TestFirstTokensFirstHoldsBackTwiceAtMost: while new replies get their
// first token, a decoding reply waits, but never more than maxHeld steps
// in a row.
func TestFirstTokensFirstHoldsBackTwiceAtMost(t *testing.T) {
	dec := &feedReq{owner: &gen{stats: Stats{GenTokens: 5}}, ids: []int{7}, rows: 1}
	var fed []bool
	for range 2*maxHeld + 2 {
		arrival := &feedReq{owner: &gen{}, ids: []int{1, 2}, rows: 1}
		dec.n, arrival.n = 1, 2
		step := firstTokensFirst([]*feedReq{dec, arrival})
		if !slices.Contains(step, arrival) {
			t.Fatalf("the new reply was held back: %v", step)
		}
		fed = append(fed, slices.Contains(step, dec))
	}
	if want := []bool{false, false, true, false, false, true}; !slices.Equal(fed, want) {
		t.Errorf("the decoding reply was fed at steps %v, want %v", fed, want)
	}
	dec.n = 1
	if step := firstTokensFirst([]*feedReq{dec}); len(step) != 1 {
		t.Errorf("with no new reply the step is %d requests, want 1", len(step))
	}
}

// TestLonePromptChunks: with no decode tokens beside it a prompt's chunk is
// half the step budget (a quarter of it beside decode tokens,
// TestFirstTokenStepCarriesNoChunk).
func TestLonePromptChunks(t *testing.T) {
	m := &countingModel{Model: newFake(models.WindowHalf, 1<<15)}
	e := NewWithOptions(m, Options{MaxSeqs: 4, MaxWaiting: 4, MaxBatchTokens: 16, BlockSize: 4})
	defer e.Close()
	if res := run(t, e, Request{Prompt: prompt(100, 0), MaxTokens: 2, Sampler: knobs["greedy"]}); res.Err != nil {
		t.Fatal(res.Err)
	}
	if got := m.most.Load(); got != 8 {
		t.Errorf("the lone prompt's largest chunk was %d tokens, want half the budget (8)", got)
	}
}

// TestWarm: Warm runs the largest step the scheduler plans (every place,
// one with a budget's prompt chunk) and leaves the pool as it was.
func TestWarm(t *testing.T) {
	m := &countingModel{Model: newFake(models.WindowHalf, 256)}
	e := NewWithOptions(m, Options{MaxSeqs: 4, MaxWaiting: 4, MaxBatchTokens: 24})
	defer e.Close()
	free := e.pool.Free()
	if err := e.Warm(); err != nil {
		t.Fatal(err)
	}
	if got := m.most.Load(); got != 3+24 {
		t.Errorf("the warm-up batch had %d tokens, want 3 + 24", got)
	}
	if e.pool.Free() != free {
		t.Errorf("pool free %d after the warm-up, %d before", e.pool.Free(), free)
	}
	// A sampler for each place, kept through garbage collections (a
	// sync.Pool would be empty now).
	runtime.GC()
	runtime.GC()
	if n := len(e.samplers); n != 4 {
		t.Errorf("%d samplers after the warm-up, want 4", n)
	}
	r, err := e.Start(Request{Prompt: prompt(5, 2), MaxTokens: 4, Sampler: knobs["greedy"]})
	if err != nil {
		t.Fatal(err)
	}
	if res := r.Wait(); res.Err != nil || len(res.IDs) != 4 {
		t.Fatalf("a reply after the warm-up: %v %v", res.Err, res.IDs)
	}
	if n := len(e.samplers); n != 4 {
		t.Errorf("%d samplers after a reply, want its sampler back (4)", n)
	}
}

// WarmTokens warms with a prompt chunk of its own size (a session's
// nn.MaxChunk) where Warm takes the step budget's; one place without a
// queue, and it returns every block.
func TestWarmTokens(t *testing.T) {
	m := &countingModel{Model: newFake(models.WindowHalf, 256)}
	e := New(m)
	defer e.Close()
	free := e.pool.Free()
	if err := e.WarmTokens(64); err != nil {
		t.Fatal(err)
	}
	if got := m.most.Load(); got != 64 {
		t.Errorf("the warm-up batch had %d tokens, want 64", got)
	}
	if e.pool.Free() != free {
		t.Errorf("pool free %d after the warm-up, %d before", e.pool.Free(), free)
	}
}

// hookModel calls hook before each forward pass with the pass's tokens.
type hookModel struct {
	models.Model
	hook func(n int)
}

type hookRunner struct {
	models.Runner
	m *hookModel
}

func (m *hookModel) NewRunner() models.Runner { return hookRunner{m.Model.NewRunner(), m} }

func (r hookRunner) Forward(b *models.Batch, kv []models.KV) ([]float32, error) {
	r.m.hook(b.Len())
	return r.Runner.Forward(b, kv)
}

// Without a step budget (the TUI), a long prompt is fed in steps of
// soloStep, so a stop asked for during its prefill ends the reply after
// the step in flight, not after the whole prompt; a prompt just over a
// step goes in one, and the same ids come out as before.
func TestSoloPrefillStops(t *testing.T) {
	var fed []int
	// The first pass waits for the reply and stops it: a test goroutine
	// descheduled after Start (the race detector, a loaded host) let two
	// passes go by before it had the reply to stop.
	var reply atomic.Pointer[Reply]
	have := make(chan struct{})
	m := &hookModel{Model: newFake(models.WindowHalf, 4096)}
	m.hook = func(n int) {
		fed = append(fed, n)
		if len(fed) == 1 {
			<-have
			if r := reply.Load(); r != nil { // nil in the runs below
				r.Stop()
			}
		}
	}
	e := New(m)
	defer e.Close()
	r, err := e.Start(Request{Prompt: prompt(1000, 0), MaxTokens: 4, Sampler: knobs["greedy"]})
	if err != nil {
		t.Fatal(err)
	}
	reply.Store(r)
	close(have)
	res := r.Wait()
	total := 0
	for _, n := range fed {
		total += n
	}
	if res.Reason != ReasonStopped || total > 2*soloStep || len(res.IDs) != 0 {
		t.Errorf("stopped in the prefill: reason %q, %d ids, passes %v (%d of 1000 tokens fed)", res.Reason, len(res.IDs), fed, total)
	}
	reply.Store(nil)
	for _, n := range []int{soloStep + 63, soloStep + 64, 1000} {
		// One step over the whole prompt: a budget larger than twice it.
		whole := NewWithOptions(newFake(models.WindowHalf, 4096), Options{MaxBatchTokens: 4 * n})
		want := run(t, whole, Request{Prompt: prompt(n, 1), MaxTokens: 6, Sampler: knobs["greedy"]})
		whole.Close()
		fed = nil
		solo := New(m)
		got := run(t, solo, Request{Prompt: prompt(n, 1), MaxTokens: 6, Sampler: knobs["greedy"]})
		solo.Close()
		if !slices.Equal(got.IDs, want.IDs) {
			t.Errorf("%d-token prompt: ids %v, want %v", n, got.IDs, want.IDs)
		}
		wantFirst := n
		if n-soloStep >= 64 {
			wantFirst = soloStep
		}
		if len(fed) == 0 || fed[0] != wantFirst {
			t.Errorf("%d-token prompt: passes %v, want a first of %d", n, fed, wantFirst)
		}
	}
}

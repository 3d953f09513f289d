package engine

import (
	"sync"
	"sync/atomic"
	"time"

	"chat/engine/sampler"
	"chat/engine/speculative"
	"chat/models/kvcache"
)

// Reply is one running or finished generation.
type Reply struct {
	req     Request
	spec    speculative.Config  // the setting Start took
	drafter speculative.Drafter // nil: plain decoding
	start   time.Time
	g       *gen         // the reply's state in its goroutine (set by begin)
	seq     *kvcache.Seq // its cache, under Engine.kvmu (for BlockMap)
	stop    atomic.Bool
	stopCh  chan struct{} // closed by Stop (a queued reply leaves the queue at once)
	stopMu  sync.Once
	done    chan struct{}

	// Scheduling (schedule.go), under Engine.mu.
	admit   chan struct{} // a token when the reply may run
	order   uint64        // arrival order: the latest are preempted first
	running bool          // counted in Engine.running

	params  sampler.Params // the latest SetSampler knobs
	paramsV atomic.Uint64  // bumped by every SetSampler

	watch   // what is recorded for watchers (observe.go)
	stepper // step mode (stepmode.go)

	mu     sync.Mutex
	buf    []byte // text not yet polled (the coalescing buffer)
	lps    []TokenLogprob
	stats  Stats
	fin    bool
	result Result
}

func newReply(req Request) *Reply {
	r := &Reply{req: req, start: time.Now(), done: make(chan struct{}),
		stopCh: make(chan struct{}), admit: make(chan struct{}, 1)}
	r.observe.Store(uint32(req.Observe))
	// The first step makes a record as if Poll had asked: a short reply on
	// a fast model can finish before the first Poll, and then had none.
	r.want.Store(req.Observe&ObserveSteps != 0)
	r.stepper.init(req.Step)
	return r
}

// Poll drains the text produced since the last Poll without blocking. Done
// is set (on this and every later Poll) once the reply has finished; the
// Delta that first reports Done also carries the last piece of text.
func (r *Reply) Poll() Delta {
	r.mu.Lock()
	defer r.mu.Unlock()
	d := Delta{Stats: r.stats}
	if len(r.buf) > 0 {
		d.Text = string(r.buf)
		r.buf = r.buf[:0]
	}
	if len(r.lps) > 0 {
		d.Logprobs, r.lps = r.lps, nil
	}
	if len(r.marks) > 0 {
		d.Marks, r.marks = r.marks, nil
	}
	if r.recNew {
		rec := r.rec
		d.Step, r.recNew = &rec, false
	}
	if r.previewNew {
		p := r.preview
		d.Preview, r.previewNew = &p, false
	}
	if Observe(r.observe.Load())&ObserveSteps != 0 {
		r.want.Store(true) // the next step makes a record for the next Poll
	}
	if r.fin {
		d.Done, d.Result = true, r.result
	}
	return d
}

// SetSampler changes the reply's knobs from its next token on. A changed
// Seed re-seeds the RNG. Invalid knobs (see sampler.Params.Validate) are
// ignored.
func (r *Reply) SetSampler(p sampler.Params) {
	if p.Validate() != nil {
		return
	}
	r.mu.Lock()
	r.params = p
	r.paramsV.Add(1)
	r.mu.Unlock()
	r.wakeUp() // a reply paused in step mode shows the new distribution
}

// latestParams returns the knobs if SetSampler changed them since version
// seen.
func (r *Reply) latestParams(seen uint64) (sampler.Params, uint64, bool) {
	if r.paramsV.Load() == seen {
		return sampler.Params{}, seen, false
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.params, r.paramsV.Load(), true
}

// Stop ends the reply after the token being computed; Reason "stopped".
func (r *Reply) Stop() {
	r.stop.Store(true)
	if r.stopCh != nil {
		r.stopMu.Do(func() { close(r.stopCh) })
	}
}

// Wait blocks until the reply is done and returns its result.
func (r *Reply) Wait() Result {
	<-r.done
	return r.result
}

// Done is closed when the reply has finished.
func (r *Reply) Done() <-chan struct{} { return r.done }

func (r *Reply) stopped() bool { return r.stop.Load() }

// push appends text and a stats snapshot for Poll. It allocates only when
// the buffer grows.
func (r *Reply) push(text []byte, st Stats) {
	r.mu.Lock()
	r.buf = append(r.buf, text...)
	r.stats = st
	r.mu.Unlock()
}

func (r *Reply) finish(res Result) {
	r.mu.Lock()
	r.stats = res.Stats
	r.result = res
	r.fin = true
	r.mu.Unlock()
	close(r.done)
}

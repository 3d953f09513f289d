package engine

import (
	"errors"
	"fmt"
	"sync"
	"time"

	"chat/engine/detok"
	"chat/engine/prefix"
	"chat/engine/sampler"
	"chat/models/kvcache"
)

// gen is one reply inside its goroutine: its sequence and everything the
// path of one token needs.
type gen struct {
	e      *Engine
	r      *Reply
	smp    *sampler.Sampler
	dec    detok.Decoder
	seq    *kvcache.Seq // the reply's cache
	cached []int        // ids at seq's positions 0..Len-1
	ctx    []int        // prompt + generated ids
	feed   feedReq      // the forward this reply asks the batcher for
	stop   *stopText    // Request.Stop (stopstr.go); nil without stop strings
	lockAt prefix.Node  // the prefix-tree path the reply matched
	locked bool

	logits []float32
	ids    []int
	text   []byte
	piece  []byte
	seenV  uint64
	first  time.Time
	stats  Stats
	reason string
	stopID int
	err    error

	spec    *specRun // nil: plain decoding
	pending bool     // speculating: the last id of ctx is not in the cache yet
	cons    *consRun // nil: no constraint

	lps  []TokenLogprob // Request.Logprobs (logprobs.go)
	obs  observer       // what is recorded for watchers (observe.go)
	left bool           // out of the batcher: preempted and waiting (schedule.go)
}

// generate runs one reply to the end.
func (e *Engine) generate(r *Reply) Result {
	g := e.begin(r)
	for g.reason == "" {
		if g.spec != nil {
			g.round()
		} else {
			g.step()
		}
	}
	return g.end()
}

// begin sets up the reply's sampler and detokenizer, takes the longest
// cached prefix of the prompt window (cache.go) and prefills the rest.
func (e *Engine) begin(r *Reply) *gen {
	req := &r.req
	g := &gen{
		e:      e,
		r:      r,
		smp:    e.newSampler(req.Sampler),
		ids:    make([]int, 0, min(req.MaxTokens, 4096)),
		piece:  make([]byte, 0, 64),
		stopID: -1,
		stats:  Stats{PromptTokens: len(req.Prompt), KVCap: e.window},
		ctx:    append(make([]int, 0, len(req.Prompt)+min(req.MaxTokens, 4096)+1), req.Prompt...),
		feed:   feedReq{done: make(chan struct{}, 1)},
		stop:   newStopText(req.Stop),
		seenV:  r.paramsV.Load(),
	}
	g.smp.Reset(req.Sampler.Seed)
	g.syncBreakers()
	g.beginConstraint()
	r.g = g

	in := e.promptWindow(req.Prompt)
	if len(in) < len(req.Prompt) {
		g.stats.WindowCuts++
	}
	g.stats.ReusedTokens = g.reuse(in)
	t0 := time.Now()
	logits, err := g.forward(in[g.stats.ReusedTokens:], 1)
	if err != nil {
		g.reason, g.err = ReasonError, fmt.Errorf("engine: prefill: %w", err)
		return g
	}
	g.logits = logits
	if d := time.Since(t0).Seconds(); d > 0 {
		g.stats.PrefillTokS = float64(len(in)-g.stats.ReusedTokens) / d
	}
	g.kvStats()
	g.startSpec()
	r.push(nil, g.stats)
	return g
}

// newSampler takes a finished reply's sampler, renewed, or makes one. Its
// buffers are about a megabyte for a 32k vocabulary, and a new one's page
// faults take about a millisecond on these VMs, one at a time: 16 replies
// starting together with new samplers delayed the step after their prefill
// by ~20 ms. So finished replies keep theirs (a bounded list, not a
// sync.Pool, which a garbage collection empties) and Warm fills it.
func (e *Engine) newSampler(p sampler.Params) *sampler.Sampler {
	select {
	case s := <-e.samplers:
		s.Renew(p)
		return s
	default:
		return sampler.New(e.vocab, p)
	}
}

// keepSampler gives a finished reply's sampler back to newSampler.
func (e *Engine) keepSampler(s *sampler.Sampler) {
	select {
	case e.samplers <- s:
	default: // MaxSeqs kept already
	}
}

// step produces one token: knobs → sample → stop rule → detok → reply
// buffer → budget/stop checks → forward of the next position by the window
// rule. It sets g.reason when the reply is over. In the steady state it
// allocates nothing beyond the growth of g.ids, g.text and the reply buffer.
func (g *gen) step() {
	if !g.prepare() || !g.maskNow() || !g.pause(true) {
		return
	}
	g.observing()
	id, ok := g.sample()
	if !ok {
		return
	}
	defer g.publish()
	if !g.put(id) {
		return
	}
	if g.feedNext() {
		g.kvStats()
	}
}

// feedNext feeds the id just taken by the window rule (next) and keeps the
// next token's logits. It reports false, with g.reason set, on error.
func (g *gen) feedNext() bool {
	logits, err := g.next()
	if err != nil {
		g.reason, g.err = ReasonError, fmt.Errorf("engine: forward after token %d: %w", g.stats.GenTokens, err)
		return false
	}
	g.logits = logits
	return true
}

// sample draws the next id from g.logits and records it for watchers
// (logprobs, the token view, the step record). It reports false, with
// g.reason set, if the sampler failed.
func (g *gen) sample() (int, bool) {
	id, err := g.smp.Sample(g.logits, g.ctx)
	if err != nil {
		g.reason, g.err = ReasonError, fmt.Errorf("engine: token %d: %w", g.stats.GenTokens+1, err)
		return -1, false
	}
	g.captured(g.logits)
	g.logprob(id)
	probs := g.smp.Probs()
	g.mark(id, probs[id], false)
	g.record(probs, id, false)
	return id, true
}

// prepare runs before each token (or speculative round): it ends the reply
// if Stop was called and picks up new knobs. It reports whether to go on.
func (g *gen) prepare() bool {
	if g.r.stopped() {
		g.reason = ReasonStopped
		return false
	}
	g.takeParams()
	return true
}

// takeParams picks up knobs SetSampler changed.
func (g *gen) takeParams() {
	if p, v, ok := g.r.latestParams(g.seenV); ok {
		g.seenV = v
		if p.Seed != g.smp.Params().Seed {
			g.smp.Reset(p.Seed)
		}
		g.smp.SetParams(p)
		g.syncBreakers()
	}
}

// syncBreakers gives the sampler the DRY sequence breakers its knobs name,
// in this model's ids, when DRY is on and it does not have them yet.
func (g *gen) syncBreakers() {
	p := g.smp.Params()
	if !p.DRYOn() || g.smp.Breakers().Key() == p.DRYBreakers && g.smp.Breakers() != nil {
		return
	}
	g.smp.SetBreakers(g.e.breakersFor(p.DRYBreakers))
}

// breakersFor makes the Breakers of a Params.DRYBreakers, keeping the last
// (a pass over the vocabulary per breaker, a few ms for 128k ids, which a
// server's replies with the same breakers then share). The lock only picks
// the entry: replies asking for the same breakers wait for one build, and
// others are not held up by it.
func (e *Engine) breakersFor(joined string) *sampler.Breakers {
	e.brkMu.Lock()
	b := e.breakers
	if b == nil || b.key != joined {
		b = &breakersEntry{key: joined}
		e.breakers = b
	}
	e.brkMu.Unlock()
	b.once.Do(func() { b.b = sampler.NewBreakers(joined, e.vocab, e.tok.TokenBytes, e.tok.Encode) })
	return b.b
}

// breakersEntry is breakersFor's cache: the Breakers of key, made once.
type breakersEntry struct {
	key  string
	once sync.Once
	b    *sampler.Breakers
}

// put takes one chosen id: timing stats, the stop rule, detok, the reply
// buffer, then the budget and Stop checks. It reports whether the reply
// goes on (false: g.reason is set).
func (g *gen) put(id int) bool {
	r := g.r
	now := time.Now()
	if g.stats.GenTokens == 0 {
		g.first = now
		g.stats.TTFT = now.Sub(r.start)
	} else if d := now.Sub(g.first).Seconds(); d > 0 {
		g.stats.DecodeTokS = float64(g.stats.GenTokens) / d
	}
	g.stats.GenTokens++
	g.stats.Spec.Generated = g.stats.GenTokens
	g.ctx = append(g.ctx, id)
	if !g.advance(id) {
		return false
	}

	if isStop(id, r.req.StopIDs) {
		g.reason, g.stopID = ReasonEOT, id
		r.push(nil, g.stats)
		return false
	}
	g.ids = append(g.ids, id)
	piece := g.e.tok.TokenBytes(id)
	if g.e.control != nil && g.e.control.IsControl(id) {
		piece = nil // a control token a model emits is not text
	}
	g.piece = g.dec.Append(g.piece[:0], piece)
	hit := g.stop.cut(&g.piece)
	g.emit()
	if hit {
		g.reason = ReasonStopString
		return false
	}

	switch {
	case g.stats.GenTokens >= r.req.MaxTokens:
		g.reason = ReasonLength
		return false
	case r.stopped():
		g.reason = ReasonStopped
		return false
	}
	return true
}

// emit hands g.piece to the reply buffer and OnText.
func (g *gen) emit() {
	g.text = append(g.text, g.piece...)
	g.r.push(g.piece, g.stats)
	if f := g.r.req.OnText; f != nil && len(g.piece) > 0 {
		f(string(g.piece))
	}
}

// end flushes the detokenizer, hands the sequence to the cache, leaves the
// batcher and builds the Result.
func (g *gen) end() Result {
	g.piece = g.dec.Flush(g.piece[:0])
	if g.stop.cut(&g.piece) {
		g.reason = ReasonStopString
	}
	g.piece = g.stop.flush(g.piece)
	if errors.Is(g.err, errStopped) { // stopped while its feed waited (schedule.go)
		g.reason, g.err = ReasonStopped, nil
	}
	g.kvStats()
	g.finishCache()
	if !g.left {
		g.e.b.leave()
	}
	g.emit()
	g.e.keepSampler(g.smp)
	return Result{IDs: g.ids, Text: string(g.text), Reason: g.reason, StopID: g.stopID, Err: g.err, Stats: g.stats, Logprobs: g.lps}
}

// forward runs ids at the next positions of the reply's sequence, in the
// next batch (or, for a long prompt, over several: schedule.go), and returns
// the logits of the last rows of them. A preempted sequence is recomputed
// from its ids when it is admitted again. On error the cache is emptied,
// since its contents are then unknown.
func (g *gen) forward(ids []int, rows int) ([]float32, error) {
	for {
		g.feed.owner, g.feed.seq, g.feed.ids, g.feed.rows = g, g.seq, ids, rows
		g.e.b.forward(&g.feed)
		g.cached = append(g.cached, ids[:g.feed.fed]...)
		if g.feed.err != errPreempted {
			break
		}
		if ids = g.recompute(ids[g.feed.fed:], rows); ids == nil {
			return nil, errStopped
		}
	}
	if err := g.feed.err; err != nil {
		if err != errStopped {
			g.truncate(0)
		}
		return nil, err
	}
	g.stats.BatchSeqs = g.feed.seqs
	return g.feed.logits, nil
}

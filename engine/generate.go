package engine

import (
	"fmt"
	"time"
)

// gen is the state of one reply inside the engine goroutine.
type gen struct {
	r      *Reply
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
	pending bool     // speculating: the last id of e.ctx is not in the cache yet
	cons    *consRun // nil: no constraint
}

// generate runs one reply to the end.
func (e *Engine) generate(r *Reply) Result {
	g := e.begin(r)
	for g.reason == "" {
		if g.spec != nil {
			e.round(g)
		} else {
			e.step(g)
		}
	}
	return e.end(g)
}

// begin resets the sampler and detokenizer, reuses the cached prefix and
// prefills the rest of the prompt window.
func (e *Engine) begin(r *Reply) *gen {
	req := &r.req
	g := &gen{
		r:      r,
		ids:    make([]int, 0, min(req.MaxTokens, 4096)),
		piece:  make([]byte, 0, 64),
		stopID: -1,
		stats:  Stats{PromptTokens: len(req.Prompt), KVCap: e.window},
	}
	e.smp.SetParams(req.Sampler)
	e.smp.Reset(req.Sampler.Seed)
	e.dec.Reset()
	e.beginConstraint(g)
	e.ctx = append(e.ctx[:0], req.Prompt...)

	in := e.promptWindow(req.Prompt)
	g.stats.ReusedTokens = e.reuse(in)
	e.countReuse(&g.stats)
	t0 := time.Now()
	logits, err := e.feed(in[g.stats.ReusedTokens:])
	if err != nil {
		g.reason, g.err = ReasonError, fmt.Errorf("engine: prefill: %w", err)
		return g
	}
	g.logits = logits
	if d := time.Since(t0).Seconds(); d > 0 {
		g.stats.PrefillTokS = float64(len(in)-g.stats.ReusedTokens) / d
	}
	e.kvStats(&g.stats)
	e.startSpec(g)
	r.push(nil, g.stats)
	return g
}

// step produces one token: knobs → sample → stop rule → detok → reply
// buffer → budget/stop checks → forward of the next position by the window
// rule. It sets g.reason when the reply is over. In the steady state it
// allocates nothing beyond the growth of g.ids, g.text and the reply buffer.
func (e *Engine) step(g *gen) {
	if !e.prepare(g) || !e.maskNow(g) {
		return
	}
	id, err := e.smp.Sample(g.logits, e.ctx)
	if err != nil {
		g.reason, g.err = ReasonError, fmt.Errorf("engine: token %d: %w", g.stats.GenTokens+1, err)
		return
	}
	if !e.put(g, id) {
		return
	}
	g.logits, err = e.next()
	if err != nil {
		g.reason, g.err = ReasonError, fmt.Errorf("engine: forward after token %d: %w", g.stats.GenTokens, err)
		return
	}
	e.kvStats(&g.stats)
}

// prepare runs before each token (or speculative round): it ends the reply
// if Stop was called and picks up new knobs. It reports whether to go on.
func (e *Engine) prepare(g *gen) bool {
	if g.r.stopped() {
		g.reason = ReasonStopped
		return false
	}
	if p, v, ok := e.latestParams(g.seenV); ok {
		g.seenV = v
		if p.Seed != e.smp.Params().Seed {
			e.smp.Reset(p.Seed)
		}
		e.smp.SetParams(p)
	}
	return true
}

// put takes one chosen id: timing stats, the stop rule, detok, the reply
// buffer, then the budget and Stop checks. It reports whether the reply
// goes on (false: g.reason is set).
func (e *Engine) put(g *gen, id int) bool {
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
	e.ctx = append(e.ctx, id)
	if !e.advance(g, id) {
		return false
	}

	if isStop(id, r.req.StopIDs) {
		g.reason, g.stopID = ReasonEOT, id
		r.push(nil, g.stats)
		return false
	}
	g.ids = append(g.ids, id)
	g.piece = e.dec.Append(g.piece[:0], e.tok.TokenBytes(id))
	e.emit(g)

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
func (e *Engine) emit(g *gen) {
	g.text = append(g.text, g.piece...)
	g.r.push(g.piece, g.stats)
	if f := g.r.req.OnText; f != nil && len(g.piece) > 0 {
		f(string(g.piece))
	}
}

// end flushes the detokenizer and builds the Result.
func (e *Engine) end(g *gen) Result {
	g.piece = e.dec.Flush(g.piece[:0])
	e.finishCache()
	e.kvStats(&g.stats)
	e.emit(g)
	return Result{IDs: g.ids, Text: string(g.text), Reason: g.reason, StopID: g.stopID, Err: g.err, Stats: g.stats}
}

package engine

import (
	"math"
	"sync/atomic"

	"chat/engine/sampler"
	"chat/engine/speculative"
)

// Watching generation: what the TUI's views and --trace show. A reply
// records only what someone watches (Request.Observe, Reply.SetObserve,
// Request.OnStep), so with nothing watched a step does one atomic load
// more and allocates nothing.
//
//   - ObserveTokens: each generated token's probability and whether a
//     drafter guessed it (Delta.Marks), for the token view's heat map.
//   - ObserveSteps: the full record of a step (StepRecord: the likeliest
//     candidates before and after the sampler chain, entropies, the ids
//     each stage left, the speculative round, the blocks), made only for a
//     reply's first step and when Poll has asked for one since the last (so
//     at the UI's frame rate, not per token), and for every step in step
//     mode.
//   - Request.OnStep gets the record of every step (--trace).
//
// The after-chain probabilities are the sampler's own distribution for the
// step — the slice it drew from, copied — and the stage counts come from
// the sampler's trace, so the views cannot drift from what was sampled.

// Observe says what a reply records for watchers.
type Observe uint32

const (
	ObserveTokens Observe = 1 << iota // Delta.Marks
	ObserveSteps                      // Delta.Step
)

// TopN is the number of candidates a StepRecord keeps on each side.
const TopN = 10

// Candidate is one id at a step: its probability under the model (the
// softmax of the logits, before the sampler chain) and after the chain
// (the distribution the sampler drew from).
type Candidate struct {
	ID            int
	Before, After float64
}

// Mark is one generated token, for the token view.
type Mark struct {
	ID      int
	Prob    float64 // after the chain: the probability it was drawn with (for a drafted id, the target's)
	Drafted bool    // a drafter's guess that the target accepted
}

// StepRecord is one decision: a token, or the first token of a speculative
// round.
type StepRecord struct {
	Token   int       // the reply's token number this step decides (1-based)
	Pos     int       // its position in the sequence
	Preview bool      // step mode: the next token's distribution before it is drawn (Drawn.ID is -1)
	Drawn   Candidate // the id taken
	Before  [TopN]Candidate
	NBefore int // the likeliest ids before the chain, most likely first
	After   [TopN]Candidate
	NAfter  int // the likeliest after it, most likely first (only ids it can draw)
	// EntropyBefore and EntropyAfter are in bits.
	EntropyBefore, EntropyAfter float64
	Params                      sampler.Params
	Stages                      sampler.Trace // which processors ran and what each left

	// A speculative round (Round set): the guesses, how many the target
	// accepted, and the ids taken (the accepted guesses and one more).
	Round    bool
	Guesses  [speculative.MaxK]int
	NGuesses int
	Accepted int
	Taken    [speculative.MaxK + 1]int
	NTaken   int

	// The reply's KV blocks after the step: held, shared with the prefix
	// cache or another sequence (ref count > 1), gained since the last
	// record; and the pool's blocks in use and in all.
	SeqBlocks, SharedBlocks, NewBlocks, PoolUsed, PoolBlocks int
}

// observer is a reply's recording state, in its goroutine.
type observer struct {
	on       Observe
	full     bool          // this step makes a full record
	built    bool          // and has made it
	trace    sampler.Trace // the sampler's record of the step's call
	logits   []float32     // the step's logits row (the runner's buffer moves on)
	rec      StepRecord
	lastSeqB int
}

// observing reads the reply's settings at the start of a step and says
// whether this step makes a full record (and if so, traces the sampler).
func (g *gen) observing() {
	o := &g.obs
	r := g.r
	o.on = Observe(r.observe.Load())
	o.full = r.req.OnStep != nil || o.on&ObserveSteps != 0 && (r.stepping.Load() || r.want.Swap(false))
	o.built = false
	if o.full {
		g.smp.SetTrace(&o.trace)
	}
}

// captured keeps the logits row the step's first token was sampled from
// and stops the sampler's trace (call it right after that Sample or Dist).
func (g *gen) captured(logits []float32) {
	o := &g.obs
	if !o.full {
		return
	}
	g.smp.SetTrace(nil)
	o.logits = append(o.logits[:0], logits...)
}

// mark records a generated token for the token view (a stop id is not one).
func (g *gen) mark(id int, prob float64, drafted bool) {
	if g.obs.on&ObserveTokens == 0 || isStop(id, g.r.req.StopIDs) {
		return
	}
	r := g.r
	r.mu.Lock()
	r.marks = append(r.marks, Mark{ID: id, Prob: prob, Drafted: drafted})
	r.mu.Unlock()
}

// record builds and publishes the step's full record from the logits
// captured, the sampler's distribution after the chain and the id drawn
// (-1 for a preview).
func (g *gen) record(after []float64, drawn int, preview bool) {
	o := &g.obs
	if !o.full {
		return
	}
	rec := &o.rec
	*rec = StepRecord{Token: g.stats.GenTokens + 1, Pos: len(g.ctx), Preview: preview, Params: g.smp.Params(), Stages: o.trace}
	o.built = true
	m, z, ent := beforeStats(o.logits)
	before := func(id int) float64 {
		if v := float64(o.logits[id]); v == v && z > 0 {
			return math.Exp(v-m) / z
		}
		return 0
	}
	rec.EntropyBefore = ent
	rec.NBefore = topBy(rec.Before[:], len(o.logits), func(i int) float64 {
		if v := float64(o.logits[i]); v == v {
			return v
		}
		return math.Inf(-1)
	})
	for i := range rec.NBefore {
		c := &rec.Before[i]
		c.Before, c.After = before(c.ID), after[c.ID]
	}
	rec.NAfter = topBy(rec.After[:], len(after), func(i int) float64 {
		if after[i] > 0 {
			return after[i]
		}
		return math.Inf(-1)
	})
	for i := range rec.NAfter {
		c := &rec.After[i]
		c.Before, c.After = before(c.ID), after[c.ID]
	}
	h := 0.0
	for _, p := range after {
		if p > 0 {
			h -= p * math.Log2(p)
		}
	}
	rec.EntropyAfter = h
	rec.Drawn = Candidate{ID: -1}
	if drawn >= 0 {
		rec.Drawn = Candidate{ID: drawn, Before: before(drawn), After: after[drawn]}
		rec.Taken[0], rec.NTaken = drawn, 1
	}
}

// publish adds the block figures to the record made in this step and hands
// it to Poll and (a preview excepted) to Request.OnStep.
func (g *gen) publish() {
	o := &g.obs
	if !o.built {
		return
	}
	o.built = false
	g.blockCounts(&o.rec)
	if f := g.r.req.OnStep; f != nil && !o.rec.Preview {
		f(&o.rec)
	}
	r := g.r
	r.mu.Lock()
	if o.rec.Preview {
		r.preview, r.previewNew = o.rec, true
	} else {
		r.rec, r.recNew = o.rec, true
	}
	r.mu.Unlock()
}

// roundRecord adds a speculative round's guesses and outcome.
func (g *gen) roundRecord(guesses, taken []int, accepted int) {
	rec := &g.obs.rec
	if !g.obs.built {
		return
	}
	rec.Round = true
	rec.NGuesses = copy(rec.Guesses[:], guesses)
	rec.Accepted = accepted
	rec.NTaken = copy(rec.Taken[:], taken)
}

// blockCounts fills the record's block figures.
func (g *gen) blockCounts(rec *StepRecord) {
	e := g.e
	e.kvmu.Lock()
	t := g.seq.Table()
	rec.SeqBlocks = len(t)
	for _, b := range t {
		if e.pool.Ref(b) > 1 {
			rec.SharedBlocks++
		}
	}
	rec.PoolUsed, rec.PoolBlocks = e.pool.Used(), e.pool.Blocks()
	e.kvmu.Unlock()
	rec.NewBlocks = max(0, rec.SeqBlocks-g.obs.lastSeqB)
	g.obs.lastSeqB = rec.SeqBlocks
}

// beforeStats is the softmax of a logits row in float64: its max, the sum
// of exp(l - max) and its entropy in bits. NaN logits count as impossible.
func beforeStats(logits []float32) (m, z, bits float64) {
	m = math.Inf(-1)
	for _, v := range logits {
		if f := float64(v); f > m {
			m = f
		}
	}
	if math.IsInf(m, -1) {
		return m, 0, 0
	}
	if math.IsInf(m, 1) {
		m = math.MaxFloat64
	}
	s := 0.0 // Σ e·(l - m)
	for _, v := range logits {
		if f := float64(v); f == f && !math.IsInf(f, -1) {
			d := max(f-m, -math.MaxFloat64)
			x := math.Exp(d)
			z += x
			if x > 0 {
				s += x * d
			}
		}
	}
	return m, z, (math.Log(z) - s/z) / math.Ln2
}

// topBy puts the ids 0..n-1 with the largest key (above -Inf) in dst,
// largest first (ties: lower id first), and returns how many it put.
func topBy(dst []Candidate, n int, key func(int) float64) int {
	k := 0
	for i := range n {
		v := key(i)
		if math.IsInf(v, -1) || k == len(dst) && v <= key(dst[k-1].ID) {
			continue
		}
		if k < len(dst) {
			k++
		}
		j := k - 1
		for j > 0 && key(dst[j-1].ID) < v {
			dst[j] = dst[j-1]
			j--
		}
		dst[j] = Candidate{ID: i}
	}
	return k
}

// watch is the reply side: what Poll has asked for and the latest record.
type watch struct {
	observe atomic.Uint32 // Observe
	want    atomic.Bool   // Poll asked for a full record since the last one
	// Under Reply.mu: the marks not polled yet, the latest record and the
	// latest preview, each with whether Poll has seen it.
	marks      []Mark
	rec        StepRecord
	recNew     bool
	preview    StepRecord
	previewNew bool
}

// SetObserve changes what the reply records from its next step on.
func (r *Reply) SetObserve(o Observe) {
	r.observe.Store(uint32(o))
	r.wakeUp() // a paused reply shows its preview
}

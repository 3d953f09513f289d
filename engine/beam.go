package engine

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"

	"chat/engine/prefix"
	"chat/models"
	"chat/models/kvcache"
)

// Beam search (seed 003): keep the Width most probable continuations, not
// just the most probable next token. Each step scores every live beam's
// best next tokens by the joint log-probability of the whole continuation,
// keeps the Width best; a candidate that ends in a stop id goes to the
// finished list instead, scored logp / length^LengthPenalty (Hugging Face's
// length_penalty: 0 compares plain joint probabilities, above 0 favours
// longer ones). The search ends when the budget is spent, the context is
// full, or no live beam can still beat the worst of Width finished ones.
//
// The beams are sequences in the engine's KV pool: a beam kept by two
// children is forked, so they share every block they have in common (the
// prompt and the common part of their continuations), and a child's first
// write into a shared partly filled block copies that one block
// (copy-on-write). The prompt's blocks come from, and go to, the prefix
// cache like any reply's. All live beams go through the model as one batch
// per step. A beam search runs in the caller's goroutine with a runner of
// its own and counts as one running reply.

// BeamRequest is one beam search.
type BeamRequest struct {
	Prompt        []int
	MaxTokens     int     // new tokens per hypothesis (> 0), a stop id included
	Width         int     // beams kept (≥ 1); 1 is greedy
	LengthPenalty float64 // α in logp / length^α
	StopIDs       []int   // a hypothesis ends at one of these (not in its IDs)
	// Done, when closed, stops the search before its next step with
	// ErrBeamStopped (a server's client hung up: the search would
	// otherwise run its Width sequences to the budget for nobody).
	Done <-chan struct{}
}

// ErrBeamStopped is Beam's error when its request's Done was closed.
var ErrBeamStopped = errors.New("engine: beam search stopped")

// Hypothesis is one finished continuation.
type Hypothesis struct {
	IDs     []int   // generated ids, without the stop id
	LogProb float64 // joint natural log-probability, the stop id's included
	Score   float64 // LogProb / Length^α
	Length  int     // tokens generated, the stop id included
	Reason  string  // ReasonEOT or ReasonLength
	StopID  int     // the stop id that ended it, or -1
}

// BeamResult is the finished hypotheses, best score first (at most Width).
type BeamResult struct {
	Hypotheses []Hypothesis
	Stats      BeamStats
}

// BeamStats count the search's work and memory.
type BeamStats struct {
	PromptTokens, ReusedTokens int
	Steps                      int // forward passes after the prefill
	// PeakBlocks is the most pool blocks the beams held at once (shared
	// blocks once); UnsharedBlocks is what Width sequences of the final
	// length would take with nothing shared.
	PeakBlocks, UnsharedBlocks int
}

// beam is a live continuation.
type beam struct {
	seq    *kvcache.Seq
	ids    []int
	logp   float64
	logits []float32 // of the next token, owned by the search
}

// Beam runs a beam search to the end. It fails while Options.MaxSeqs
// replies run, after Close, or for a bad request.
func (e *Engine) Beam(req BeamRequest) (BeamResult, error) {
	if e.err != nil {
		return BeamResult{}, e.err
	}
	if req.Width < 1 {
		return BeamResult{}, fmt.Errorf("engine: beam width %d; it must be at least 1", req.Width)
	}
	if math.IsNaN(req.LengthPenalty) || math.IsInf(req.LengthPenalty, 0) {
		return BeamResult{}, fmt.Errorf("engine: length penalty %v", req.LengthPenalty)
	}
	if err := e.validate(Request{Prompt: req.Prompt, MaxTokens: req.MaxTokens}); err != nil {
		return BeamResult{}, err
	}
	e.mu.Lock()
	switch {
	case e.closed:
		e.mu.Unlock()
		return BeamResult{}, ErrClosed
	case e.running >= e.maxSeqs:
		e.mu.Unlock()
		return BeamResult{}, ErrBusy
	}
	e.running++
	e.mu.Unlock()
	defer func() {
		e.mu.Lock()
		e.running--
		e.mu.Unlock()
	}()
	s := &beamSearch{e: e, req: req, runner: e.model.NewRunner()}
	defer s.free()
	return s.run()
}

type beamSearch struct {
	e      *Engine
	req    BeamRequest
	runner models.Runner
	batch  models.Batch
	kvs    []models.KV
	live   []*beam
	done   []Hypothesis
	locked bool
	lockAt prefix.Node
	stats  BeamStats
}

func (s *beamSearch) run() (BeamResult, error) {
	e := s.e
	in := e.promptWindow(s.req.Prompt)
	s.stats.PromptTokens = len(s.req.Prompt)
	seq, n := s.prefix(in)
	s.live = []*beam{{seq: seq}}
	logits, err := s.forward(s.live, [][]int{in[n:]})
	if err != nil {
		return BeamResult{}, fmt.Errorf("engine: beam prefill: %w", err)
	}
	s.live[0].logits = logits[0]
	e.kvmu.Lock()
	if e.tree != nil {
		e.tree.Insert(in, seq.Table()) // the prompt's full blocks, for later replies
	}
	e.kvmu.Unlock()
	for gen := 1; len(s.live) > 0; gen++ {
		select {
		case <-s.req.Done:
			return BeamResult{}, ErrBeamStopped
		default:
		}
		s.step(gen)
		if len(s.live) == 0 || s.over(gen) {
			break
		}
		ids := make([][]int, len(s.live))
		for i, b := range s.live {
			ids[i] = b.ids[len(b.ids)-1:]
		}
		logits, err := s.forward(s.live, ids)
		if err != nil {
			return BeamResult{}, fmt.Errorf("engine: beam step %d: %w", gen, err)
		}
		for i, b := range s.live {
			b.logits = logits[i]
		}
		s.stats.Steps++
	}
	for _, b := range s.live { // out of budget or context
		s.finish(b, b.logp, len(b.ids), -1)
	}
	longest := 0
	for _, h := range s.done {
		longest = max(longest, h.Length)
	}
	bs := e.pool.BlockSize()
	s.stats.UnsharedBlocks = s.req.Width * ((len(in) + longest + bs - 1) / bs)
	return BeamResult{Hypotheses: s.done, Stats: s.stats}, nil
}

// prefix gives the search a sequence holding the longest cached prefix of
// in (at most len(in)-1 ids, so one is fed for logits) and its length.
func (s *beamSearch) prefix(in []int) (*kvcache.Seq, int) {
	e := s.e
	e.kvmu.Lock()
	defer e.kvmu.Unlock()
	if e.tree != nil {
		if blocks, m, at := e.tree.Match(in); m > 0 {
			seq, err := e.pool.SeqFrom(blocks, m, e.window)
			if err == nil {
				e.tree.Lock(at)
				s.locked, s.lockAt = true, at
				n := min(m, len(in)-1)
				seq.Truncate(n)
				s.stats.ReusedTokens = n
				return seq, n
			}
		}
	}
	return e.pool.NewSeq(e.window), 0
}

// candidate is one way to extend a live beam.
type candidate struct {
	parent int
	id     int
	logp   float64 // of the whole continuation
}

// step extends the live beams by one token each: the Width best
// candidates among each beam's 2·Width best next tokens; those that are a
// stop id finish instead.
func (s *beamSearch) step(gen int) {
	w := s.req.Width
	var cands []candidate
	for bi, b := range s.live {
		// Logprobs' own id (0) is not used: only its top list.
		for _, c := range Logprobs(b.logits, 0, 2*w).Top {
			cands = append(cands, candidate{bi, c.ID, b.logp + c.Logprob})
		}
	}
	slices.SortStableFunc(cands, func(a, b candidate) int {
		switch {
		case a.logp > b.logp:
			return -1
		case a.logp < b.logp:
			return 1
		}
		return 0
	})
	var next []candidate
	for rank, c := range cands {
		if len(next) == w {
			break
		}
		if isStop(c.id, s.req.StopIDs) {
			if rank < w { // only a stop among the Width best ends a hypothesis
				s.finish(s.live[c.parent], c.logp, gen, c.id)
			}
			continue
		}
		next = append(next, c)
	}
	s.fork(next)
}

// fork makes the next live beams: a parent kept by several children is
// forked (its blocks shared); one kept by none is freed.
func (s *beamSearch) fork(next []candidate) {
	e := s.e
	e.kvmu.Lock()
	defer e.kvmu.Unlock()
	used := make([]bool, len(s.live))
	out := make([]*beam, 0, len(next))
	for _, c := range next {
		p := s.live[c.parent]
		b := &beam{seq: p.seq, ids: append(slices.Clip(p.ids), c.id), logp: c.logp}
		if used[c.parent] {
			b.seq = p.seq.Fork()
		}
		used[c.parent] = true
		out = append(out, b)
	}
	for i, p := range s.live {
		if !used[i] {
			p.seq.Free()
		}
	}
	s.live = out
}

// over reports whether the search is done after gen tokens: the budget or
// the context is spent, or Width hypotheses are finished and no live beam
// can beat the worst of them (its log-probability only falls; with a
// positive α its score can still rise with length, which the check takes
// at the budget's length).
func (s *beamSearch) over(gen int) bool {
	if gen >= s.req.MaxTokens || s.live[0].seq.Len() >= s.e.window {
		return true
	}
	if len(s.done) < s.req.Width {
		return false
	}
	worst := math.Inf(1)
	for _, h := range s.done {
		worst = min(worst, h.Score)
	}
	best := math.Inf(-1)
	for _, b := range s.live {
		l := gen
		if s.req.LengthPenalty > 0 {
			l = s.req.MaxTokens
		}
		best = max(best, b.logp/math.Pow(float64(l), s.req.LengthPenalty))
	}
	return best <= worst
}

// finish adds a hypothesis (b's ids, without the stop id when there is
// one) to the finished ones, kept best score first (ties in the order they
// finished) and at most Width: only those are returned, and over compares
// with the worst of them. Keeping every one would hold up to Width per step,
// each as long as the step, when stop ids are often among the best.
func (s *beamSearch) finish(b *beam, logp float64, length, stop int) {
	score := logp / math.Pow(float64(max(length, 1)), s.req.LengthPenalty)
	at := sort.Search(len(s.done), func(i int) bool { return s.done[i].Score < score })
	if at >= s.req.Width {
		return
	}
	h := Hypothesis{IDs: slices.Clone(b.ids), LogProb: logp, Length: length, StopID: stop, Reason: ReasonLength}
	if stop >= 0 {
		h.Reason = ReasonEOT
	}
	if h.IDs == nil {
		h.IDs = []int{}
	}
	h.Score = score
	s.done = slices.Insert(s.done, at, h)
	s.done = s.done[:min(len(s.done), s.req.Width)]
}

// forward feeds ids[i] to beams[i] as one batch and returns each beam's
// logits of its last id (copied: the next pass reuses the runner's buffer).
func (s *beamSearch) forward(beams []*beam, ids [][]int) ([][]float32, error) {
	e := s.e
	e.kvmu.Lock()
	defer e.kvmu.Unlock()
	need := 0
	for i, b := range beams {
		need += b.seq.Need(len(ids[i]))
	}
	e.makeRoom(need)
	s.batch.Reset()
	s.kvs = s.kvs[:0]
	for i, b := range beams {
		s.kvs = append(s.kvs, b.seq)
		s.batch.AddRun(i, b.seq.Len(), ids[i], 1)
	}
	logits, err := s.runner.Forward(&s.batch, s.kvs)
	if err != nil {
		return nil, err
	}
	v := e.vocab
	out := make([][]float32, len(beams))
	for i := range beams {
		out[i] = slices.Clone(logits[i*v : (i+1)*v])
	}
	s.stats.PeakBlocks = max(s.stats.PeakBlocks, beamBlocks(beams))
	return out, nil
}

// beamBlocks counts the distinct pool blocks the beams hold.
func beamBlocks(beams []*beam) int {
	seen := map[int32]bool{}
	for _, b := range beams {
		for _, blk := range b.seq.Table() {
			seen[blk] = true
		}
	}
	return len(seen)
}

// free releases the beams' blocks and the prefix-tree path.
func (s *beamSearch) free() {
	e := s.e
	e.kvmu.Lock()
	defer e.kvmu.Unlock()
	for _, b := range s.live {
		b.seq.Free()
	}
	s.live = nil
	if s.locked {
		e.tree.Unlock(s.lockAt)
		s.locked = false
	}
}

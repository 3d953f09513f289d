package engine

import (
	"fmt"

	"chat/engine/speculative"
)

// Speculative decoding inside the engine loop. While it is on, the target's
// cache holds every id of the reply but the last (g.pending): each round
// feeds that id in front of the drafter's guesses, so ONE forward over n+1
// rows gives the distributions of all n guesses and of the token after
// them. Rejected guesses are dropped with Truncate. A round that would
// cross the window, or gets no guesses, is a plain step, and the window
// rule (window.go) applies unchanged; greedy output is therefore plain
// greedy's, token for token.

// SetSpeculation sets how the replies started from now on decode: plainly
// (Method Off, the default) or draft-then-verify. A draft model must have
// the target's tokenizer. The running reply keeps its setting. On error the
// setting is unchanged.
func (e *Engine) SetSpeculation(c speculative.Config) error {
	if e.err != nil {
		return e.err
	}
	d, err := speculative.New(c, e.model)
	if err != nil {
		return err
	}
	e.mu.Lock()
	e.spec, e.drafter = c, d
	e.mu.Unlock()
	return nil
}

// Speculation is the setting of the next reply.
func (e *Engine) Speculation() speculative.Config {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.spec
}

// specRun is one reply's speculation state.
type specRun struct {
	d     speculative.Drafter
	k     int
	adapt *adapt      // nil: k guesses every round (speculative.Config.Adapt off)
	rows  [][]float64 // target distributions of one round, [k+1][vocab]
	in    []int       // the pending id and the guesses, fed together
}

// startSpec is called by begin with the setting Start took.
func (g *gen) startSpec() {
	r := g.r
	if r.drafter == nil {
		return
	}
	k := r.spec.Guesses()
	rows := make([][]float64, k+1)
	for i := range rows {
		rows[i] = make([]float64, g.e.vocab)
	}
	g.spec = &specRun{d: r.drafter, k: k, rows: rows, in: make([]int, 0, k+1)}
	if r.spec.Adapt {
		g.spec.adapt = newAdapt()
	}
	g.stats.Spec.Method, g.stats.Spec.K = r.spec.Method, k
	r.drafter.Reset(r.req.Prompt, r.req.Sampler.Seed)
}

// round produces the tokens of one speculative round.
func (g *gen) round() {
	e := g.e
	if !g.prepare() || !g.pause(false) {
		return
	}
	g.observing()
	defer g.publish()
	s := g.spec
	k := s.k
	if g.smp.Stateful() {
		// Mirostat's mu and XTC's draw follow each token: verifying
		// several at once from one state would not sample them alike.
		g.plainStep()
		return
	}
	if a := s.adapt; a != nil {
		if !a.plainNext() {
			k = a.choose(s.k)
		}
		if a.plainNext() { // measuring plain steps, or speculation stepped aside
			did, t0 := g.pending, e.now()
			g.plainStep()
			if did {
				a.plainTook(e.now().Sub(t0))
			}
			g.stats.Spec.Note = a.note(s.k)
			return
		}
	}
	g.stats.Spec.KNow = k
	pend := 0
	if g.pending {
		pend = 1
	}
	n := min(k, g.r.req.MaxTokens-g.stats.GenTokens, e.window-g.seq.Len()-pend)
	var guesses []int
	var q [][]float64
	tDraft := e.now()
	if n > 0 {
		var err error
		guesses, q, err = s.d.Propose(g.ctx, n, g.smp.Params())
		if err != nil {
			g.reason, g.err = ReasonError, fmt.Errorf("engine: drafting after token %d: %w", g.stats.GenTokens, err)
			return
		}
		if len(guesses) > n {
			guesses = guesses[:n]
		}
		for _, t := range guesses {
			if t < 0 || t >= e.vocab {
				g.reason, g.err = ReasonError, fmt.Errorf("engine: the drafter guessed id %d, outside the vocabulary", t)
				return
			}
		}
	}
	guesses = guesses[:g.checkGuesses(guesses)]
	if len(q) > len(guesses) {
		q = q[:len(guesses)] // a shorter q is Verify's error to report
	}
	if len(guesses) == 0 {
		g.plainStep()
		return
	}
	n = len(guesses)
	tVerify := e.now()
	draftDur := tVerify.Sub(tDraft)

	// Target distributions: row j follows ctx + guesses[:j]. Without a
	// pending id (right after the prefill) row 0 comes from g.logits.
	rows, L, base := s.rows[:n+1], len(g.ctx), g.seq.Len()
	g.ctx = append(g.ctx, guesses...) // history for the penalties; cut back below
	first := 0
	if !g.pending {
		if !g.maskRow(0) {
			g.ctx = g.ctx[:L]
			return
		}
		if err := g.dist(rows[0], g.logits, g.ctx[:L]); err != nil {
			g.ctx = g.ctx[:L]
			g.reason, g.err = ReasonError, fmt.Errorf("engine: token %d: %w", g.stats.GenTokens+1, err)
			return
		}
		g.captured(g.logits)
		first = 1
		s.in = append(s.in[:0], guesses...)
	} else {
		s.in = append(append(s.in[:0], g.ctx[L-1]), guesses...)
	}
	logits, err := g.forward(s.in, n+1-first)
	for j := first; err == nil && j <= n; j++ {
		if !g.maskRow(j) { // the reply ends (g.reason is set)
			g.ctx = g.ctx[:L]
			g.truncate(base + pend)
			return
		}
		row := logits[(j-first)*e.vocab : (j-first+1)*e.vocab]
		err = g.dist(rows[j], row, g.ctx[:L+j])
		if j == 0 {
			g.captured(row)
		}
	}
	g.ctx = g.ctx[:L]
	if err != nil {
		g.reason, g.err = ReasonError, fmt.Errorf("engine: verifying after token %d: %w", g.stats.GenTokens, err)
		return
	}
	a, next, err := speculative.Verify(guesses, q, rows, g.smp)
	if s.adapt != nil && err == nil {
		s.adapt.roundTook(n, a, draftDur, e.now().Sub(tVerify))
	}
	if err != nil {
		g.reason, g.err = ReasonError, fmt.Errorf("engine: verifying after token %d: %w", g.stats.GenTokens, err)
		return
	}
	st := &g.stats.Spec
	st.Rounds++
	st.TargetPasses++
	st.Proposed += n
	st.Accepted += a
	for i := range n {
		st.PosProposed[i]++
		if i < a {
			st.PosAccepted[i]++
		}
	}

	if a > 0 {
		g.record(rows[0], guesses[0], false)
	} else {
		g.record(rows[0], next, false)
	}
	m := 0 // ids taken; the reply may end on any of them
	for i := 0; i <= a; i++ {
		id := next
		if i < a {
			id = guesses[i]
		}
		m++
		g.mark(id, rows[i][id], i < a)
		if !g.put(id) {
			break
		}
	}
	g.roundRecord(guesses, g.ctx[len(g.ctx)-m:], a)
	// Keep the pending id and the kept guesses before the last id taken.
	g.truncate(base + pend + m - 1)
	g.pending = true
	g.kvStats()
}

// plainStep is step for a reply that speculates: the pending id is fed by
// the window rule, one id is sampled and left pending.
func (g *gen) plainStep() {
	if g.pending {
		if !g.feedNext() {
			return
		}
		g.pending = false
		g.stats.Spec.TargetPasses++
	}
	if !g.maskNow() {
		return
	}
	id, ok := g.sample()
	if !ok {
		return
	}
	g.put(id)
	g.pending = true
	g.kvStats()
}

// dist writes the sampler's distribution for logits into row.
func (g *gen) dist(row []float64, logits []float32, history []int) error {
	d, err := g.smp.Dist(logits, history)
	if err != nil {
		return err
	}
	copy(row, d)
	return nil
}

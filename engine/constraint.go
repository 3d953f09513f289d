package engine

import (
	"fmt"
	"time"

	"chat/engine/constrain"
)

// Constrained decoding (Request.Constraint). Before each sampled token the
// mask of the constraint's state goes first into the sampler chain; each
// id taken advances the state. Under speculation every drafted guess is
// checked against the state the guesses before it lead to: the target rows
// are masked by those states, and the first guess the constraint refuses
// is the last one verified (its masked probability is 0, so Verify always
// rejects it and resamples from the masked residual). The output therefore
// keeps exactly the constrained target distribution. The KV cache and the
// prefix cache never see the constraint. A Constraint's matcher serves one
// reply at a time: concurrent replies each need their own (constrain.Build
// over a shared Vocab).

// consRun is one reply's constraint state.
type consRun struct {
	c      constrain.Constraint
	s      constrain.State
	states []constrain.State // speculation: the state before each guess
	spent  time.Duration     // time in Mask
	masks  int
}

// beginConstraint starts the reply's constraint (begin calls it).
func (g *gen) beginConstraint() {
	g.smp.SetMask(nil)
	if c := g.r.req.Constraint; c != nil {
		g.cons = &consRun{c: c, s: c.Begin(g.r.req.StopIDs)}
	}
}

// mask puts the mask of state s, with left ids of budget, into the sampler. It reports false, with
// g.reason set, when the reply must end: the output is complete and no id
// may follow (not even an end id, when the request has none), or nothing
// can continue it.
func (g *gen) mask(s constrain.State, left int) bool {
	cr := g.cons
	if cr == nil {
		return true
	}
	t0 := time.Now()
	m, err := cr.c.Mask(s, left)
	cr.spent += time.Since(t0)
	cr.masks++
	g.stats.MaskAllowed, g.stats.MaskTime = m.Count, cr.spent/time.Duration(cr.masks)
	switch {
	case err != nil:
		g.reason, g.err = ReasonError, fmt.Errorf("engine: constraint %s: %w", cr.c, err)
		return false
	case m.Count == 0 && cr.c.Accepting(s):
		g.reason = ReasonEOT // complete, and the request has no end id to force
		return false
	case m.Count == 0:
		g.reason, g.err = ReasonError, fmt.Errorf("engine: constraint %s: no token of this vocabulary can continue the output", cr.c)
		return false
	}
	g.smp.SetMask(m.Bits)
	return true
}

// maskNow masks the next token by the constraint's current state.
func (g *gen) maskNow() bool {
	if g.cons == nil {
		return true
	}
	return g.mask(g.cons.s, g.r.req.MaxTokens-g.stats.GenTokens)
}

// advance moves the constraint past an id taken (put calls it).
func (g *gen) advance(id int) bool {
	cr := g.cons
	if cr == nil {
		return true
	}
	next, ok := cr.c.Next(cr.s, id)
	if !ok {
		g.reason, g.err = ReasonError, fmt.Errorf("engine: constraint %s: id %d was chosen but is not allowed", cr.c, id)
		return false
	}
	cr.s = next
	return true
}

// checkGuesses walks the constraint through a round's guesses and returns
// how many to verify: up to and including the first guess it refuses (the
// rest can never be accepted). cr.states[j] is the state before guess j.
func (g *gen) checkGuesses(guesses []int) int {
	cr := g.cons
	if cr == nil {
		return len(guesses)
	}
	cr.states = append(cr.states[:0], cr.s)
	s := cr.s
	for j, t := range guesses {
		next, ok := cr.c.Next(s, t)
		if !ok {
			return j + 1
		}
		s = next
		cr.states = append(cr.states, s)
	}
	return len(guesses)
}

// maskRow masks the target row j of a round (after guesses[:j]); a row past
// a refused guess is never read by Verify and is left unmasked.
func (g *gen) maskRow(j int) bool {
	cr := g.cons
	if cr == nil {
		return true
	}
	if j >= len(cr.states) {
		g.smp.SetMask(nil)
		return true
	}
	return g.mask(cr.states[j], g.r.req.MaxTokens-g.stats.GenTokens-j)
}

package engine

import "sync/atomic"

// Step mode (Request.Step, Reply.SetStepping, Reply.Step): a reply that
// steps waits before each token — or each speculative round — until Step
// lets one through. Waiting touches nothing the sampler uses: the same
// knobs apply, the RNG draws the same numbers in the same order, so the ids
// are those of free running with the same seed. While a plain step waits
// with ObserveSteps, the reply publishes a preview of the next token's
// distribution (the sampler's Dist, which draws nothing), made again when
// the knobs change, so a hot key reshapes the bars before the token is
// drawn. Stop and leaving step mode end the wait.

// stepper is the reply side of step mode.
type stepper struct {
	stepping atomic.Bool
	permits  chan struct{} // one per Step
	wake     chan struct{} // the knobs, what is observed or step mode changed
}

func (s *stepper) init(on bool) {
	s.stepping.Store(on)
	s.permits = make(chan struct{}, 64)
	s.wake = make(chan struct{}, 1)
}

// SetStepping turns step mode on or off for the reply. Turning it on drops
// the Steps asked for before.
func (r *Reply) SetStepping(on bool) {
	if on && !r.stepping.Load() {
		for len(r.permits) > 0 {
			<-r.permits
		}
	}
	r.stepping.Store(on)
	r.wakeUp()
}

// Stepping reports whether the reply is in step mode.
func (r *Reply) Stepping() bool { return r.stepping.Load() }

// Step lets a stepping reply make one token (or one speculative round).
func (r *Reply) Step() {
	select {
	case r.permits <- struct{}{}:
	default:
	}
}

func (r *Reply) wakeUp() {
	select {
	case r.wake <- struct{}{}:
	default:
	}
}

// pause waits in step mode for Step. With preview, the next token's logits
// (g.logits) and mask are ready, and its distribution is published while
// waiting. It reports false, with g.reason set, if the reply was stopped.
func (g *gen) pause(preview bool) bool {
	r := g.r
	for r.stepping.Load() {
		if preview && Observe(r.observe.Load())&ObserveSteps != 0 {
			g.preview()
		}
		select {
		case <-r.permits:
			return true
		case <-r.wake:
			g.takeParams()
		case <-r.stopCh:
			g.reason = ReasonStopped
			return false
		}
	}
	return true
}

// preview publishes the distribution the next Sample will draw from.
func (g *gen) preview() {
	o := &g.obs
	o.full = true
	g.smp.SetTrace(&o.trace)
	d, err := g.smp.Dist(g.logits, g.ctx)
	g.captured(g.logits)
	if err == nil {
		g.record(d, -1, true)
		g.publish()
	}
	o.full = false
}

package engine

import (
	"fmt"
	"math"
	"time"
)

// Speculation that pays or steps aside (speculative.Config.Adapt). A round
// costs the drafter's guesses and one target pass over them; it yields the
// kept guesses plus one token. Whether that beats plain decoding depends on
// the drafter's acceptance and cost, which this file measures as the reply
// runs:
//
//	α      the acceptance rate of a guess (moving average)
//	t1     seconds per plain step: a one-row target pass and a draw
//	d      seconds per drafted guess
//	v      seconds per extra row of a verification pass (beyond t1)
//
// With k guesses a round yields E(k) = (1-α^(k+1))/(1-α) tokens in
// T(k) = k·d + t1 + k·v seconds (Leviathan et al. 2023, §3.3). Each round
// takes the k in 1..K with the best E(k)/T(k); when even that is below what
// plain decoding gives (1/t1, with 5% to spare) after a few rounds,
// speculation stops for the rest of the reply and the stats say why. Plain
// steps measure t1: two before the first round, two more every 64 rounds.
// The choice of k changes which tokens are proposed, never the law of the
// output (greedy output stays plain greedy's).

// adapt is one reply's measurements.
type adapt struct {
	alpha, t1, d, v float64 // see above; 0 until measured
	rounds          int     // rounds since the last probe
	probe           int     // plain steps left to take for t1
	total           int     // rounds in all
	off             bool
}

const (
	adaptProbe     = 2    // plain steps per measurement of t1
	adaptReprobe   = 64   // rounds between measurements
	adaptWarm      = 8    // rounds before giving up on speculation
	adaptMargin    = 0.95 // speculation must beat 95% of plain decoding's rate
	adaptSmoothing = 0.2  // weight of a new observation in the moving averages
)

func newAdapt() *adapt { return &adapt{probe: adaptProbe} }

func ewma(old, x float64) float64 {
	if old == 0 {
		return x
	}
	return old + adaptSmoothing*(x-old)
}

// plainNext reports whether the next step should be a plain one (to
// measure t1, or because speculation is off).
func (a *adapt) plainNext() bool { return a.off || a.probe > 0 }

// plainTook records a plain step of dt.
func (a *adapt) plainTook(dt time.Duration) {
	a.t1 = ewma(a.t1, dt.Seconds())
	if a.probe > 0 {
		a.probe--
	}
}

// roundTook records a round: k guesses drafted in draft, verified in
// verify, of which kept were accepted.
func (a *adapt) roundTook(k, kept int, draft, verify time.Duration) {
	a.total++
	a.rounds++
	a.alpha = ewma(a.alpha, float64(kept)/float64(k))
	a.d = ewma(a.d, draft.Seconds()/float64(k))
	if a.t1 > 0 {
		a.v = ewma(a.v, max(0, verify.Seconds()-a.t1)/float64(k))
	}
	if a.rounds >= adaptReprobe {
		a.rounds, a.probe = 0, adaptProbe
	}
}

// choose returns the guesses for the next round (at most kmax), and turns
// speculation off when no k pays.
func (a *adapt) choose(kmax int) int {
	if a.t1 == 0 {
		return kmax
	}
	best, rate := 1, 0.0
	for k := 1; k <= kmax; k++ {
		if r := a.yield(k) / a.cost(k); r > rate {
			best, rate = k, r
		}
	}
	if a.total >= adaptWarm && rate < adaptMargin/a.t1 {
		a.off = true
	}
	return best
}

// yield is E(k), the tokens a round of k guesses is expected to produce.
func (a *adapt) yield(k int) float64 {
	if a.alpha >= 1 {
		return float64(k + 1)
	}
	return (1 - math.Pow(a.alpha, float64(k+1))) / (1 - a.alpha)
}

// cost is T(k), a round's expected seconds.
func (a *adapt) cost(k int) float64 { return float64(k)*(a.d+a.v) + a.t1 }

// speedup is the best round's rate over plain decoding's, for the panel.
func (a *adapt) speedup(kmax int) float64 {
	if a.t1 == 0 {
		return 0
	}
	best := 0.0
	for k := 1; k <= kmax; k++ {
		best = max(best, a.yield(k)/a.cost(k)*a.t1)
	}
	return best
}

// note says what the adaptation decided, for the stats ("" while running
// as set).
func (a *adapt) note(kmax int) string {
	if a.off {
		return fmt.Sprintf("off: drafts lost time (%.2f× plain)", a.speedup(kmax))
	}
	return ""
}

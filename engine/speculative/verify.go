package speculative

import "fmt"

// Source is the randomness Verify draws from; *sampler.Sampler is one.
type Source interface {
	Float64() float64        // uniform in [0,1)
	Draw(dist []float64) int // an id drawn from non-negative weights, -1 if none is > 0
}

// Verify is the acceptance rule of one round, and the only place it lives.
// guesses are the drafted ids; q[i] is the distribution guess i was drawn
// from (q nil or q[i] nil: one-hot at the guess); p[i] is the target's
// distribution at guess i's position, and p[len(guesses)] the one after the
// last guess. Walking the guesses in order, guess i is kept if
// u < min(1, p(t)/max(q(t), 1e-12)). At the first rejection the next token
// is drawn from normalize(max(0, p−q)) — or from p when that is all zero —
// and, if every guess is kept, from the last row (the bonus). The output is
// then distributed exactly as sampling from p token by token; with one-hot
// p and q (greedy) a guess is kept iff it is p's argmax.
//
// The rejected row of p is overwritten with the residual. It returns how
// many guesses were kept and the next token.
func Verify(guesses []int, q, p [][]float64, src Source) (accepted, next int, err error) {
	n := len(guesses)
	if len(p) != n+1 {
		return 0, -1, fmt.Errorf("speculative: %d target rows for %d guesses; want %d", len(p), n, n+1)
	}
	if q != nil && len(q) != n {
		return 0, -1, fmt.Errorf("speculative: %d draft rows for %d guesses", len(q), n)
	}
	for i, t := range guesses {
		pi := p[i]
		if t < 0 || t >= len(pi) {
			return 0, -1, fmt.Errorf("speculative: guess %d is id %d, outside 0..%d", i, t, len(pi)-1)
		}
		var qi []float64
		if q != nil {
			qi = q[i]
		}
		if qi != nil && len(qi) != len(pi) {
			return 0, -1, fmt.Errorf("speculative: draft row %d has %d ids, target row %d", i, len(qi), len(pi))
		}
		qt := 1.0 // one-hot at the guess
		if qi != nil {
			qt = qi[t]
		}
		if src.Float64() < min(1, pi[t]/max(qt, 1e-12)) {
			continue
		}
		// Rejected: the residual max(0, p−q) holds exactly the mass p has
		// that the accepted draws did not already cover.
		sum := 0.0
		for j, v := range pi {
			sum += max(0, v-qAt(qi, t, j))
		}
		if sum > 0 {
			for j, v := range pi {
				pi[j] = max(0, v-qAt(qi, t, j))
			}
		}
		next, err = draw(src, pi, i)
		return i, next, err
	}
	next, err = draw(src, p[n], n)
	return n, next, err
}

// qAt is q[j], with a nil row meaning one-hot at t.
func qAt(q []float64, t, j int) float64 {
	if q == nil {
		if j == t {
			return 1
		}
		return 0
	}
	return q[j]
}

func draw(src Source, dist []float64, row int) (int, error) {
	if id := src.Draw(dist); id >= 0 {
		return id, nil
	}
	return -1, fmt.Errorf("speculative: target row %d has no probability mass", row)
}

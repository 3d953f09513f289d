package sampler

// normalize divides the candidates' exps by their sum in place, giving the
// float64 softmax, and writes them to probs.
func (s *Sampler) normalize() {
	e, z := s.exps[:s.n], s.sum
	for i, v := range e {
		e[i] = v / z
		s.probs[s.ids[i]] = e[i]
	}
	s.live = s.n
}

// Draw takes ONE uniform u in [0,1) from the sampler's RNG and returns the
// first id whose cumulative weight exceeds u*total (inverse CDF) over dist,
// a distribution that need not be normalised. Weights that are not > 0
// (zero, negative, NaN) are never returned. It returns -1, drawing nothing,
// when no weight is > 0. The id is an index of dist (Sample draws over its
// compact candidate list and maps the index back).
func (s *Sampler) Draw(dist []float64) int {
	total := 0.0
	for _, v := range dist {
		if v > 0 {
			total += v
		}
	}
	if !(total > 0) || total > maxTotal {
		return -1
	}
	u := s.rng.Float64() * total
	cum, lastNonZero := 0.0, 0
	for i, v := range dist {
		if !(v > 0) {
			continue
		}
		cum += v
		lastNonZero = i
		if cum > u {
			return i
		}
	}
	// Only reachable when u*total rounds up to total.
	return lastNonZero
}

// maxTotal rejects an infinite total, for which the cumulative walk means
// nothing.
const maxTotal = 1.7976931348623157e308

// Float64 is one uniform draw in [0,1) from the sampler's RNG (the
// speculative acceptance test shares the RNG with the draws).
func (s *Sampler) Float64() float64 { return s.rng.Float64() }

package sampler

// draw normalises e into the float64 softmax (s.probs, which e aliases),
// takes ONE uniform u in [0,1) and returns the first id whose cumulative
// probability exceeds u*total (inverse CDF). An id of probability 0 is never
// returned: the cumulative sum does not grow there.
func (s *Sampler) draw(e []float64) int {
	z := 0.0
	for _, v := range e {
		z += v
	}
	total := 0.0
	for i, v := range e {
		e[i] = v / z
		total += e[i]
	}
	u := s.rng.Float64() * total
	cum, lastNonZero := 0.0, 0
	for i, v := range e {
		if v == 0 {
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

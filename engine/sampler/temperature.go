package sampler

import "math"

// minTemperature is the course's floor: T = 0 divides by 1e-6 and still
// samples (it is not greedy).
const minTemperature = 1e-6

// divisor is what the temperature divides the logits by: max(T, 1e-6), or
// 1 when the stage is off (T == 1: no division).
func (s *Sampler) divisor() float64 {
	if !s.p.Runs(StageTemperature) {
		return 1
	}
	t := s.p.Temperature
	if !(t > minTemperature) { // also catches NaN
		t = minTemperature
	}
	return t
}

// temperature divides the logits by divisor() unless T == 1 and sets
// s.max to the largest. It reports whether it divided.
func (s *Sampler) temperature() bool {
	t := s.divisor()
	w := s.work[:s.n]
	if t == 1 {
		s.max = w[argmaxOr0(w)]
		return false
	}
	max := math.Inf(-1)
	for i, v := range w {
		w[i] = clean(v / t)
		if w[i] > max {
			max = w[i]
		}
	}
	s.max = max
	return true
}

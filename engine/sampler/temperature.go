package sampler

// minTemperature is the course's floor: T = 0 divides by 1e-6 and still
// samples (it is not greedy).
const minTemperature = 1e-6

// temperature divides the logits by max(T, 1e-6) unless T == 1. It
// reports whether it did.
func (s *Sampler) temperature() bool {
	t := s.p.Temperature
	if t == 1 {
		return false
	}
	if !(t > minTemperature) { // also catches NaN
		t = minTemperature
	}
	for i, v := range s.work {
		s.work[i] = clean(v / t)
	}
	return true
}

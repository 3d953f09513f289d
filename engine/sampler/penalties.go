package sampler

// DefaultPenaltyWindow is the number of recent ids the penalties look at when
// Params.PenaltyWindow is 0.
const DefaultPenaltyWindow = 64

// penalize applies, to every id seen in the last PenaltyWindow ids of history
// (llama.cpp's order): the repeat penalty once per id (positive logits are
// divided by it, the others multiplied), then minus FrequencyPenalty times
// its count, then minus PresencePenalty. It reports whether any was on.
func (s *Sampler) penalize(history []int) bool {
	if !s.p.Runs(StagePenalties) {
		return false
	}
	rep, freq, pres := s.p.RepeatPenalty, s.p.FrequencyPenalty, s.p.PresencePenalty
	useRep := rep != 0 && rep != 1
	n := s.p.PenaltyWindow
	if n <= 0 {
		n = DefaultPenaltyWindow
	}
	if len(history) > n {
		history = history[len(history)-n:]
	}
	for _, id := range history {
		if id >= 0 && id < s.vocab {
			s.counts[id]++
		}
	}
	w := s.work
	for _, id := range history {
		if id < 0 || id >= s.vocab || s.counts[id] == 0 {
			continue // out of range, or already applied
		}
		c := float64(s.counts[id])
		s.counts[id] = 0 // leaves counts all zero for the next call
		v := w[id]
		if useRep {
			if v > 0 {
				v /= rep
			} else {
				v *= rep
			}
		}
		w[id] = clean(v - c*freq - pres)
	}
	return true
}

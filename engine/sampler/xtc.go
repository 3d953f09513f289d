package sampler

// xtc is "exclude top choices" (the webui's XTC, llama.cpp's --xtc-*): with
// chance XTCProbability per token, every id whose probability is at least
// XTCThreshold is removed except the least likely of them, so the most
// obvious choices give way to the plausible ones below. It acts only when
// two or more ids reach the threshold. Off unless XTCProbability > 0 and
// XTCThreshold <= 0.5 (above it at most one id can reach it).
//
// Whether it acts this token is one uniform draw from a PCG of its own,
// seeded with the sampler's seed: the main draw's sequence is the same with
// XTC on or off, and Dist sees the draw Sample will use (xtcCoin).
//
// It reports whether it acted.
func (s *Sampler) xtc() bool {
	if !s.p.Runs(StageXTC) {
		return false
	}
	e, z := s.exps[:s.n], s.sum
	if len(e) < 2 || s.xtcCoin() > s.p.XTCProbability {
		return false
	}
	// The least likely id at or above the threshold (the last of them in
	// a descending order whose ties go by id).
	th := s.p.XTCThreshold
	keep, above := -1, 0
	for i, v := range e {
		if v/z >= th {
			above++
			if keep < 0 || v <= e[keep] {
				keep = i
			}
		}
	}
	if above < 2 {
		return true
	}
	for i, v := range e {
		if v/z >= th && i != keep {
			e[i] = 0
		}
	}
	s.compact()
	return true
}

// xtcCoin is this token's XTC draw: taken once, then the same until Sample
// uses it up.
func (s *Sampler) xtcCoin() float64 {
	if !s.coinSet {
		s.coin, s.coinSet = s.xtcRNG.Float64(), true
	}
	return s.coin
}

// XTCOn reports whether XTC can cut: a chance above 0 and a threshold two
// ids can both reach.
func (p *Params) XTCOn() bool { return p.XTCProbability > 0 && p.XTCThreshold <= 0.5 }

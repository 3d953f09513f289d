package sampler

import "math"

// minP removes ids whose probability is < m times the largest probability,
// computed over the logits that survived the earlier filters (§7.1). Off
// unless 0 < m < 1.
//
// prob/maxprob is exp(logit - max) over its largest value (1 unless
// typical dropped the max), so the test needs no normalisation. It reports
// whether it was on.
func (s *Sampler) minP() bool {
	if !s.p.Runs(StageMinP) {
		return false
	}
	m := s.p.MinP
	e, top, cut := s.exps[:s.n], 0.0, false
	for _, v := range e {
		top = math.Max(top, v)
	}
	for i, v := range e {
		if v < m*top {
			e[i], cut = 0, true
		}
	}
	if cut {
		s.compact()
	}
	return true
}

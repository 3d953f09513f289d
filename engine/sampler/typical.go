package sampler

import "math"

// typical is locally typical sampling (Meister et al. 2022; llama.cpp's
// --typical, ollama's typical_p): with H the entropy of the current
// distribution, the ids are ordered by how far their surprise −log p is
// from H, nearest first (ties by id), and kept up to and including the one
// where their cumulative probability first exceeds p. Off unless 0 < p < 1.
// That is keepNearest with minus that distance as the key.
//
// It reports whether it was on.
func (s *Sampler) typical() bool {
	if !s.p.Runs(StageTypical) {
		return false
	}
	p := s.p.TypicalP
	// s.heap is free scratch here: each id's surprise, then minus its
	// distance from the entropy (0 - key is that distance exactly). e is
	// exp(l − max), so −log(e/z) is max − l + log z and needs no logarithm
	// per id.
	w, e, z, top := s.work[:s.n], s.exps[:s.n], s.sum, s.max
	key, logZ, h := s.heap[:len(e)], math.Log(z), 0.0
	for i, v := range e {
		key[i] = top - w[i] + logZ
		h += v / z * key[i]
	}
	for i := range key {
		key[i] = -math.Abs(key[i] - h)
	}
	s.keepNearest(key, 0, p)
	return true
}

package sampler

import (
	"math"
	"slices"
)

// typical is locally typical sampling (Meister et al. 2022; llama.cpp's
// --typical, ollama's typical_p): with H the entropy of the current
// distribution, the ids are ordered by how far their surprise −log p is
// from H, nearest first (ties by id), and kept up to and including the one
// where their cumulative probability first exceeds p. Off unless 0 < p < 1.
//
// As in topP, the whole vocabulary is not sorted: the ids go in buckets of
// width 1/bucketsPerNat by that distance, and only the bucket where the
// mass crosses p is sorted.
//
// It reports whether it was on.
func (s *Sampler) typical() bool {
	p := s.p.TypicalP
	if !(p > 0 && p < 1) {
		return false
	}
	// s.heap is free scratch here: each id's surprise, then its distance
	// from the entropy. e is exp(l − max), so −log(e/z) is max − l + log z
	// and needs no logarithm per id.
	w, e, z, top := s.work[:s.n], s.exps[:s.n], s.sum, s.max
	dist, logZ, h := s.heap[:len(e)], math.Log(z), 0.0
	for i, v := range e {
		dist[i] = top - w[i] + logZ
		h += v / z * dist[i]
	}
	mass := &s.mass
	clear(mass[:])
	for i, v := range e {
		dist[i] = math.Abs(dist[i] - h)
		mass[logitBucket(dist[i])] += v / z
	}

	cum := 0.0
	cut := -1 // the last bucket that keeps any id
	for b := 0; b < len(mass) && cut < 0; b++ {
		if mass[b] == 0 || cum+mass[b] <= p {
			cum += mass[b]
			continue
		}
		ord := s.order[:0]
		for i := range e {
			if logitBucket(dist[i]) == b {
				ord = append(ord, int32(i))
			}
		}
		slices.SortFunc(ord, func(a, b int32) int {
			switch {
			case dist[a] < dist[b]:
				return -1
			case dist[a] > dist[b]:
				return 1
			}
			return int(a - b)
		})
		if cum = walkBucket(ord, e, z, cum, p); cum > p {
			cut = b
		}
	}
	if cut < 0 {
		return true // rounding kept everything
	}
	for i := range e {
		if logitBucket(dist[i]) > cut {
			e[i] = 0
		}
	}
	s.compact()
	return true
}

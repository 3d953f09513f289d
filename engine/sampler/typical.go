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
// e holds exp(logit − max) for the current logits (0 for removed ids);
// typical zeroes the ids it removes, in e and in s.work. It reports whether
// it was on.
func (s *Sampler) typical(e []float64) bool {
	p := s.p.TypicalP
	if !(p > 0 && p < 1) {
		return false
	}
	z := 0.0
	for _, v := range e {
		z += v
	}
	h := 0.0
	ord := s.order[:0]
	for i, v := range e {
		if v > 0 {
			q := v / z
			h -= q * math.Log(q)
			ord = append(ord, int32(i))
		}
	}
	// s.heap is free scratch here: each id's distance from typical.
	dist := s.heap[:len(e)]
	for _, id := range ord {
		dist[id] = math.Abs(-math.Log(e[id]/z) - h)
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
	cum := 0.0
	for i, id := range ord {
		cum += e[id] / z
		if cum > p {
			for _, out := range ord[i+1:] {
				e[out], s.work[out] = 0, math.Inf(-1)
			}
			break
		}
	}
	return true
}

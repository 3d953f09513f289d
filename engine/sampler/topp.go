package sampler

import (
	"math"
	"slices"
)

// topP is nucleus filtering as the course does it (§7.1): sort descending,
// softmax, cumulative sum; an id is removed when the cumulative probability
// BEFORE it is > p. The first id is always kept and an id landing exactly on
// p is kept. Tied logits are ordered by id (a stable sort). Off unless
// 0 < p < 1.
//
// e holds exp(logit - max) for the current logits (0 for removed ids); topP
// zeroes the ids it removes, in e and in s.work.
func (s *Sampler) topP(e []float64) {
	p := s.p.TopP
	if !(p > 0 && p < 1) {
		return
	}
	w := s.work
	z := 0.0
	for _, v := range e {
		z += v
	}

	// Only a prefix of the sorted order can survive, so the ids below a mass
	// threshold need no sorting: bucket the ids by power of two of e (e is in
	// (0, 1]), find the fewest top buckets whose mass already exceeds p, and
	// sort only those. Every id in a lower bucket sorts after all of them, so
	// the mass before it is > p and it is removed.
	var mass [buckets]float64
	for _, v := range e {
		if v > 0 {
			mass[bucket(v)] += v
		}
	}
	last, acc := buckets-1, 0.0
	for b := 0; b < buckets-1; b++ {
		acc += mass[b]
		// The margin covers summing in a different order than the sorted
		// cumulative sum below.
		if acc/z > p+1e-9 {
			last = b
			break
		}
	}

	ord := s.order[:0]
	for i, v := range e {
		if v > 0 && bucket(v) <= last {
			ord = append(ord, int32(i))
		}
	}
	slices.SortFunc(ord, func(a, b int32) int {
		switch {
		case w[a] > w[b]:
			return -1
		case w[a] < w[b]:
			return 1
		}
		return int(a - b)
	})

	inNucleus := true
	cum := 0.0
	for _, id := range ord {
		if !inNucleus {
			e[id], w[id] = 0, math.Inf(-1)
			continue
		}
		cum += e[id] / z
		if cum > p {
			inNucleus = false // this id is kept; everything after it goes
		}
	}
	if last < buckets-1 {
		for i, v := range e {
			if v > 0 && bucket(v) > last {
				e[i], w[i] = 0, math.Inf(-1)
			}
		}
	}
}

const buckets = 64

// bucket is floor(-log2(v)) for v in (0, 1], capped at buckets-1.
func bucket(v float64) int {
	_, exp := math.Frexp(v) // v = f * 2^exp, f in [0.5, 1)
	b := 1 - exp
	if b >= buckets {
		b = buckets - 1
	}
	return b
}

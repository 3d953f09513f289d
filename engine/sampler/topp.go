package sampler

import "slices"

// topP is nucleus filtering as the course does it (§7.1): sort descending,
// softmax, cumulative sum; an id is removed when the cumulative probability
// BEFORE it is > p. The first id is always kept and an id landing exactly on
// p is kept. Tied logits are ordered by id (a stable sort). Off unless
// 0 < p < 1. That is keepNearest with the logits as the key.
// It reports whether it was on.
func (s *Sampler) topP() bool {
	if !s.p.Runs(StageTopP) {
		return false
	}
	s.keepNearest(s.work[:s.n], s.max, s.p.TopP)
	return true
}

// keepNearest keeps the candidates taken in decreasing order of key (ties
// by position, which is id order) up to and including the one where their
// cumulative probability first exceeds p; top >= every key. Top-p and
// typical are this with their own key.
//
// Sorting the whole vocabulary every token would cost more than a small
// model's forward pass, so the candidates are first put in buckets of width
// 1/bucketsPerNat by top - key (same order as the sort). Buckets before the
// one where the mass crosses p are kept whole and buckets after it removed
// whole, without sorting; only the crossing bucket is sorted and walked id
// by id. That is the sorted cumulative sum, computed per bucket.
func (s *Sampler) keepNearest(key []float64, top, p float64) {
	e, z, bk := s.exps[:s.n], s.sum, s.bucket[:s.n]
	// A bucket's mass is the sum of v/z over its ids in id order; only the
	// buckets up to the crossing one matter, and on a large vocabulary
	// they hold a small part of it. The sums of v alone, over z, place that
	// bucket to within rounding (n·2⁻⁵², under 1e-10 for a million ids), so
	// the masses are summed over the ids of the buckets up to where that
	// estimate has passed p by 1e-9 (sel); should the walk below go past
	// them, it takes every id, which gives the same masses.
	var rough [numBuckets]float64
	for i, v := range e {
		b := keyBucket(top - key[i])
		bk[i] = uint16(b)
		rough[b] += v
	}
	upto, acc := numBuckets-1, 0.0
	for b, r := range rough {
		if acc += r / z; acc > p+1e-9 {
			upto = b
			break
		}
	}
	sel := s.bucketMass(upto)

	// Find the crossing bucket: the first whose sorted walk goes over p.
	// base is the probability of every bucket before it.
	mass := &s.mass
	base := 0.0
	cut := -1 // the last bucket that keeps any id
	for b := 0; b < len(mass) && cut < 0; b++ {
		if b > upto {
			upto = numBuckets - 1
			sel = s.bucketMass(upto)
		}
		if mass[b] == 0 || base+mass[b] <= p {
			base += mass[b]
			continue
		}
		ord := s.order[:0]
		for _, i := range sel {
			if int(bk[i]) == b {
				ord = append(ord, i)
			}
		}
		slices.SortFunc(ord, func(a, b int32) int {
			switch {
			case key[a] > key[b]:
				return -1
			case key[a] < key[b]:
				return 1
			}
			return int(a - b)
		})
		if base = walkBucket(ord, e, z, base, p); base > p {
			cut = b
		}
	}
	if cut < 0 {
		return // rounding kept everything
	}
	for _, i := range sel {
		if int(bk[i]) > cut {
			e[i] = 0
		}
	}
	s.keep(sel)
}

// bucketMass sets s.mass to the buckets' masses up to last (v/z summed in
// id order) and returns the positions of their candidates, in s.sel.
func (s *Sampler) bucketMass(last int) []int32 {
	e, z, bk, sel := s.exps[:s.n], s.sum, s.bucket[:s.n], s.sel[:s.n]
	// Written without a branch on the bucket, which is random in the id:
	// the compiler turns the if into a conditional move.
	k := 0
	for i, c := range bk {
		sel[k] = int32(i)
		next := k + 1
		if int(c) > last {
			next = k
		}
		k = next
	}
	clear(s.mass[:])
	for _, i := range sel[:k] {
		s.mass[bk[i]] += e[i] / z
	}
	return sel[:k]
}

const (
	bucketsPerNat = 16
	numBuckets    = 64 * bucketsPerNat // keys more than 64 nats below the top share the last
)

// keyBucket maps d = top - key >= 0 to its bucket; larger keys get lower
// buckets, equal keys the same one.
func keyBucket(d float64) int {
	b := d * bucketsPerNat
	if !(b < numBuckets-1) {
		return numBuckets - 1
	}
	return int(b)
}

// walkBucket walks the crossing bucket's ids in their sorted order (ord),
// adding each one's probability e[id]/z to cum, and zeroes every id after
// the one that takes cum over p: that one is kept. It returns cum, over p
// when the crossing was in this bucket (rounding can leave it at p or
// under: then every id stays).
func walkBucket(ord []int32, e []float64, z, cum, p float64) float64 {
	for i, id := range ord {
		if cum += e[id] / z; cum > p {
			for _, rest := range ord[i+1:] {
				e[rest] = 0
			}
			return cum
		}
	}
	return cum
}

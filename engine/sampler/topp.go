package sampler

import "slices"

// topP is nucleus filtering as the course does it (§7.1): sort descending,
// softmax, cumulative sum; an id is removed when the cumulative probability
// BEFORE it is > p. The first id is always kept and an id landing exactly on
// p is kept. Tied logits are ordered by id (a stable sort). Off unless
// 0 < p < 1.
//
// Sorting the whole vocabulary every token would cost more than a small
// model's forward pass, so the ids are first put in buckets of width
// 1/bucketsPerNat below the max logit (same order as the sort). Buckets above
// the one where the mass crosses p are kept whole and buckets below it
// removed whole, without sorting; only the crossing bucket is sorted and
// walked id by id. That is the sorted cumulative sum, computed per bucket.
// It reports whether it was on.
func (s *Sampler) topP() bool {
	p := s.p.TopP
	if !(p > 0 && p < 1) {
		return false
	}
	w, e, z, max := s.work[:s.n], s.exps[:s.n], s.sum, s.max
	bk := s.bucket[:s.n]
	// A bucket's mass is the sum of v/z over its ids in id order; those
	// divisions are only needed up to the crossing bucket. The sums of v
	// alone, over z, find it to within rounding (1e-11 at most here), so
	// masses are first summed exactly up to where that estimate passes
	// p by 1e-9, and past it only if the walk below gets there.
	var rough [numBuckets]float64
	for i, v := range e {
		b := logitBucket(max - w[i])
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
	mass := &s.mass
	clear(mass[:])
	s.bucketMass(0, upto)

	// Find the crossing bucket: the first whose sorted walk goes over p.
	// base is the probability of every bucket above it.
	base := 0.0
	cut := -1 // the last bucket that keeps any id
	for b := 0; b < len(mass) && cut < 0; b++ {
		if b > upto {
			s.bucketMass(upto+1, numBuckets-1)
			upto = numBuckets - 1
		}
		if mass[b] == 0 || base+mass[b] <= p {
			base += mass[b]
			continue
		}
		ord := s.order[:0]
		for i, c := range bk {
			if int(c) == b {
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
		for _, id := range ord {
			if cut >= 0 {
				e[id] = 0
				continue
			}
			base += e[id] / z
			if base > p {
				cut = b // this id is kept; every later one goes
			}
		}
	}
	if cut < 0 {
		return true // rounding kept everything
	}
	s.compact(cut)
	return true
}

// bucketMass adds v/z to s.mass for the candidates in buckets lo..hi,
// in id order (s.bucket holds their buckets).
func (s *Sampler) bucketMass(lo, hi int) {
	e, z := s.exps[:s.n], s.sum
	for i, c := range s.bucket[:s.n] {
		if b := int(c); b >= lo && b <= hi {
			s.mass[b] += e[i] / z
		}
	}
}

const (
	bucketsPerNat = 16
	numBuckets    = 64 * bucketsPerNat // ids more than 64 nats below the max share the last
)

// logitBucket maps d = max - logit >= 0 to its bucket; larger logits get
// lower buckets, equal logits the same one.
func logitBucket(d float64) int {
	b := d * bucketsPerNat
	if !(b < numBuckets-1) {
		return numBuckets - 1
	}
	return int(b)
}

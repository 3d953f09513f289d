package sampler

// topK keeps the logits >= the k-th largest, so every id tied with the
// k-th value survives (torch.topk threshold, §7.1). Off when k <= 0 or
// k >= vocab; it reports whether it was on.
func (s *Sampler) topK() bool {
	k := s.p.TopK
	if !s.p.Runs(StageTopK) || k >= s.vocab {
		return false
	}
	// Fewer candidates than k (top-n-sigma cut first): all are kept.
	if k < s.n {
		s.keepAtLeast(kthLargest(s.work[:s.n], k, s.heap[:0]))
	}
	return true
}

// kthLargest returns the k-th largest value of w (1-based, duplicates
// counted), using h (cap >= k) as a min-heap of the k largest seen so far.
// O(n log k) and no degenerate case for ties.
func kthLargest(w []float64, k int, h []float64) float64 {
	for _, v := range w {
		if len(h) < k {
			h = append(h, v)
			// sift up
			for i := len(h) - 1; i > 0; {
				p := (i - 1) / 2
				if h[p] <= h[i] {
					break
				}
				h[p], h[i] = h[i], h[p]
				i = p
			}
			continue
		}
		if v <= h[0] {
			continue
		}
		h[0] = v
		// sift down
		for i := 0; ; {
			l, m := 2*i+1, i
			if l < len(h) && h[l] < h[m] {
				m = l
			}
			if r := l + 1; r < len(h) && h[r] < h[m] {
				m = r
			}
			if m == i {
				break
			}
			h[i], h[m] = h[m], h[i]
			i = m
		}
	}
	return h[0]
}

package sampler

import "math"

// topNSigma keeps the logits >= max − n·σ, σ the standard deviation of the
// finite logits (Tang et al. 2024, "Top-nσ: Not All Logits Are You Need";
// llama.cpp's --top-nsigma). Dividing every logit by the temperature
// divides max and σ alike, so it keeps the same ids before or after
// temperature. Off unless n > 0; it reports whether it was on.
func (s *Sampler) topNSigma() bool {
	if !s.p.Runs(StageTopNSigma) {
		return false
	}
	n := s.p.TopNSigma
	w := s.work[:s.n]
	max, sum, count := math.Inf(-1), 0.0, 0
	for _, v := range w {
		if !math.IsInf(v, -1) {
			max = math.Max(max, v)
			sum += v
			count++
		}
	}
	if count < 2 {
		return true
	}
	mean, acc := sum/float64(count), 0.0
	for _, v := range w {
		if !math.IsInf(v, -1) {
			acc += (v - mean) * (v - mean)
		}
	}
	s.keepAtLeast(max - n*math.Sqrt(acc/float64(count)))
	return true
}

package sampler

import (
	"math"
	"slices"
)

// Mirostat (Basu et al. 2021, "Mirostat: a neural text decoding algorithm
// that directly controls perplexity"; llama.cpp's --mirostat, ollama's
// mirostat) keeps the surprise of the drawn ids near a target of tau bits.
// It holds mu, the most surprise it lets through, starting at 2·tau each
// reply (Renew); after each draw mu moves by eta × (tau − the drawn id's
// surprise under the distribution it was drawn from). When on, it replaces
// the truncation stages (top-nσ to XTC):
//
//   - version 2 keeps the ids whose surprise −log2 p is at most mu (at
//     least the likeliest);
//   - version 1 estimates the exponent s of a Zipf law from the 100
//     likeliest ids and keeps the k likeliest, k from s, mu and the
//     vocabulary size (ties at the k-th kept, as top-k here does).

// mirostatM is how many of the likeliest ids version 1 fits its Zipf
// exponent to (llama.cpp's m).
const mirostatM = 100

// mirostat truncates the candidates by mu. It reports whether it was on.
func (s *Sampler) mirostat() bool {
	if !s.p.Runs(StageMirostat) {
		return false
	}
	if !s.muSet {
		s.mu, s.muSet = 2*s.p.MirostatTau, true
	}
	e, z := s.exps[:s.n], s.sum
	if s.p.Mirostat == 2 {
		best := argmax(e)
		lo, hi := surpriseBand(z, s.mu)
		for i, v := range e {
			if i != best && v <= hi && (v < lo || surprise(v, z) > s.mu) {
				e[i] = 0
			}
		}
		s.compact()
		return true
	}

	// Version 1: the likeliest ids, most likely first (ties by id).
	n := len(e)
	m := min(mirostatM, n)
	th := kthLargest(e, m, s.heap[:0])
	top := s.order[:0]
	for i, v := range e {
		if v >= th {
			top = append(top, int32(i))
		}
	}
	slices.SortFunc(top, func(a, b int32) int {
		switch {
		case e[a] > e[b]:
			return -1
		case e[a] < e[b]:
			return 1
		}
		return int(a - b)
	})
	top = top[:m]
	num, den := 0.0, 0.0
	for i := 0; i+1 < len(top); i++ {
		t := math.Log(float64(i+2) / float64(i+1))
		num += t * math.Log(e[top[i]]/e[top[i+1]])
		den += t * t
	}
	k := 1
	if sHat := num / den; den > 0 && sHat > 0 {
		eps := sHat - 1
		x := math.Pow(eps*math.Exp2(s.mu)/(1-math.Pow(float64(s.vocab), -eps)), 1/sHat)
		if x > float64(n) {
			k = n
		} else if x >= 1 {
			k = int(x)
		}
	}
	cut := kthLargest(e, k, s.heap[:0])
	for i, v := range e {
		if v < cut {
			e[i] = 0
		}
	}
	s.compact()
	return true
}

// surprise is −log2 of the probability v/z, in bits.
func surprise(v, z float64) float64 { return -math.Log2(v / z) }

// surpriseBand bounds the weights v (of total z) whose surprise version 2
// must compute: surprise ≤ mu is v ≥ z·2^−mu, so a v above hi is kept and
// one below lo dropped without a Log2 per id; only those within a rounding
// of the bound (all of them when it leaves the normal floats) ask
// surprise, so the ids kept are exactly those it keeps.
func surpriseBand(z, mu float64) (lo, hi float64) {
	th := z * math.Exp2(-mu)
	if !(th > 0x1p-1000) || math.IsInf(th, 1) {
		return math.Inf(-1), math.Inf(1)
	}
	return th * (1 - 1e-9), th * (1 + 1e-9)
}

// mirostatLearn moves mu after id was drawn from probs (normalised).
func (s *Sampler) mirostatLearn(probs []float64, id int) {
	if !s.p.MirostatOn() || id < 0 {
		return
	}
	s.mu -= s.p.MirostatEta * (surprise(probs[id], 1) - s.p.MirostatTau)
}

// MirostatOn reports whether mirostat (1 or 2) replaces the truncation
// samplers.
func (p *Params) MirostatOn() bool { return p.Mirostat == 1 || p.Mirostat == 2 }

// MirostatReplaces reports whether mirostat, when on, runs in place of
// stage (a Stage* index): the truncation stages after it up to the
// softmax, top-n-sigma to xtc, as llama.cpp's mirostat chains leave them
// out. Runs, which gates each stage of the chain, asks it.
func MirostatReplaces(stage int) bool {
	return stage > StageMirostat && stage < StageSoftmax
}

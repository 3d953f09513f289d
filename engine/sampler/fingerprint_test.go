package sampler

import (
	"encoding/binary"
	"hash/fnv"
	"math"
	"math/rand/v2"
	"testing"
)

// fingerprintWant is chainFingerprint's value from the sampler before the
// candidate list (commit 5c61645): every sampled id, Dist bit and trace
// count across the grid must stay exactly the same.
const fingerprintWant uint64 = 0x8f1350de450d12f8

// chainFingerprint hashes what the sampler does over a grid of knobs,
// vocabularies and logit shapes: each call's id, the bits of every
// probability and the trace.
func chainFingerprint() uint64 {
	h := fnv.New64a()
	put := func(v uint64) {
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], v)
		h.Write(b[:])
	}
	rng := rand.New(rand.NewPCG(7, 8))
	shapes := []func(v int) []float32{
		func(v int) []float32 { // random, σ 2
			l := make([]float32, v)
			for i := range l {
				l[i] = float32(rng.NormFloat64() * 2)
			}
			return l
		},
		func(v int) []float32 { // peaked: a few ids far above the rest
			l := make([]float32, v)
			for i := range l {
				l[i] = float32(rng.NormFloat64() * 2)
			}
			for range 3 {
				l[rng.IntN(v)] += 10
			}
			return l
		},
		func(v int) []float32 { // coarse: many ties
			l := make([]float32, v)
			for i := range l {
				l[i] = float32(rng.IntN(6))
			}
			return l
		},
		func(v int) []float32 { // special values
			l := make([]float32, v)
			sp := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), -3e38, 3e38, 0}
			for i := range l {
				l[i] = float32(rng.NormFloat64())
				if rng.IntN(4) == 0 {
					l[i] = sp[rng.IntN(len(sp))]
				}
			}
			return l
		},
		func(v int) []float32 { // flat: underflowing exps at T 0
			l := make([]float32, v)
			for i := range l {
				l[i] = float32(rng.NormFloat64() * 30)
			}
			return l
		},
	}
	var params []Params
	for _, t := range []float64{1, 0.8, 0, 1.7} {
		for _, k := range []int{0, 1, 3, 50} {
			for _, p := range []float64{0, 0.5, 0.95} {
				for _, m := range []float64{0, 0.05} {
					params = append(params, Params{Temperature: t, TopK: k, TopP: p, MinP: m})
				}
			}
		}
	}
	params = append(params,
		Params{Greedy: true}, Params{Greedy: true, RepeatPenalty: 1.3},
		Params{Temperature: 0.8, TopK: 40, TopP: 0.9, MinP: 0.05, RepeatPenalty: 1.1, FrequencyPenalty: 0.2, PresencePenalty: 0.1},
		Params{Temperature: 0.8, TopP: 0.95, DRYMultiplier: 0.8, DRYBase: 1.75, DRYAllowedLength: 2, DRYPenaltyLastN: -1},
		Params{Temperature: 0.8, TopNSigma: 1}, Params{Temperature: 0.8, TopNSigma: 1.5, TopK: 20, TopP: 0.9},
		Params{Temperature: 0.8, TypicalP: 0.9}, Params{Temperature: 0.8, TypicalP: 0.5, TopP: 0.95, MinP: 0.02},
		Params{Temperature: 0.8, TypicalP: 0.7, TopK: 30},
		Params{Temperature: 0.8, XTCProbability: 0.7, XTCThreshold: 0.1}, Params{Temperature: 1, TopK: 10, XTCProbability: 1, XTCThreshold: 0.05, TopP: 0.95},
		Params{Temperature: 0.8, Mirostat: 2, MirostatTau: 5, MirostatEta: 0.1}, Params{Temperature: 0.8, Mirostat: 1, MirostatTau: 3, MirostatEta: 0.1},
		Params{Temperature: 0.8, Mirostat: 2, MirostatTau: 1, MirostatEta: 0.1, TopK: 5},
	)
	for _, vocab := range []int{1, 2, 7, 300, 5000} {
		for si, shape := range shapes {
			logits := shape(vocab)
			var mask []uint64
			if si == 1 && vocab > 2 {
				mask = make([]uint64, (vocab+63)/64)
				for i := range mask {
					mask[i] = rng.Uint64()
				}
			}
			for pi, p := range params {
				p.Seed = uint64(pi)
				s := New(vocab, p)
				var tr Trace
				s.SetTrace(&tr)
				if pi%3 == 0 {
					s.SetMask(mask)
				}
				hist := []int{}
				for step := range 4 {
					if step == 2 {
						s.SetTrace(nil)
						tr = Trace{}
					}
					var id int
					var err error
					if step%2 == 0 {
						id, err = s.Sample(logits, hist)
					} else {
						var d []float64
						if d, err = s.Dist(logits, hist); err == nil {
							id = s.Draw(d)
						}
					}
					put(uint64(int64(id)))
					if err != nil {
						put(1)
					}
					for _, v := range s.Probs() {
						put(math.Float64bits(v))
					}
					for i := range NumStages {
						if tr.Applied[i] {
							put(uint64(i))
							put(uint64(tr.Left[i]))
						}
					}
					if id >= 0 {
						hist = append(hist, id)
					}
					logits[rng.IntN(vocab)] += 1
				}
			}
		}
	}
	return h.Sum64()
}

func TestChainFingerprint(t *testing.T) {
	if got := chainFingerprint(); got != fingerprintWant {
		t.Fatalf("fingerprint %#x, want %#x: some sampled id, probability bit or trace count changed", got, fingerprintWant)
	}
}

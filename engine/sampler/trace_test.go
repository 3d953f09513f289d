package sampler

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// The Stage constants index Stages().
func TestStageIndices(t *testing.T) {
	want := map[int]string{StageMask: "mask", StagePenalties: "penalties", StageDRY: "dry", StageGreedy: "greedy",
		StageTemperature: "temperature", StageMirostat: "mirostat", StageTopNSigma: "top-n-sigma", StageTopK: "top-k",
		StageTypical: "typical", StageTopP: "top-p", StageMinP: "min-p", StageXTC: "xtc",
		StageSoftmax: "softmax", StageDraw: "draw"}
	if len(Stages()) != NumStages {
		t.Fatalf("%d stages, NumStages %d", len(Stages()), NumStages)
	}
	for i, name := range want {
		if Stages()[i].Name != name {
			t.Errorf("stage %d is %s, want %s", i, Stages()[i].Name, name)
		}
	}
}

// A traced call counts, after each stage, the ids a brute-force filter
// chain (sorting the whole vocabulary) leaves, and the trace changes
// neither the distribution nor the draw.
func TestTraceCountsSurvivors(t *testing.T) {
	const vocab = 3000
	r := rand.New(rand.NewPCG(7, 8))
	logits := make([]float32, vocab)
	for i := range logits {
		logits[i] = float32(r.NormFloat64() * 2.5)
	}
	logits[17] = float32(math.NaN())
	mask := make([]uint64, (vocab+63)/64)
	for i := range mask {
		mask[i] = r.Uint64() | r.Uint64() // about 3/4 allowed
	}
	hist := []int{5, 6, 7, 5}
	for _, c := range []struct {
		p      Params
		masked bool
	}{
		{Params{Temperature: 0.8, TopP: 0.95, Seed: 1}, false},
		{Params{Temperature: 0.7, TopK: 40, TopP: 0.9, MinP: 0.05, RepeatPenalty: 1.2, Seed: 2}, true},
		{Params{Temperature: 1, MinP: 0.1, Seed: 3}, true},
		{Params{Greedy: true, RepeatPenalty: 1.5}, true},
	} {
		plain, traced := New(vocab, c.p), New(vocab, c.p)
		var tr Trace
		traced.SetTrace(&tr)
		if c.masked {
			plain.SetMask(mask)
			traced.SetMask(mask)
		}
		a, _ := plain.Sample(logits, hist)
		b, _ := traced.Sample(logits, hist)
		if a != b || !slices.Equal(plain.Probs(), traced.Probs()) {
			t.Fatalf("%+v: tracing changed the result", c.p)
		}

		// Brute force: a float64 chain that sorts the whole vocabulary.
		w := make([]float64, vocab)
		for i, v := range logits {
			w[i] = float64(v)
			if v != v || c.masked && mask[i/64]>>(i%64)&1 == 0 {
				w[i] = math.Inf(-1)
			}
		}
		count := func() int {
			n := 0
			for _, v := range w {
				if v > math.Inf(-1) {
					n++
				}
			}
			return n
		}
		check := func(stage int, on bool, want int) {
			t.Helper()
			if tr.Applied[stage] != on || on && tr.Left[stage] != want {
				t.Errorf("%+v: stage %s applied %v left %d, want %v %d", c.p, Stages()[stage].Name, tr.Applied[stage], tr.Left[stage], on, want)
			}
		}
		check(StageMask, c.masked, count())
		if rep := c.p.RepeatPenalty; rep != 0 {
			seen := map[int]bool{}
			for _, id := range hist {
				if !seen[id] {
					seen[id] = true
					if w[id] > 0 {
						w[id] /= rep
					} else {
						w[id] *= rep
					}
				}
			}
		}
		check(StagePenalties, c.p.RepeatPenalty != 0, count())
		if c.p.Greedy {
			check(StageGreedy, true, 1)
			check(StageTemperature, false, 0)
			check(StageSoftmax, false, 0)
			check(StageDraw, false, 0)
			continue
		}
		if c.p.Temperature != 1 {
			for i := range w {
				w[i] /= c.p.Temperature
			}
		}
		check(StageTemperature, c.p.Temperature != 1, count())
		sorted := make([]int, vocab)
		for i := range sorted {
			sorted[i] = i
		}
		slices.SortStableFunc(sorted, func(a, b int) int {
			switch {
			case w[a] > w[b]:
				return -1
			case w[a] < w[b]:
				return 1
			}
			return 0
		})
		if k := c.p.TopK; k > 0 {
			th := w[sorted[k-1]]
			for i := range w {
				if w[i] < th {
					w[i] = math.Inf(-1)
				}
			}
		}
		check(StageTopK, c.p.TopK > 0, count())
		softmax := func() []float64 {
			z, m := 0.0, w[sorted[0]]
			pr := make([]float64, vocab)
			for i, v := range w {
				pr[i] = math.Exp(v - m)
				z += pr[i]
			}
			for i := range pr {
				pr[i] /= z
			}
			return pr
		}
		if p := c.p.TopP; p > 0 && p < 1 {
			pr, cum := softmax(), 0.0
			for _, id := range sorted {
				if cum > p {
					w[id] = math.Inf(-1)
				}
				cum += pr[id]
			}
		}
		check(StageTopP, c.p.TopP > 0 && c.p.TopP < 1, count())
		if m := c.p.MinP; m > 0 {
			pr := softmax()
			for i := range w {
				if pr[i] < m*pr[sorted[0]] {
					w[i] = math.Inf(-1)
				}
			}
		}
		check(StageMinP, c.p.MinP > 0, count())
		check(StageSoftmax, true, count())
		check(StageDraw, true, 1)
	}
}

// The top-p count is the size of the sorted nucleus.
func TestTraceTopPCount(t *testing.T) {
	logits := []float32{3, 2, 1, 0, -1, -2}
	s := New(len(logits), Params{Temperature: 1, TopP: 0.9})
	var tr Trace
	s.SetTrace(&tr)
	s.Sample(logits, nil)
	// probs ∝ e^3..e^-2: 0.636 0.234 0.086 0.032 ...: the mass before the
	// 4th is 0.956 > 0.9, so 3 are kept.
	if !tr.Applied[StageTopP] || tr.Left[StageTopP] != 3 || tr.Left[StageTemperature] != 0 || tr.Applied[StageTemperature] {
		t.Fatalf("trace %+v", tr)
	}
}

// Tracing allocates nothing either.
func TestTraceDoesNotAllocate(t *testing.T) {
	logits := make([]float32, 4096)
	for i := range logits {
		logits[i] = float32(i%97) / 10
	}
	s := New(len(logits), Params{Temperature: 0.7, TopK: 40, TopP: 0.9, MinP: 0.05})
	var tr Trace
	s.SetTrace(&tr)
	if a := testing.AllocsPerRun(50, func() { s.Sample(logits, nil) }); a != 0 {
		t.Errorf("%v allocs per traced Sample", a)
	}
}

package sampler

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

var inf = math.Inf(-1)

// kept runs Sample once and returns the ids with non-zero probability.
func kept(t *testing.T, p Params, logits []float32, history []int) []int {
	t.Helper()
	s := New(len(logits), p)
	if _, err := s.Sample(logits, history); err != nil {
		t.Fatal(err)
	}
	var ids []int
	for i, v := range s.Probs() {
		if v > 0 {
			ids = append(ids, i)
		}
	}
	return ids
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestOrderIsData(t *testing.T) {
	names := Order()
	want := []string{"mask", "penalties", "dry", "greedy", "temperature", "mirostat", "top-n-sigma", "top-k", "typical",
		"top-p", "min-p", "xtc", "softmax", "draw"}
	if !slices.Equal(names, want) {
		t.Fatalf("Order = %v, want %v", names, want)
	}
	for _, st := range Stages() {
		if st.What == "" {
			t.Fatalf("stage %s has no description", st.Name)
		}
	}
}

func TestPenalties(t *testing.T) {
	s := New(4, Params{RepeatPenalty: 2, FrequencyPenalty: 0.5, PresencePenalty: 0.25, PenaltyWindow: 3})
	copy(s.work, []float64{2, -1, 0.5, 3})
	// id 3 is outside the window of 3; ids 0 (x2) and 1 (x1) are inside.
	s.penalize([]int{3, 0, 0, 1})
	// id0: 2/2 = 1, -2*0.5 = 0, -0.25 → -0.25; id1: -1*2 = -2, -0.5, -0.25 → -2.75
	want := []float64{-0.25, -2.75, 0.5, 3}
	for i := range want {
		if !near(s.work[i], want[i]) {
			t.Fatalf("work = %v, want %v", s.work, want)
		}
	}
	for _, c := range s.counts {
		if c != 0 {
			t.Fatalf("counts not reset: %v", s.counts)
		}
	}
	// Out-of-range history ids are ignored, not a panic.
	s.penalize([]int{-1, 99})
}

func TestDefaultPenaltyWindow(t *testing.T) {
	s := New(2, Params{PresencePenalty: 1})
	hist := make([]int, DefaultPenaltyWindow+1)
	hist[0] = 1 // just outside the default window
	s.penalize(hist)
	if s.work[1] != 0 || s.work[0] != -1 {
		t.Fatalf("work = %v", s.work)
	}
}

func TestGreedyIgnoresOtherKnobs(t *testing.T) {
	logits := []float32{0.1, 2, 1.9, -3, 2}
	for seed := range uint64(20) {
		p := Params{Greedy: true, Temperature: 0.01 * float64(seed), TopK: 3, TopP: 0.1, MinP: 0.9, Seed: seed}
		s := New(len(logits), p)
		got, err := s.Sample(logits, nil)
		if err != nil || got != 1 { // first of the tied maxima
			t.Fatalf("seed %d: got %d, %v; want 1", seed, got, err)
		}
		if s.Probs()[1] != 1 {
			t.Fatalf("greedy probs not one-hot: %v", s.Probs())
		}
	}
	// ...but it sees the penalties: id 1 seen once is pushed below id 2.
	s := New(len(logits), Params{Greedy: true, PresencePenalty: 1})
	if got, _ := s.Sample(logits, []int{1, 4}); got != 2 {
		t.Fatalf("penalised greedy = %d, want 2", got)
	}
}

func TestTemperature(t *testing.T) {
	s := New(2, Params{Temperature: 0.5})
	s.Sample([]float32{0, 1}, nil)
	// softmax([0, 2])
	want := 1 / (1 + math.Exp(2))
	if !near(s.Probs()[0], want) {
		t.Fatalf("p0 = %v, want %v", s.Probs()[0], want)
	}
	// T = 0 is not greedy: equal logits still give both ids.
	s = New(2, Params{Temperature: 0, Seed: 3})
	seen := [2]bool{}
	for range 64 {
		id, _ := s.Sample([]float32{0.5, 0.5}, nil)
		seen[id] = true
	}
	if !seen[0] || !seen[1] {
		t.Fatalf("T=0 acted greedy: %v", seen)
	}
	// T = 0 sharpens unequal logits to the max.
	if got := kept(t, Params{Temperature: 0}, []float32{0, 0.25, 0.5}, nil); !slices.Equal(got, []int{2}) {
		t.Fatalf("T=0 kept %v", got)
	}
}

func TestTopK(t *testing.T) {
	for _, c := range []struct {
		logits []float32
		k      int
		want   []int
	}{
		{[]float32{1, 3, 3, 2, 0}, 2, []int{1, 2}},
		{[]float32{1, 3, 3, 2, 0}, 1, []int{1, 2}}, // ties at the k-th value survive
		{[]float32{1, 3, 3, 2, 0}, 3, []int{1, 2, 3}},
		{[]float32{5, 4, 4, 4, 1}, 2, []int{0, 1, 2, 3}},
		{[]float32{5, 4, 4, 4, 1}, 5, []int{0, 1, 2, 3, 4}}, // k >= vocab: off
		{[]float32{5, 4, 4, 4, 1}, 0, []int{0, 1, 2, 3, 4}},
	} {
		if got := kept(t, Params{Temperature: 1, TopK: c.k}, c.logits, nil); !slices.Equal(got, c.want) {
			t.Errorf("top-k %d of %v kept %v, want %v", c.k, c.logits, got, c.want)
		}
	}
}

func TestTopP(t *testing.T) {
	four := []float32{0, 0, 0, 0} // probs exactly 0.25 each; ties ordered by id
	ln := func(x float64) float32 { return float32(math.Log(x)) }
	for _, c := range []struct {
		logits []float32
		p      float64
		want   []int
	}{
		// cum 0.25 0.5 0.75 1: id 2 has 0.5 before it, which is not > 0.5.
		{four, 0.5, []int{0, 1, 2}},
		// id 0 lands exactly on p and is kept; id 1 has exactly p before it.
		{four, 0.25, []int{0, 1}},
		{four, 0.4, []int{0, 1}},
		{four, 0.1, []int{0}}, // the first is always kept
		{four, 1, []int{0, 1, 2, 3}},
		{four, 0, []int{0, 1, 2, 3}},
		// sorted probs 0.5 (id1), 0.25 (id3), 0.125, 0.125.
		{[]float32{0, ln(4), 0, ln(2)}, 0.6, []int{1, 3}},
		{[]float32{0, ln(4), 0, ln(2)}, 0.3, []int{1}},
		{[]float32{0, ln(4), 0, ln(2)}, 0.8, []int{0, 1, 3}}, // tie at 0.125: lower id first
	} {
		if got := kept(t, Params{Temperature: 1, TopP: c.p}, c.logits, nil); !slices.Equal(got, c.want) {
			t.Errorf("top-p %v of %v kept %v, want %v", c.p, c.logits, got, c.want)
		}
	}
}

// refTopP is the course's top-p written plainly: a full stable sort.
func refTopP(logits []float64, p float64) []bool {
	n := len(logits)
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool { return logits[idx[a]] > logits[idx[b]] })
	max := logits[idx[0]]
	z := 0.0
	for _, v := range logits {
		z += math.Exp(v - max)
	}
	keep := make([]bool, n)
	cum := 0.0
	for _, i := range idx {
		if cum > p {
			break
		}
		keep[i] = true
		cum += math.Exp(logits[i]-max) / z
	}
	return keep
}

// TestFilterMatchesFullSort: top-p and typical sort only the bucket where
// the mass crosses p; they keep exactly the ids a full sort keeps (refTopP,
// refTypical), on logits with many ties.
func TestFilterMatchesFullSort(t *testing.T) {
	for _, c := range []struct {
		name   string
		params func(p float64) Params
		ref    func(logits []float64, p float64) []bool
		seed   uint64
	}{
		{"top-p", func(p float64) Params { return Params{Temperature: 1, TopP: p} }, refTopP, 2},
		{"typical", func(p float64) Params { return Params{Temperature: 1, TypicalP: p} }, refTypical, 3},
	} {
		r := rand.New(rand.NewPCG(1, c.seed))
		for trial := range 200 {
			n := 1 + r.IntN(3000)
			logits := make([]float32, n)
			scale := []float64{0.1, 1, 5, 30}[trial%4]
			for i := range logits {
				logits[i] = float32(math.Round(r.NormFloat64()*scale*4) / 4) // many ties
			}
			p := r.Float64()
			s := New(n, c.params(p))
			s.Sample(logits, nil)
			f := make([]float64, n)
			for i, v := range logits {
				f[i] = float64(v)
			}
			want := c.ref(f, p)
			for i := range want {
				if want[i] != (s.Probs()[i] > 0) {
					t.Fatalf("%s trial %d n %d p %v: id %d kept=%v, want %v", c.name, trial, n, p, i, s.Probs()[i] > 0, want[i])
				}
			}
		}
	}
}

func TestMinP(t *testing.T) {
	ln := func(x float64) float32 { return float32(math.Log(x)) }
	logits := []float32{ln(0.05), ln(1), ln(0.5), ln(0.1)}
	if got := kept(t, Params{Temperature: 1, MinP: 0.2}, logits, nil); !slices.Equal(got, []int{1, 2}) {
		t.Fatalf("min-p 0.2 kept %v", got)
	}
	if got := kept(t, Params{Temperature: 1, MinP: 0.07}, logits, nil); !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("min-p 0.07 kept %v", got)
	}
	// min-p sees the filtered logits: after top-k 1 only the max is left.
	if got := kept(t, Params{Temperature: 1, TopK: 1, MinP: 0.01}, logits, nil); !slices.Equal(got, []int{1}) {
		t.Fatalf("top-k then min-p kept %v", got)
	}
}

func TestFilterOrderAndFinalProbs(t *testing.T) {
	// T 0.5 doubles the logits; top-k 3 keeps ids 0,1,2; top-p 0.9 then
	// drops id 2 (mass before it 0.966 > 0.9); min-p is off.
	logits := []float32{1, 0.5, -1, -2}
	s := New(4, Params{Temperature: 0.5, TopK: 3, TopP: 0.9})
	s.Sample(logits, nil)
	a, b := math.Exp(2.0), math.Exp(1.0)
	want := []float64{a / (a + b), b / (a + b), 0, 0}
	for i := range want {
		if !near(s.Probs()[i], want[i]) {
			t.Fatalf("probs = %v, want %v", s.Probs(), want)
		}
	}
}

func TestSameSeedSameSequence(t *testing.T) {
	logits := make([]float32, 50)
	for i := range logits {
		logits[i] = float32(math.Sin(float64(i)))
	}
	run := func(s *Sampler) []int {
		var out []int
		for range 100 {
			id, err := s.Sample(logits, out)
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, id)
		}
		return out
	}
	p := Params{Temperature: 1.3, TopP: 0.9, RepeatPenalty: 1.1, Seed: 42}
	s := New(len(logits), p)
	a := run(s)
	b := run(New(len(logits), p))
	s.Reset(42)
	c := run(s)
	if !slices.Equal(a, b) || !slices.Equal(a, c) {
		t.Fatalf("same seed, different sequences:\n%v\n%v\n%v", a, b, c)
	}
	p.Seed = 43
	if d := run(New(len(logits), p)); slices.Equal(a, d) {
		t.Fatalf("seeds 42 and 43 gave the same 100 draws")
	}
}

// TestDrawFollowsDistribution is a chi-square goodness-of-fit test: 20,000
// draws with a fixed seed against the filtered softmax. Filtered ids must
// never appear.
func TestDrawFollowsDistribution(t *testing.T) {
	logits := []float32{2, 1.5, -3, 1, 0.5, 0, -0.5, 2, -1, 0.25, -9, 1.75}
	p := Params{Temperature: 0.9, TopK: 9, TopP: 0.97, MinP: 0.05, Seed: 7}
	s := New(len(logits), p)
	s.Sample(logits, nil)
	want := slices.Clone(s.Probs())
	kept := 0
	for _, p := range want {
		if p > 0 {
			kept++
		}
	}
	if kept < 4 {
		t.Fatalf("only %d ids kept; the filters removed too much: %v", kept, want)
	}
	chiSquare(t, s, logits, want, 20000)
}

func TestNeverDrawsZeroProbability(t *testing.T) {
	logits := []float32{float32(inf), 0, float32(inf), 0, float32(math.NaN()), float32(inf)}
	s := New(len(logits), Params{Temperature: 1, Seed: 1})
	for range 2000 {
		id, err := s.Sample(logits, nil)
		if err != nil || (id != 1 && id != 3) {
			t.Fatalf("drew %d, %v", id, err)
		}
	}
}

func TestBadInput(t *testing.T) {
	s := New(3, Params{Temperature: 1})
	if _, err := s.Sample([]float32{1, 2}, nil); err == nil {
		t.Fatal("short logits: no error")
	}
	nan := float32(math.NaN())
	for _, greedy := range []bool{false, true} {
		s.SetParams(Params{Greedy: greedy})
		if _, err := s.Sample([]float32{float32(inf), nan, float32(inf)}, nil); err != ErrNoCandidates {
			t.Fatalf("greedy=%v all -inf: err %v", greedy, err)
		}
	}
	// +Inf wins without producing NaN.
	s.SetParams(Params{Temperature: 0.7, TopP: 0.5})
	if id, err := s.Sample([]float32{0, float32(math.Inf(1)), 3}, nil); err != nil || id != 1 {
		t.Fatalf("+Inf: %d %v", id, err)
	}
	if (Params{Temperature: math.NaN()}).Validate() == nil || (Params{TopK: -1}).Validate() == nil {
		t.Fatal("Validate accepted NaN temperature or negative top-k")
	}
	if err := Defaults().Validate(); err != nil {
		t.Fatal(err)
	}
}

func TestSampleDoesNotAllocate(t *testing.T) {
	const vocab = 4096
	logits := make([]float32, vocab)
	r := rand.New(rand.NewPCG(3, 4))
	for i := range logits {
		logits[i] = float32(r.NormFloat64() * 3)
	}
	hist := []int{1, 2, 3, 2, 1, 4000}
	for _, p := range []Params{
		{Temperature: 0.8, TopP: 0.95, Seed: 1},
		{Temperature: 0.7, TopK: 40, TopP: 0.9, MinP: 0.05, RepeatPenalty: 1.1, FrequencyPenalty: 0.1, PresencePenalty: 0.1},
		{Greedy: true},
		{Temperature: 0},
	} {
		s := New(vocab, p)
		if a := testing.AllocsPerRun(50, func() { s.Sample(logits, hist) }); a != 0 {
			t.Errorf("%+v: %v allocs per Sample", p, a)
		}
	}
}

func BenchmarkSample(b *testing.B) {
	for _, vocab := range []int{4096, 50257, 128256} {
		logits := make([]float32, vocab)
		r := rand.New(rand.NewPCG(5, 6))
		for i := range logits {
			logits[i] = float32(r.NormFloat64() * 2)
		}
		// Real models' logits are peaked: a few ids well above the rest
		// (random σ-2 logits are top-p's worst case).
		peaked := slices.Clone(logits)
		for range 5 {
			peaked[r.IntN(vocab)] += 10
		}
		for name, p := range map[string]Params{
			"greedy":     {Greedy: true},
			"chat":       Defaults(),
			"topk50":     {Temperature: 0.8, TopK: 50},
			"everything": {Temperature: 0.8, TopK: 40, TopP: 0.9, MinP: 0.05, RepeatPenalty: 1.1},
			// llama.cpp's further samplers, with the chat defaults: DRY over
			// a 4,000-id history, typical-p, mirostat 2.
			"dry":        {Temperature: 0.8, TopP: 0.95, DRYMultiplier: 0.8, DRYBase: 1.75, DRYAllowedLength: 2, DRYPenaltyLastN: -1},
			"typical":    {Temperature: 0.8, TopP: 0.95, TypicalP: 0.95},
			"mirostat":   {Temperature: 0.8, Mirostat: 2, MirostatTau: 5, MirostatEta: 0.1},
			"chatpeaked": Defaults(),
		} {
			logits := logits
			if name == "chatpeaked" {
				logits = peaked
			}
			b.Run(fmt.Sprintf("%s/V%d", name, vocab), func(b *testing.B) {
				s := New(vocab, p)
				hist := []int{1, 2, 3}
				if p.DRYMultiplier != 0 {
					hist = make([]int, 4000)
					for i := range hist {
						hist[i] = r.IntN(2000)
					}
				}
				for b.Loop() {
					s.Sample(logits, hist)
				}
			})
		}
	}
}

// TestDistThenDrawIsSample: Dist uses no randomness, and Dist followed by
// Draw gives exactly Sample's ids with the same seed (speculative decoding
// relies on both).
func TestDistThenDrawIsSample(t *testing.T) {
	logits := make([]float32, 64)
	for i := range logits {
		logits[i] = float32(math.Cos(float64(i) * 1.7))
	}
	for _, p := range []Params{
		{Temperature: 0.7, TopP: 0.9, RepeatPenalty: 1.2, Seed: 5},
		{Temperature: 1, TopK: 7, MinP: 0.1, Seed: 6},
		{Greedy: true, RepeatPenalty: 1.5},
	} {
		a, b := New(len(logits), p), New(len(logits), p)
		var hist []int
		for range 200 {
			want, err := a.Sample(logits, hist)
			if err != nil {
				t.Fatal(err)
			}
			d, err := b.Dist(logits, hist)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := b.Dist(logits, hist); err != nil { // no RNG use
				t.Fatal(err)
			}
			got := b.Draw(d)
			if p.Greedy {
				got = argmax(d)
			}
			if got != want || !slices.Equal(d, a.Probs()) {
				t.Fatalf("%+v: Dist+Draw %d, Sample %d", p, got, want)
			}
			hist = append(hist, want)
		}
	}
}

func TestDrawBadDistributions(t *testing.T) {
	s := New(4, Params{Seed: 1})
	for _, d := range [][]float64{nil, {0, 0}, {-1, math.NaN()}, {math.Inf(1), 1}} {
		if id := s.Draw(d); id != -1 {
			t.Fatalf("Draw(%v) = %d, want -1", d, id)
		}
	}
	for range 100 {
		if id := s.Draw([]float64{0, -2, 3, math.NaN(), 1}); id != 2 && id != 4 {
			t.Fatalf("drew %d", id)
		}
	}
	if u := s.Float64(); !(u >= 0 && u < 1) {
		t.Fatalf("Float64 %v", u)
	}
}

// bitsOf is a mask allowing ids.
func bitsOf(n int, ids ...int) []uint64 {
	b := make([]uint64, (n+63)/64)
	for _, id := range ids {
		b[id/64] |= 1 << (id % 64)
	}
	return b
}

// The mask comes first: masked sampling draws from the softmax of the
// allowed logits only (the unmasked distribution renormalised over the
// allowed ids), chi-square at a fixed seed; a masked id is never drawn.
func TestMaskRenormalises(t *testing.T) {
	logits := make([]float32, 130) // more than two mask words
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range logits {
		logits[i] = float32(rng.NormFloat64())
	}
	allowed := []int{0, 3, 64, 65, 100, 127, 129}
	s := New(len(logits), Params{Temperature: 1, Seed: 3})
	free, err := s.Dist(logits, nil)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float64, len(logits))
	z := 0.0
	for _, id := range allowed {
		z += free[id]
	}
	for _, id := range allowed {
		want[id] = free[id] / z
	}
	s.SetMask(bitsOf(len(logits), allowed...))
	chiSquare(t, s, logits, want, 20000)
	s.SetMask(nil)
	if d, _ := s.Dist(logits, nil); d[1] == 0 {
		t.Fatal("SetMask(nil) did not lift the mask")
	}
}

// Greedy under a mask is the argmax of the allowed ids: the unmasked argmax
// whenever that is allowed.
func TestMaskGreedy(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 5))
	logits := make([]float32, 200)
	for range 500 {
		for i := range logits {
			logits[i] = float32(rng.NormFloat64())
		}
		var allowed []int
		for i := range logits {
			if rng.IntN(4) == 0 {
				allowed = append(allowed, i)
			}
		}
		if len(allowed) == 0 {
			continue
		}
		s := New(len(logits), Params{Greedy: true})
		free, _ := s.Sample(logits, nil)
		s.SetMask(bitsOf(len(logits), allowed...))
		got, err := s.Sample(logits, nil)
		if err != nil {
			t.Fatal(err)
		}
		best := allowed[0]
		for _, id := range allowed {
			if logits[id] > logits[best] {
				best = id
			}
		}
		if got != best || slices.Contains(allowed, free) && got != free {
			t.Fatalf("masked greedy %d, want %d (unmasked %d)", got, best, free)
		}
	}
	// Nothing allowed: an error, not a draw.
	s := New(3, Params{Temperature: 1})
	s.SetMask(make([]uint64, 1))
	if _, err := s.Sample([]float32{1, 2, 3}, nil); err != ErrNoCandidates {
		t.Fatalf("empty mask: %v", err)
	}
}

// BenchmarkLoad is the first stage of the chain, logits into the work row,
// without a mask and with a sparse one (after '{': a few ids allowed), a
// dense one (inside a string: nearly all) and a mixed one, at 32k and 128k
// ids: the mask's cost is the difference from "none".
//
//	go test -run '^$' -bench Load ./engine/sampler/
func BenchmarkLoad(b *testing.B) {
	for _, v := range []int{32000, 128256} {
		rng := rand.New(rand.NewPCG(1, 2))
		words := (v + 63) / 64
		masks := map[string][]uint64{"none": nil, "sparse": make([]uint64, words), "dense": make([]uint64, words), "mixed": make([]uint64, words)}
		masks["sparse"][3] = 0xf0
		for i := range words {
			masks["dense"][i] = ^uint64(0)
			masks["mixed"][i] = rng.Uint64()
		}
		masks["dense"][7] &^= 1 << 34
		logits := make([]float32, v)
		for i := range logits {
			logits[i] = float32(rng.NormFloat64())
		}
		for _, kind := range []string{"none", "sparse", "dense", "mixed"} {
			b.Run(fmt.Sprintf("%s-%d", kind, v), func(b *testing.B) {
				s := New(v, Params{})
				s.SetMask(masks[kind])
				for range b.N {
					s.load(logits, 1)
				}
			})
		}
	}
}

// Greedy without a mask or penalties takes the argmax on the float32 logits:
// the same id as on their cleaned float64 copy (NaN, ±Inf, ties), and Probs
// stays one-hot when greedy and sampled calls alternate.
func TestGreedyFloat32Argmax(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	rng := rand.New(rand.NewPCG(5, 6))
	cases := [][]float32{
		{1, 2, 3}, {3, 3, 1}, {nan, 1, nan}, {nan, nan}, {-inf, -inf}, {-inf, nan, -inf},
		{1, inf, 2, inf}, {nan, -inf, 0}, {0, float32(math.Copysign(0, -1))}, {float32(math.Copysign(0, -1)), 0},
		{-3e38, -inf}, {math.MaxFloat32, inf},
	}
	for range 200 {
		c := make([]float32, 1+rng.IntN(40))
		for i := range c {
			c[i] = []float32{nan, inf, -inf, 0, 1, 2, float32(rng.NormFloat64())}[rng.IntN(7)]
		}
		cases = append(cases, c)
	}
	for _, logits := range cases {
		w := make([]float64, len(logits))
		for i, v := range logits {
			w[i] = clean(float64(v))
		}
		want := argmax(w)
		s := New(len(logits), Params{Greedy: true})
		for round := range 3 {
			got, err := s.Sample(logits, nil)
			if want < 0 {
				if err != ErrNoCandidates {
					t.Fatalf("%v: %d, %v; want ErrNoCandidates", logits, got, err)
				}
				continue
			}
			if got != want || err != nil {
				t.Fatalf("%v: %d, %v; want %d", logits, got, err, want)
			}
			for i, p := range s.Probs() {
				if (i == want) != (p == 1) || (i != want && p != 0) {
					t.Fatalf("%v round %d: probs %v, want one-hot at %d", logits, round, s.Probs(), want)
				}
			}
			s.SetParams(Params{Temperature: 1}) // a sampled call fills probs, then greedy again
			if _, err := s.Dist(make([]float32, len(logits)), nil); err != nil {
				t.Fatal(err)
			}
			s.SetParams(Params{Greedy: true})
		}
	}
	s := New(3, Params{Greedy: true})
	for _, l := range [][]float32{{1, 0, 0}, {0, 1, 0}, {0, 0, 1}} {
		s.Sample(l, nil)
	}
	if p := s.Probs(); p[0] != 0 || p[1] != 0 || p[2] != 1 {
		t.Errorf("after three greedy calls: probs %v, want [0 0 1]", p)
	}
}

// TestRenew: a sampler used with other knobs, a mask, a trace and penalty
// counts left behind, once renewed, draws exactly what a new one draws.
func TestRenew(t *testing.T) {
	const vocab = 50
	rng := rand.New(rand.NewPCG(7, 7))
	logits := make([][]float32, 40)
	for i := range logits {
		logits[i] = make([]float32, vocab)
		for j := range logits[i] {
			logits[i][j] = float32(rng.NormFloat64() * 2)
		}
		logits[i][3] = 4 // the id with counts left behind is a likely one
	}
	used := New(vocab, Params{Temperature: 1.3, TopK: 5, Seed: 99})
	used.SetMask([]uint64{0b1011})
	used.SetTrace(&Trace{})
	used.counts[3] = 4 // as if a call had stopped half-way
	if _, err := used.Sample(logits[0], []int{1, 3}); err != nil {
		t.Fatal(err)
	}
	p := Params{Temperature: 0.9, TopP: 0.9, FrequencyPenalty: 0.7, Seed: 5}
	used.Renew(p)
	fresh := New(vocab, p)
	hist := []int{3}
	for i, l := range logits {
		a, errA := used.Sample(l, hist)
		b, errB := fresh.Sample(l, hist)
		if a != b || errA != nil || errB != nil || !slices.Equal(used.Probs(), fresh.Probs()) {
			t.Fatalf("draw %d: renewed %d (%v), new %d (%v)", i, a, errA, b, errB)
		}
		hist = append(hist, a)
	}
}

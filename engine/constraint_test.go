package engine

import (
	"chat/models/kvcache"
	"regexp"
	"slices"
	"testing"

	"chat/engine/constrain"
	"chat/engine/sampler"
	"chat/engine/speculative"
	"chat/models"
	"gonum.org/v1/gonum/stat/distuv"
)

// fakeConstraint compiles spec over a model's tokenizer.
func fakeConstraint(t testing.TB, m models.Model, spec constrain.Spec) *constrain.Matcher {
	t.Helper()
	v := constrain.NewVocab(m.Tokenizer(), m.Info().VocabSize)
	c, err := constrain.Build(spec, v)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The fake tokenizer splits "ab é日🙂\nßx本👍" into 1-3 byte fragments, so
// this regex is spelled by whole characters and by pieces of them.
const fakeRegex = `([ab x]|é|日)+`

// Constrained sampling draws from the target distribution masked by the
// constraint and renormalised (mask first, then top-k): the exact joint
// law of three tokens, by enumeration with the masks the constraint gives
// for each state and budget, against 20,000 replies (chi-square, fixed
// seeds), plainly and under three drafters that know nothing of the
// constraint (so their guesses are often refused).
func TestConstrainedDistribution(t *testing.T) {
	target := newBigram(1)
	v := target.info.VocabSize
	eot := target.Tok.EOT()
	pr := []int{0, 1, 2, 0, 1, 2, 0} // "a", "b", " ": allowed, so copying drafters guess allowed ids too
	knob := sampler.Params{Temperature: 0.9, TopK: 4}
	ref := fakeConstraint(t, target, constrain.Spec{Kind: constrain.KindRegex, Arg: fakeRegex})

	want := map[[3]int]float64{}
	smp := sampler.New(v, knob)
	row := make([]float32, v)
	var walk func(hist []int, s constrain.State, pos int, prob float64, key [3]int)
	walk = func(hist []int, s constrain.State, pos int, prob float64, key [3]int) {
		if pos == 3 {
			want[key] = prob
			return
		}
		m, err := ref.Mask(s, 3-pos) // the reply's budget: 3 ids

		if err != nil {
			t.Fatal(err)
		}
		target.logits(row, hist[len(hist)-1])
		smp.SetMask(m.Bits)
		d, err := smp.Dist(row, hist)
		if err != nil {
			t.Fatal(err)
		}
		d = slices.Clone(d)
		for id, q := range d {
			if q == 0 {
				continue
			}
			k := key
			k[pos] = id
			if id == eot {
				for i := pos + 1; i < 3; i++ {
					k[i] = -1
				}
				want[k] += prob * q
				continue
			}
			next, ok := ref.Next(s, id)
			if !ok {
				t.Fatalf("id %d in the mask but refused", id)
			}
			walk(append(slices.Clone(hist), id), next, pos+1, prob*q, k)
		}
	}
	walk(pr, ref.Begin([]int{eot}), 0, 1, [3]int{})

	const N = 20000
	for name, cfg := range map[string]speculative.Config{
		"plain":    {},
		"draft k2": {Method: speculative.Draft, K: 2, Draft: newBigram(2)},
		"ngram k3": {Method: speculative.NGram, K: 3},
		"lookup":   {Method: speculative.Lookup},
	} {
		e := New(target)
		if cfg.Method != speculative.Off {
			if err := e.SetSpeculation(cfg); err != nil {
				t.Fatal(err)
			}
		}
		c := fakeConstraint(t, target, constrain.Spec{Kind: constrain.KindRegex, Arg: fakeRegex})
		counts := map[[3]int]float64{}
		var st speculative.Stats
		for seed := range uint64(N) {
			p := knob
			p.Seed = seed
			res := run(t, e, Request{Prompt: pr, MaxTokens: 3, Sampler: p, Constraint: c})
			key := [3]int{-1, -1, -1}
			copy(key[:], res.IDs)
			if res.StopID >= 0 {
				key[len(res.IDs)] = res.StopID
			}
			counts[key]++
			st.Proposed += res.Stats.Spec.Proposed
			st.Accepted += res.Stats.Spec.Accepted
		}
		e.Close()
		for k, n := range counts {
			if want[k] == 0 {
				t.Fatalf("%s: %v has probability 0 but came %v times", name, k, n)
			}
		}
		chi, df := 0.0, -1
		for k, pr := range want {
			exp := pr * N
			chi += (counts[k] - exp) * (counts[k] - exp) / exp
			df++
		}
		pv := 1 - distuv.ChiSquared{K: float64(df)}.CDF(chi)
		t.Logf("%s: chi2 %.1f df %d p-value %.3f; %d of %d guesses kept", name, chi, df, pv, st.Accepted, st.Proposed)
		if pv < 0.001 {
			t.Errorf("%s: the output does not follow the masked target distribution: chi2 %.1f df %d p %.2g", name, chi, df, pv)
		}
		if cfg.Method != speculative.Off && cfg.Method != speculative.Lookup && (st.Accepted == 0 || st.Accepted == st.Proposed) {
			t.Errorf("%s: %d of %d guesses kept: both branches are needed", name, st.Accepted, st.Proposed)
		}
	}
}

// checkGreedy replays a constrained greedy reply: at every step the id
// taken is the argmax of the logits among the ids the constraint allows,
// which is the unconstrained argmax whenever that is allowed.
func checkGreedy(t *testing.T, m models.Model, c *constrain.Matcher, ends, prompt []int, maxTokens int, res Result) (agree int) {
	t.Helper()
	st := kvcache.NewState(m)
	logits, err := st.Forward(prompt, 1)
	if err != nil {
		t.Fatal(err)
	}
	s := c.Begin(ends)
	ids := append(slices.Clone(res.IDs), res.StopID)
	for i, id := range ids {
		if id < 0 {
			break
		}
		mk, err := c.Mask(s, maxTokens-i)
		if err != nil {
			t.Fatal(err)
		}
		free, best := 0, -1
		for j, l := range logits {
			if l > logits[free] {
				free = j
			}
			if mk.Allows(j) && (best < 0 || l > logits[best]) {
				best = j
			}
		}
		if id != best {
			t.Fatalf("step %d: took %d, the best allowed id is %d (unconstrained %d)", i, id, best, free)
		}
		if mk.Allows(free) {
			agree++
		}
		if s, _ = c.Next(s, id); i < len(res.IDs) {
			if logits, err = st.Forward([]int{id}, 1); err != nil {
				t.Fatal(err)
			}
		}
	}
	return agree
}

func TestConstrainedGreedy(t *testing.T) {
	m := newFake(models.WindowHalf, 64)
	e := New(m)
	defer e.Close()
	c := fakeConstraint(t, m, constrain.Spec{Kind: constrain.KindRegex, Arg: fakeRegex})
	prompt := []int{1, 2, 3}
	res := run(t, e, Request{Prompt: prompt, MaxTokens: 40, Sampler: sampler.Params{Greedy: true}, Constraint: c})
	if !regexp.MustCompile(`^(?:`+fakeRegex+`)$`).MatchString(res.Text) && res.Reason == ReasonEOT {
		t.Fatalf("%q does not match", res.Text)
	}
	checkGreedy(t, m, c, []int{m.Tok.EOT()}, prompt, 40, res)
	if res.Stats.MaskAllowed <= 0 || res.Stats.MaskTime <= 0 {
		t.Errorf("mask stats %d %v", res.Stats.MaskAllowed, res.Stats.MaskTime)
	}
	// The same reply, speculating, is the same greedy reply.
	if err := e.SetSpeculation(speculative.Config{Method: speculative.Draft, K: 3, Draft: newNoisy(m, 1, 64)}); err != nil {
		t.Fatal(err)
	}
	spec := run(t, e, Request{Prompt: prompt, MaxTokens: 40, Sampler: sampler.Params{Greedy: true}, Constraint: c})
	if !slices.Equal(spec.IDs, res.IDs) || spec.Reason != res.Reason {
		t.Fatalf("speculative %v %s, plain %v %s", spec.IDs, spec.Reason, res.IDs, res.Reason)
	}
}

// A constraint that is complete with nothing left to add forces the end id.
func TestConstraintForcesEnd(t *testing.T) {
	m := newFake(models.WindowHalf, 64)
	e := New(m)
	defer e.Close()
	c := fakeConstraint(t, m, constrain.Spec{Kind: constrain.KindRegex, Arg: `ab`})
	for seed := range uint64(50) {
		res := run(t, e, Request{Prompt: []int{1}, MaxTokens: 10, Sampler: sampler.Params{Temperature: 1, Seed: seed}, Constraint: c})
		if res.Text != "ab" || res.Reason != ReasonEOT || res.StopID != m.Tok.EOT() {
			t.Fatalf("seed %d: %q %s stop %d", seed, res.Text, res.Reason, res.StopID)
		}
	}
}

// The KV and prefix caches never see the constraint: the next request
// that extends a constrained reply reuses all of it, plainly and after
// speculation, as it would an unconstrained one.
func TestConstraintLeavesCacheAlone(t *testing.T) {
	m := newFake(models.WindowHalf, 64)
	for _, spec := range []bool{false, true} {
		e := New(m)
		if spec {
			if err := e.SetSpeculation(speculative.Config{Method: speculative.Draft, K: 3, Draft: newNoisy(m, 1, 64)}); err != nil {
				t.Fatal(err)
			}
		}
		c := fakeConstraint(t, m, constrain.Spec{Kind: constrain.KindRegex, Arg: fakeRegex})
		prompt := []int{1, 2, 3}
		for _, cons := range []constrain.Constraint{nil, c} {
			res := run(t, e, Request{Prompt: prompt, MaxTokens: 12, Sampler: sampler.Params{Temperature: 1, Seed: 9}, Constraint: cons})
			next := append(append(slices.Clone(prompt), res.IDs...), 4)
			again := run(t, e, Request{Prompt: next, MaxTokens: 2, Sampler: sampler.Params{Greedy: true}})
			want := len(prompt) + len(res.IDs)
			if res.Reason == ReasonLength {
				want-- // the last id was never fed
			}
			if again.Stats.ReusedTokens != want {
				t.Errorf("speculation %v, constraint %v: %d ids reused, want %d", spec, cons != nil, again.Stats.ReusedTokens, want)
			}
		}
		e.Close()
	}
}

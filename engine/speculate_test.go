package engine

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"chat/engine/sampler"
	"chat/engine/speculative"
	"chat/models"
	"chat/models/kvcache"
	"chat/models/modeltest"
	"chat/models/testmodels"
	"gonum.org/v1/gonum/stat/distuv"
)

// noisyModel is a draft for fakeModel: the same tokenizer, its logits plus
// deterministic noise (and its own context length), so it agrees with the
// target only sometimes.
type noisyModel struct {
	*fakeModel
	amp float32
}

func newNoisy(target *fakeModel, amp float32, ctx int) *noisyModel {
	f := newFake(target.info.Window, ctx)
	n := &noisyModel{fakeModel: f, amp: amp}
	f.Logits = func(dst []float32, h uint64) {
		modeltest.LogitsHash(dst, h)
		for i := range dst {
			dst[i] += amp * (float32(mix(h^0xdead+uint64(i)*0x9e3779b97f4a7c15)>>11)/(1<<53)*2 - 1)
		}
	}
	return n
}

func specConfigs(m *fakeModel) map[string]speculative.Config {
	return map[string]speculative.Config{
		"draft k1":        {Method: speculative.Draft, K: 1, Draft: newNoisy(m, 2, testCtx)},
		"draft k3":        {Method: speculative.Draft, K: 3, Draft: newNoisy(m, 1, testCtx)},
		"short draft k5":  {Method: speculative.Draft, K: 5, Draft: newNoisy(m, 0.5, 7)},
		"self k4":         {Method: speculative.Draft, K: 4, Draft: m},
		"ngram k4":        {Method: speculative.NGram, K: 4},
		"lookup k6 n2":    {Method: speculative.Lookup, K: 6, N: 2},
		"ngram k16 n1":    {Method: speculative.NGram, K: 16, N: 1},
		"draft k16 wide ": {Method: speculative.Draft, K: 16, Draft: newNoisy(m, 0.2, 64)},
	}
}

// loopy is a prompt that repeats, so n-gram and lookup drafters have
// something to propose.
func loopy(n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = (i%5)*3 + 1
	}
	return p
}

// TestSpeculativeGreedyMatchesPlain: greedy (also with penalties, which
// make each row depend on the guesses before it) gives the plain engine's
// ids, reason and text for every drafter, both window rules, prompts
// shorter than, equal to and longer than the window, replies that
// overflow it several times, and a stop id — warm and cold engines.
func TestSpeculativeGreedyMatchesPlain(t *testing.T) {
	greedy := map[string]sampler.Params{
		"greedy":           {Greedy: true},
		"greedy+penalties": {Greedy: true, RepeatPenalty: 1.5, FrequencyPenalty: 0.3, PenaltyWindow: 6},
	}
	for rname, rule := range rules() {
		m := newFake(rule, testCtx)
		plain := New(m)
		for cname, cfg := range specConfigs(m) {
			spec := New(m)
			if err := spec.SetSpeculation(cfg); err != nil {
				t.Fatal(err)
			}
			var proposed, accepted int
			for kname, p := range greedy {
				for _, n := range []int{1, 5, testCtx - 1, testCtx, 2 * testCtx} {
					for _, pr := range [][]int{prompt(n, n), loopy(n)} {
						req := Request{Prompt: pr, MaxTokens: 3 * testCtx, Sampler: p}
						want := run(t, plain, req)
						req.StopIDs = []int{want.IDs[len(want.IDs)/2]}
						wantStop := run(t, plain, req)
						for _, e := range []*Engine{spec, New(m)} {
							if e != spec {
								e.SetSpeculation(cfg)
							}
							got := run(t, e, Request{Prompt: pr, MaxTokens: 3 * testCtx, Sampler: p})
							gotStop := run(t, e, req)
							for _, c := range [][2]Result{{got, want}, {gotStop, wantStop}} {
								if !slices.Equal(c[0].IDs, c[1].IDs) || c[0].Reason != c[1].Reason || c[0].Text != c[1].Text || c[0].Stats.GenTokens != c[1].Stats.GenTokens {
									t.Fatalf("%s/%s/%s prompt %d: speculative %v (%s)\nplain %v (%s)", rname, cname, kname, n, c[0].IDs, c[0].Reason, c[1].IDs, c[1].Reason)
								}
							}
							s := got.Stats.Spec
							proposed += s.Proposed
							accepted += s.Accepted
							if s.Generated != got.Stats.GenTokens || s.Accepted > s.Proposed || s.K != cfg.K {
								t.Fatalf("%s/%s: stats %+v", rname, cname, s)
							}
							if e != spec {
								e.Close()
							}
						}
					}
				}
			}
			if proposed == 0 {
				t.Errorf("%s/%s: %d proposed, %d accepted: the test exercised nothing", rname, cname, proposed, accepted)
			}
			t.Logf("%s/%s: acceptance %.2f (%d/%d)", rname, cname, float64(accepted)/float64(max(1, proposed)), accepted, proposed)
			spec.Close()
		}
		plain.Close()
	}
}

// TestSpeculativeRollback: after replies with rejections, the target's
// cache holds exactly the reply's ids but the pending last one, and so
// does the draft's (plus at most k-1 unverified guesses); both give the
// logits of a fresh prefill.
func TestSpeculativeRollback(t *testing.T) {
	m := newFake(models.WindowHalf, 64)
	draft := newNoisy(m, 1.5, 64)
	e := New(m)
	defer e.Close()
	if err := e.SetSpeculation(speculative.Config{Method: speculative.Draft, K: 4, Draft: draft}); err != nil {
		t.Fatal(err)
	}
	for i, p := range []sampler.Params{knobs["sampled"], knobs["penalties"], {Greedy: true}} {
		res := run(t, e, Request{Prompt: prompt(5, i), MaxTokens: 40, Sampler: p})
		s := res.Stats.Spec
		if s.Accepted == s.Proposed || s.Accepted == 0 {
			t.Fatalf("reply %d: %d of %d kept; want some rejections and some kept", i, s.Accepted, s.Proposed)
		}
		all := append(slices.Clone(prompt(5, i)), res.IDs...)
		if !slices.Equal(e.lastIDs, all[:len(all)-1]) || e.last.Len() != len(all)-1 {
			t.Fatalf("reply %d: target cache %v (len %d), want %v", i, e.lastIDs, e.last.Len(), all[:len(all)-1])
		}
		want := refLogits(t, m, all)
		got, err := models.NewState(m, e.last).Forward(all[len(all)-1:], 1)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(got, want) {
			t.Fatalf("reply %d: target cache gives other logits than a fresh prefill", i)
		}
		e.last.Truncate(len(all) - 1) // undo the probe (lastIDs did not see it)

		d := e.drafter.(*speculative.ModelDrafter)
		c := d.Cached()
		if len(c) > len(all)+3 || !slices.Equal(c[:min(len(c), len(all)-1)], all[:min(len(c), len(all)-1)]) {
			t.Fatalf("reply %d: draft cache %v, text %v", i, c, all)
		}
		fresh, err := kvcache.NewState(draft).Forward(c, 1)
		if err != nil {
			t.Fatal(err)
		}
		fresh = slices.Clone(fresh)
		d.State().Truncate(len(c) - 1)
		if got, err := d.State().Forward(c[len(c)-1:], 1); err != nil || !slices.Equal(got, fresh) {
			t.Fatalf("reply %d: draft cache gives other logits than a fresh prefill (%v)", i, err)
		}
	}
}

// bigram is a fake whose next-token logits depend only on the last id: a
// hash plus a boost for (last+17) mod V, so a repeating prompt makes the
// n-gram and lookup drafters guess right part of the time. salt makes a
// different model with the same tokenizer.
type bigram struct {
	*modeltest.Chain
	info models.Info
	salt uint64
}

func newBigram(salt uint64) *bigram {
	tok := newFakeTok()
	info := models.Info{Name: fmt.Sprint("bigram", salt), VocabSize: tok.Size(), ContextLength: 64, Window: models.WindowHalf}
	m := &bigram{info: info, salt: salt}
	m.Chain = &modeltest.Chain{Meta: info, Tok: tok, FailOn: -1,
		Step:   func(_ uint64, token, _ int) uint64 { return uint64(token) },
		Logits: func(dst []float32, last uint64) { m.logits(dst, int(last)) }}
	return m
}

// setContext changes the context length (before an engine is made).
func (m *bigram) setContext(ctx int) {
	m.info.ContextLength = ctx
	m.Meta.ContextLength = ctx
}

func (m *bigram) logits(dst []float32, last int) {
	v := m.info.VocabSize
	for i := range v {
		dst[i] = float32(mix(m.salt*0x2545f4914f6cdd1d+uint64(last)*0x9e3779b97f4a7c15+uint64(i))>>11)/(1<<53)*3 - 1.5
	}
	dst[(last+17)%v] += 2
}

// TestSpeculativeDistribution is a chi-square test: 20,000 replies per
// drafter, each with its own seed, of the first three tokens. Their joint
// law must be the target's filtered one (temperature, top-k and a repeat
// penalty that makes each row depend on the tokens before it), however
// different the draft is.
func TestSpeculativeDistribution(t *testing.T) {
	target := newBigram(1)
	v := target.info.VocabSize
	chain := []int{5}
	for len(chain) < 12 {
		chain = append(chain, (chain[len(chain)-1]+17)%v)
	}
	pr := append(slices.Clone(chain), chain[:4]...) // repeats, for n-gram and lookup
	knob := sampler.Params{Temperature: 0.9, TopK: 4, RepeatPenalty: 1.3}

	// The exact joint law of three tokens, by enumeration.
	want := map[[3]int]float64{}
	ref := sampler.New(v, knob)
	row := make([]float32, v)
	var walk func(hist []int, pos int, pr float64, key [3]int)
	walk = func(hist []int, pos int, prob float64, key [3]int) {
		if pos == 3 {
			want[key] = prob
			return
		}
		target.logits(row, hist[len(hist)-1])
		d, err := ref.Dist(row, hist)
		if err != nil {
			t.Fatal(err)
		}
		d = slices.Clone(d)
		for id, q := range d {
			if q > 0 {
				key[pos] = id
				walk(append(slices.Clone(hist), id), pos+1, prob*q, key)
			}
		}
	}
	walk(pr, 0, 1, [3]int{})

	const N = 20000
	for name, cfg := range map[string]speculative.Config{
		"draft k2": {Method: speculative.Draft, K: 2, Draft: newBigram(2)},
		"ngram k3": {Method: speculative.NGram, K: 3},
		"lookup":   {Method: speculative.Lookup},
	} {
		e := New(target)
		if err := e.SetSpeculation(cfg); err != nil {
			t.Fatal(err)
		}
		counts := map[[3]int]float64{}
		var st speculative.Stats
		for seed := range uint64(N) {
			p := knob
			p.Seed = seed
			res := run(t, e, Request{Prompt: pr, MaxTokens: 3, Sampler: p})
			counts[[3]int(res.IDs)]++
			st.Proposed += res.Stats.Spec.Proposed
			st.Accepted += res.Stats.Spec.Accepted
			st.Rounds += res.Stats.Spec.Rounds
		}
		e.Close()
		chi, df := 0.0, -1
		for k, c := range counts {
			if want[k] == 0 {
				t.Fatalf("%s: %v has probability 0 but came %v times", name, k, c)
			}
		}
		for k, pr := range want {
			exp := pr * N
			chi += (counts[k] - exp) * (counts[k] - exp) / exp
			df++
		}
		pv := 1 - distuv.ChiSquared{K: float64(df)}.CDF(chi)
		t.Logf("%s: chi2 %.1f df %d p-value %.3f; %d rounds, %d of %d guesses kept", name, chi, df, pv, st.Rounds, st.Accepted, st.Proposed)
		if pv < 0.001 {
			t.Errorf("%s: the output does not follow the target's distribution: chi2 %.1f df %d p %.2g", name, chi, df, pv)
		}
		if st.Accepted == 0 || st.Accepted == st.Proposed || st.Rounds <= N {
			t.Errorf("%s: %d of %d kept in %d rounds: both branches and several rounds per reply are needed", name, st.Accepted, st.Proposed, st.Rounds)
		}
	}
}

func TestSetSpeculationErrors(t *testing.T) {
	m := newFake(models.WindowHalf, testCtx)
	e := New(m)
	defer e.Close()
	good := speculative.Config{Method: speculative.NGram, K: 3}
	if err := e.SetSpeculation(good); err != nil {
		t.Fatal(err)
	}
	other := newBigram(1)
	other.Meta.VocabSize = 69
	for name, c := range map[string]speculative.Config{
		"no draft":         {Method: speculative.Draft},
		"other vocab size": {Method: speculative.Draft, Draft: other},
		"k 17":             {Method: speculative.NGram, K: 17},
	} {
		err := e.SetSpeculation(c)
		if err == nil {
			t.Errorf("%s: no error", name)
			continue
		}
		t.Logf("%s: %v", name, err)
		if e.Speculation() != good {
			t.Fatalf("%s: a failed SetSpeculation changed the setting", name)
		}
	}
	if err := New(nil).SetSpeculation(good); err == nil {
		t.Fatal("nil model: no error")
	}
	// Off again: plain decoding, no speculative stats.
	if err := e.SetSpeculation(speculative.Config{}); err != nil {
		t.Fatal(err)
	}
	if res := run(t, e, Request{Prompt: loopy(6), MaxTokens: 5, Sampler: knobs["greedy"]}); res.Stats.Spec.Method != speculative.Off || res.Stats.Spec.Rounds != 0 {
		t.Fatalf("off: stats %+v", res.Stats.Spec)
	}
}

// TestSpeculativeStopAndPoll: Stop from inside a round ends the reply right
// after the current token; polled text adds up to the result and is the
// decode of the ids. A self-draft keeps every guess, sampled or not.
func TestSpeculativeStopAndPoll(t *testing.T) {
	m := newFake(models.WindowHalf, 256)
	e := New(m)
	defer e.Close()
	e.SetSpeculation(speculative.Config{Method: speculative.Draft, K: 4, Draft: m})
	p := knobs["sampled"]
	var ids int
	r := startAfter(t, e, Request{Prompt: prompt(3, 0), MaxTokens: 1000, Sampler: p}, 6, func(r *Reply) {
		ids = len(r.g.ctx) - 3 // tokens taken so far (the reply's goroutine)
		r.Stop()
	})
	res := r.Wait()
	if res.Reason != ReasonStopped || len(res.IDs) != ids {
		t.Fatalf("reason %q after %d ids; want stopped after %d", res.Reason, len(res.IDs), ids)
	}
	r, _ = e.Start(Request{Prompt: prompt(3, 1), MaxTokens: 200, Sampler: p})
	var sb strings.Builder
	for {
		d := r.Poll()
		sb.WriteString(d.Text)
		if d.Done {
			if sb.String() != d.Result.Text || d.Result.Text != m.Tok.(*fakeTok).Decode(d.Result.IDs) {
				t.Fatalf("polled %q, result %q", sb.String(), d.Result.Text)
			}
			if s := d.Result.Stats.Spec; s.AcceptanceRate() != 1 || s.TokensPerPass() < 4.5 {
				t.Fatalf("self-draft: acceptance %.2f, %.2f tokens per pass", s.AcceptanceRate(), s.TokensPerPass())
			}
			break
		}
	}
}

// TestSpeculativeCourseGreedy: on the course checkpoints greedy speculative
// output equals the course's greedy ids (golden <name>.json, prompts that
// fit and the 300-token one that overflows the context) for a draft model
// and the n-gram and prompt-lookup drafters.
func TestSpeculativeCourseGreedy(t *testing.T) {
	tiny := loadCourse(t, "tiny.pt")
	for _, c := range []struct{ name, key, draft string }{
		{"tiny", "greedy_cache", "tiny-classic.pt"},
		{"student", "greedy_cache", "tiny.pt"},
		{"tiny-classic", "greedy", "tiny.pt"},
	} {
		t.Run(c.name, func(t *testing.T) {
			target := loadCourse(t, c.name+".pt")
			draft := tiny
			if c.draft != "tiny.pt" {
				draft = loadCourse(t, c.draft)
			}
			raw, err := os.ReadFile(filepath.Join(testmodels.Dir(t), "course", "golden", c.name+".json"))
			if err != nil {
				t.Skipf("golden file: %v", err)
			}
			var g struct{ Prompts []map[string]json.RawMessage }
			if err := json.Unmarshal(raw, &g); err != nil {
				t.Fatal(err)
			}
			for _, cfg := range []speculative.Config{
				{Method: speculative.Draft, K: 4, Draft: draft},
				{Method: speculative.NGram, K: 5},
				{Method: speculative.Lookup, K: 8},
			} {
				e := New(target)
				if err := e.SetSpeculation(cfg); err != nil {
					t.Fatal(err)
				}
				for _, p := range g.Prompts {
					var key string
					var ids, want []int
					var n int
					for field, dst := range map[string]any{"key": &key, "prompt_ids": &ids, "max_new_tokens": &n, c.key: &want} {
						if err := json.Unmarshal(p[field], dst); err != nil {
							t.Fatalf("%s: %v", field, err)
						}
					}
					res := run(t, e, Request{Prompt: ids, MaxTokens: n, Sampler: sampler.Params{Greedy: true}})
					if !slices.Equal(res.IDs, want) {
						t.Errorf("%v %s: got %v\nwant %v", cfg.Method, key, res.IDs, want)
					}
					s := res.Stats.Spec
					t.Logf("%v k=%d %s: acceptance %.2f, %.2f tokens/round, %.2f tokens/target pass", cfg.Method, s.K, key, s.AcceptanceRate(), s.MeanAccepted(), s.TokensPerPass())
				}
				e.Close()
			}
		})
	}
}

// TestRoundDoesNotAllocate: a speculative round in the steady state
// allocates nothing beyond the growth of the reply's slices.
func TestRoundDoesNotAllocate(t *testing.T) {
	for name, cfg := range map[string]speculative.Config{
		"draft": {Method: speculative.Draft, K: 4, Draft: newBigram(2)},
		"ngram": {Method: speculative.NGram, K: 4},
	} {
		m := newBigram(1)
		m.setContext(1 << 14)
		e := New(m)
		if err := e.SetSpeculation(cfg); err != nil {
			t.Fatal(err)
		}
		r := &Reply{req: Request{Prompt: loopy(8), MaxTokens: 1 << 30, Sampler: knobs["penalties"]}, start: time.Now(), done: make(chan struct{})}
		r.spec, r.drafter = e.spec, e.drafter
		r.buf = make([]byte, 0, 1<<20)
		g := e.begin(r)
		g.ctx = slices.Grow(g.ctx, 1<<14)
		g.cached = slices.Grow(g.cached, 1<<14)
		g.ids = make([]int, 0, 1<<14)
		g.text = make([]byte, 0, 1<<20)
		for range 50 {
			g.round()
		}
		if a := testing.AllocsPerRun(200, func() { g.round() }); a != 0 || g.reason != "" {
			t.Errorf("%s: %v allocs per round (reason %q)", name, a, g.reason)
		}
		e.Close()
	}
}

func ExampleEngine_SetSpeculation() {
	m := newFake(models.WindowHalf, 64)
	e := New(m)
	defer e.Close()
	// Draft with a second model (here the target itself, so every guess is
	// kept); speculative.NGram and speculative.Lookup need no model.
	if err := e.SetSpeculation(speculative.Config{Method: speculative.Draft, K: 4, Draft: m}); err != nil {
		panic(err)
	}
	r, _ := e.Start(Request{Prompt: []int{1, 2, 3}, MaxTokens: 20, Sampler: sampler.Params{Greedy: true}})
	s := r.Wait().Stats.Spec
	fmt.Printf("%v: %d rounds, acceptance %.2f, %.1f tokens per target pass, first position %.2f\n",
		s.Method, s.Rounds, s.AcceptanceRate(), s.TokensPerPass(), s.PosRate(0))
	// Output: draft: 4 rounds, acceptance 1.00, 5.0 tokens per target pass, first position 1.00
}

// badDrafter returns whatever it is told to.
type badDrafter struct {
	guesses []int
	q       [][]float64
	err     error
}

func (d *badDrafter) Reset([]int, uint64) {}
func (d *badDrafter) Propose([]int, int, sampler.Params) ([]int, [][]float64, error) {
	return d.guesses, d.q, d.err
}

// TestBadDrafterEndsWithError: a drafter's error, an id outside the
// vocabulary or q rows that do not fit end the reply with an error, never a
// panic, and the engine works afterwards.
func TestBadDrafterEndsWithError(t *testing.T) {
	m := newFake(models.WindowHalf, testCtx)
	e := New(m)
	defer e.Close()
	for name, d := range map[string]*badDrafter{
		"error":       {err: fmt.Errorf("boom")},
		"id too big":  {guesses: []int{1, 70}},
		"negative id": {guesses: []int{-1}},
		"short q":     {guesses: []int{1, 2}, q: [][]float64{make([]float64, 70)}},
		"narrow q":    {guesses: []int{1}, q: [][]float64{{1}}},
	} {
		e.mu.Lock()
		e.spec, e.drafter = speculative.Config{Method: speculative.NGram, K: 4}, d
		e.mu.Unlock()
		r, err := e.Start(Request{Prompt: prompt(3, 0), MaxTokens: 5, Sampler: knobs["sampled"]})
		if err != nil {
			t.Fatal(err)
		}
		if res := r.Wait(); res.Reason != ReasonError || res.Err == nil {
			t.Fatalf("%s: reason %q, err %v", name, res.Reason, res.Err)
		} else {
			t.Logf("%s: %v", name, res.Err)
		}
	}
	e.SetSpeculation(speculative.Config{})
	if res := run(t, e, Request{Prompt: prompt(3, 0), MaxTokens: 5, Sampler: knobs["greedy"]}); len(res.IDs) != 5 {
		t.Fatalf("after errors: %v", res.IDs)
	}
}

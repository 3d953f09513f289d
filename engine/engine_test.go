package engine

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"
	"unicode/utf8"

	"chat/engine/sampler"
	"chat/models"
	"chat/models/kvcache"
)

const testCtx = 16

// refLogits is a cold, full forward of ids from position 0.
func refLogits(t *testing.T, m *fakeModel, ids []int) []float32 {
	t.Helper()
	l, err := kvcache.NewState(m).Forward(ids, 1)
	if err != nil {
		t.Fatal(err)
	}
	return slices.Clone(l)
}

// reference is a plain transcription of the course's generate loops (§2.3
// classic: crop to the last window and run it all every step; §3.4/§10.3
// modern: prefill the last window, then either feed the new token or, when
// the cache already holds `window` tokens, restart from the latest
// window/2) using cold full forwards only. params(i) gives the knobs of
// step i.
func reference(t *testing.T, m *fakeModel, prompt []int, n int, params func(int) sampler.Params, stops []int) ([]int, string) {
	w := m.info.ContextLength
	s := sampler.New(m.info.VocabSize, params(0))
	all := slices.Clone(prompt)
	cache := slices.Clone(prompt[max(0, len(prompt)-w):])
	logits := refLogits(t, m, cache)
	var out []int
	for i := range n {
		p := params(i)
		if p.Seed != s.Params().Seed {
			s.Reset(p.Seed)
		}
		s.SetParams(p)
		if m.info.Window == models.WindowSlide {
			logits = refLogits(t, m, all[max(0, len(all)-w):])
		}
		tok, err := s.Sample(logits, all)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, tok)
		if slices.Contains(stops, tok) {
			return out, ReasonEOT
		}
		out = append(out, tok)
		if m.info.Window == models.WindowHalf {
			if len(cache) >= w {
				cache = slices.Clone(all[len(all)-w/2:])
			} else {
				cache = append(cache, tok)
			}
			logits = refLogits(t, m, cache)
		}
	}
	return out, ReasonLength
}

func fixed(p sampler.Params) func(int) sampler.Params { return func(int) sampler.Params { return p } }

func prompt(n, salt int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = (i*7 + salt*3 + 1) % 40
	}
	return p
}

func run(t testing.TB, e *Engine, req Request) Result {
	t.Helper()
	r, err := e.Start(req)
	if err != nil {
		t.Fatal(err)
	}
	res := r.Wait()
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	return res
}

var knobs = map[string]sampler.Params{
	"greedy":    {Greedy: true},
	"sampled":   {Temperature: 0.9, TopP: 0.9, Seed: 3},
	"penalties": {Temperature: 1, TopK: 8, MinP: 0.05, RepeatPenalty: 1.3, FrequencyPenalty: 0.2, PresencePenalty: 0.1, PenaltyWindow: 20, Seed: 9},
}

func rules() map[string]models.WindowRule {
	return map[string]models.WindowRule{"half": models.WindowHalf, "slide": models.WindowSlide}
}

// TestWindowRulesMatchReference: the incremental engine produces the ids of
// the plain reference for prompts shorter than, equal to and longer than
// the window, over replies that overflow it several times.
func TestWindowRulesMatchReference(t *testing.T) {
	for rname, rule := range rules() {
		for kname, p := range knobs {
			m := newFake(rule, testCtx)
			e := New(m)
			for _, n := range []int{1, 5, testCtx - 1, testCtx, testCtx + 1, 3 * testCtx} {
				want, _ := reference(t, m, prompt(n, n), 3*testCtx, fixed(p), nil)
				for _, eng := range []*Engine{e, New(m)} { // warm (reusing) and cold
					res := run(t, eng, Request{Prompt: prompt(n, n), MaxTokens: 3 * testCtx, Sampler: p})
					if !slices.Equal(res.IDs, want) {
						t.Fatalf("%s/%s prompt %d:\n got %v\nwant %v", rname, kname, n, res.IDs, want)
					}
					if res.Reason != ReasonLength {
						t.Fatalf("reason %q", res.Reason)
					}
				}
			}
			e.Close()
		}
	}
}

// TestContextFull: a reply whose budget was the context left was cut by
// the context; a smaller budget, or a reply the window rule cut, was not.
func TestContextFull(t *testing.T) {
	e := New(newFake(models.WindowHalf, testCtx))
	defer e.Close()
	for _, c := range []struct {
		prompt, budget int
		want           bool
	}{
		{5, testCtx - 5, true},
		{5, testCtx - 6, false},
		{testCtx - 1, 1, true},
		{5, 3 * testCtx, false}, // the window rule cut it and it went on
	} {
		res := run(t, e, Request{Prompt: prompt(c.prompt, 1), MaxTokens: c.budget, Sampler: knobs["greedy"]})
		if res.Reason != ReasonLength || res.ContextFull() != c.want {
			t.Errorf("prompt %d budget %d: %s, ContextFull %v, want %v", c.prompt, c.budget, res.Reason, res.ContextFull(), c.want)
		}
	}
}

// TestPrefixReuse: a prompt that extends the previous conversation reuses
// its cached prefix and gives the same ids as a cold engine.
func TestPrefixReuse(t *testing.T) {
	for rname, rule := range rules() {
		m := newFake(rule, 64)
		warm := New(m)
		defer warm.Close()
		p := knobs["sampled"]
		p1 := prompt(6, 1)
		r1 := run(t, warm, Request{Prompt: p1, MaxTokens: 8, Sampler: p})

		// Same prompt again: all cached, the last id is re-fed.
		again := run(t, warm, Request{Prompt: p1, MaxTokens: 8, Sampler: p})
		if !slices.Equal(again.IDs, r1.IDs) || again.Stats.ReusedTokens != len(p1)-1 {
			t.Fatalf("%s: same prompt: ids %v vs %v, reused %d", rname, again.IDs, r1.IDs, again.Stats.ReusedTokens)
		}

		// The conversation continues: prompt + 5 reply ids + a new turn.
		p2 := append(append(slices.Clone(p1), r1.IDs[:5]...), 39, 38)
		res := run(t, warm, Request{Prompt: p2, MaxTokens: 10, Sampler: p})
		cold := New(m)
		want := run(t, cold, Request{Prompt: p2, MaxTokens: 10, Sampler: p})
		cold.Close()
		if !slices.Equal(res.IDs, want.IDs) {
			t.Fatalf("%s: warm %v, cold %v", rname, res.IDs, want.IDs)
		}
		if res.Stats.ReusedTokens != len(p1)+5 || want.Stats.ReusedTokens != 0 {
			t.Fatalf("%s: reused warm %d cold %d, want %d and 0", rname, res.Stats.ReusedTokens, want.Stats.ReusedTokens, len(p1)+5)
		}
		// A different prompt shares nothing.
		if res := run(t, warm, Request{Prompt: []int{5, 5}, MaxTokens: 2, Sampler: p}); res.Stats.ReusedTokens != 0 {
			t.Fatalf("%s: unrelated prompt reused %d", rname, res.Stats.ReusedTokens)
		}
	}
}

// startAfter starts req with an OnText that calls at(r) once n tokens have
// produced text (from the engine goroutine, before the next token).
func startAfter(t *testing.T, e *Engine, req Request, n int, at func(*Reply)) *Reply {
	t.Helper()
	rc := make(chan *Reply, 1)
	count := 0
	req.OnText = func(string) {
		if count++; count == n {
			at(<-rc)
		}
	}
	r, err := e.Start(req)
	if err != nil {
		t.Fatal(err)
	}
	rc <- r
	return r
}

// TestStopMidReply: Stop from inside the reply ends it after the current
// token, and what was generated is the reference's prefix.
func TestStopMidReply(t *testing.T) {
	e := New(newFake(models.WindowHalf, testCtx))
	defer e.Close()
	r := startAfter(t, e, Request{Prompt: prompt(3, 0), MaxTokens: 1000, Sampler: knobs["sampled"]}, 5, (*Reply).Stop)
	res := r.Wait()
	if res.Reason != ReasonStopped || len(res.IDs) >= 1000 || len(res.IDs) < 5 {
		t.Fatalf("reason %q after %d ids", res.Reason, len(res.IDs))
	}
	want, _ := reference(t, e.m(), prompt(3, 0), len(res.IDs), fixed(knobs["sampled"]), nil)
	if !slices.Equal(res.IDs, want) {
		t.Fatalf("stopped reply %v is not a prefix of the reference %v", res.IDs, want)
	}
	// The engine is free again and the stop flag does not leak into the next reply.
	if res := run(t, e, Request{Prompt: prompt(3, 0), MaxTokens: 4, Sampler: knobs["greedy"]}); res.Reason != ReasonLength {
		t.Fatalf("next reply: %q", res.Reason)
	}
}

// m returns the engine's fake model for the reference.
func (e *Engine) m() *fakeModel { return e.model.(*fakeModel) }

func TestSetSamplerMidReply(t *testing.T) {
	for rname, rule := range rules() {
		e := New(newFake(rule, testCtx))
		first, then := knobs["sampled"], sampler.Params{Greedy: true, Seed: 3}
		var switchedAt int
		r := startAfter(t, e, Request{Prompt: prompt(4, 2), MaxTokens: 40, Sampler: first}, 6, func(r *Reply) {
			switchedAt = len(r.g.ctx) - 4 // tokens sampled so far (the reply's goroutine)
			e.SetSampler(then)
		})
		res := r.Wait()
		want, _ := reference(t, e.m(), prompt(4, 2), 40, func(i int) sampler.Params {
			if i < switchedAt {
				return first
			}
			return then
		}, nil)
		if !slices.Equal(res.IDs, want) {
			t.Fatalf("%s: switched at %d:\n got %v\nwant %v", rname, switchedAt, res.IDs, want)
		}
		// Sanity: the switch changed something.
		if all, _ := reference(t, e.m(), prompt(4, 2), 40, fixed(first), nil); slices.Equal(all, want) {
			t.Fatalf("%s: greedy after token %d changed nothing", rname, switchedAt)
		}
		e.Close()
	}
}

func TestStopIDEndsWithEOT(t *testing.T) {
	m := newFake(models.WindowHalf, testCtx)
	e := New(m)
	defer e.Close()
	p := knobs["greedy"]
	free, _ := reference(t, m, prompt(5, 0), 20, fixed(p), nil)
	stop := free[3]
	k := slices.Index(free, stop)
	res := run(t, e, Request{Prompt: prompt(5, 0), MaxTokens: 20, Sampler: p, StopIDs: []int{-1, stop}})
	if res.Reason != ReasonEOT || res.StopID != stop || !slices.Equal(res.IDs, free[:k]) {
		t.Fatalf("reason %q stop %d ids %v; want eot, %d, %v", res.Reason, res.StopID, res.IDs, stop, free[:k])
	}
	if res.Stats.GenTokens != k+1 {
		t.Fatalf("GenTokens %d, want %d (the stop id counts)", res.Stats.GenTokens, k+1)
	}
	if res.Text != m.Tok.(*fakeTok).Decode(res.IDs) {
		t.Fatalf("text %q includes more than the reply ids", res.Text)
	}
}

func TestBudgetEndsWithLength(t *testing.T) {
	e := New(newFake(models.WindowSlide, testCtx))
	defer e.Close()
	res := run(t, e, Request{Prompt: prompt(2, 0), MaxTokens: 7, Sampler: knobs["sampled"]})
	if res.Reason != ReasonLength || len(res.IDs) != 7 || res.Stats.GenTokens != 7 {
		t.Fatalf("reason %q, %d ids", res.Reason, len(res.IDs))
	}
	if res.Stats.PromptTokens != 2 || res.Stats.KVCap != testCtx || res.Stats.KVUsed != e.last.Len() {
		t.Fatalf("stats %+v", res.Stats)
	}
}

func TestStartWhileRunning(t *testing.T) {
	e := New(newFake(models.WindowHalf, testCtx))
	defer e.Close()
	inside, release := make(chan struct{}), make(chan struct{})
	r := startAfter(t, e, Request{Prompt: prompt(3, 0), MaxTokens: 50, Sampler: knobs["greedy"]}, 1, func(*Reply) {
		close(inside)
		<-release
	})
	<-inside
	if _, err := e.Start(Request{Prompt: prompt(3, 0), MaxTokens: 5}); err != ErrBusy {
		t.Fatalf("Start while running: %v, want ErrBusy", err)
	}
	close(release)
	r.Wait()
	if _, err := e.Start(Request{Prompt: prompt(3, 0), MaxTokens: 5}); err != nil {
		t.Fatalf("Start after Wait: %v", err)
	}
}

// TestPollCoalesces: text produced between two polls comes back as one
// piece; the pieces add up to Result.Text, which is the tokenizer's decode
// of the ids, and every piece is valid UTF-8.
func TestPollCoalesces(t *testing.T) {
	m := newFake(models.WindowHalf, testCtx)
	e := New(m)
	defer e.Close()
	r, err := e.Start(Request{Prompt: prompt(3, 0), MaxTokens: 60, Sampler: knobs["sampled"]})
	if err != nil {
		t.Fatal(err)
	}
	res := r.Wait()
	d := r.Poll()
	if !d.Done || d.Text != res.Text || d.Result.Reason != res.Reason {
		t.Fatalf("one Poll after Wait: done %v text %q, want all of %q", d.Done, d.Text, res.Text)
	}
	if d := r.Poll(); !d.Done || d.Text != "" {
		t.Fatalf("second Poll: %+v", d)
	}
	if res.Text != m.Tok.(*fakeTok).Decode(res.IDs) {
		t.Fatalf("text %q, decode %q", res.Text, m.Tok.(*fakeTok).Decode(res.IDs))
	}

	// Polling while it runs.
	r, _ = e.Start(Request{Prompt: prompt(3, 1), MaxTokens: 200, Sampler: knobs["sampled"]})
	var sb strings.Builder
	for {
		d := r.Poll()
		if !utf8.ValidString(d.Text) {
			t.Fatalf("piece %q is not valid UTF-8", d.Text)
		}
		sb.WriteString(d.Text)
		if d.Done {
			if sb.String() != d.Result.Text || d.Result.Text != m.Tok.(*fakeTok).Decode(d.Result.IDs) {
				t.Fatalf("polled %q, result %q", sb.String(), d.Result.Text)
			}
			break
		}
		time.Sleep(50 * time.Microsecond)
	}
}

func TestOnTextGetsEveryPiece(t *testing.T) {
	e := New(newFake(models.WindowSlide, testCtx))
	defer e.Close()
	var sb strings.Builder
	res := run(t, e, Request{Prompt: prompt(3, 0), MaxTokens: 30, Sampler: knobs["sampled"], OnText: func(s string) { sb.WriteString(s) }})
	if sb.String() != res.Text {
		t.Fatalf("OnText %q, Text %q", sb.String(), res.Text)
	}
}

func TestInvalidRequests(t *testing.T) {
	m := newFake(models.WindowHalf, testCtx)
	e := New(m)
	for name, req := range map[string]Request{
		"empty prompt": {MaxTokens: 3},
		"id too big":   {Prompt: []int{1, m.info.VocabSize}, MaxTokens: 3},
		"negative id":  {Prompt: []int{-1}, MaxTokens: 3},
		"no budget":    {Prompt: []int{1}},
		"nan knob":     {Prompt: []int{1}, MaxTokens: 3, Sampler: sampler.Params{TopP: nan()}},
	} {
		if _, err := e.Start(req); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	e.Close()
	e.Close() // twice is fine
	if _, err := e.Start(Request{Prompt: []int{1}, MaxTokens: 1}); err != ErrClosed {
		t.Fatalf("Start after Close: %v", err)
	}
	if _, err := New(nil).Start(Request{Prompt: []int{1}, MaxTokens: 1}); err == nil {
		t.Fatal("nil model: no error")
	}
}

func nan() float64 { var z float64; return z / z }

func TestForwardErrorEndsWithError(t *testing.T) {
	m := newFake(models.WindowHalf, testCtx)
	free, _ := reference(t, m, prompt(4, 0), 10, fixed(knobs["greedy"]), nil)
	m.FailOn = free[2] // fails when the third generated id is fed
	e := New(m)
	defer e.Close()
	r, _ := e.Start(Request{Prompt: prompt(4, 0), MaxTokens: 10, Sampler: knobs["greedy"]})
	res := r.Wait()
	if res.Reason != ReasonError || res.Err == nil || !slices.Equal(res.IDs, free[:3]) {
		t.Fatalf("reason %q err %v ids %v", res.Reason, res.Err, res.IDs)
	}
	// The engine recovers: a clean prompt works.
	m.FailOn = -1
	if res := run(t, e, Request{Prompt: prompt(4, 0), MaxTokens: 5, Sampler: knobs["greedy"]}); !slices.Equal(res.IDs, free[:5]) {
		t.Fatalf("after an error: %v", res.IDs)
	}
}

// TestNoGoroutineLeak: in a synctest bubble every goroutine must have
// exited when the function returns, or the test fails.
func TestNoGoroutineLeak(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := New(newFake(models.WindowHalf, testCtx))
		run(t, e, Request{Prompt: prompt(3, 0), MaxTokens: 5, Sampler: knobs["greedy"]})
		r, err := e.Start(Request{Prompt: prompt(3, 0), MaxTokens: 1 << 30, Sampler: knobs["sampled"]})
		if err != nil {
			t.Fatal(err)
		}
		e.Close() // stops the running reply
		if res := r.Wait(); res.Reason != ReasonStopped {
			t.Fatalf("reason %q after Close", res.Reason)
		}
		New(newFake(models.WindowSlide, testCtx)).Close() // idle engine
	})
}

// TestDecodeStepDoesNotAllocate: forward + sample + detok + reply buffer in
// the steady state, with the result slices already grown.
// The samplers llama.cpp has beyond the course's are on in some of them:
// DRY with its breakers made from the vocabulary, XTC, top-nσ, typical, and
// mirostat.
func TestDecodeStepDoesNotAllocate(t *testing.T) {
	added := sampler.Params{Temperature: 0.9, TopP: 0.95, DRYMultiplier: 0.8, DRYBase: 1.75, DRYAllowedLength: 2, DRYPenaltyLastN: -1,
		DRYBreakers: sampler.JoinBreakers(sampler.DefaultBreakers), TopNSigma: 2, TypicalP: 0.95, XTCProbability: 0.5, XTCThreshold: 0.1, Seed: 5}
	miro := sampler.Params{Temperature: 1, Mirostat: 2, MirostatTau: 5, MirostatEta: 0.1, DRYMultiplier: 0.5, DRYBase: 2, DRYPenaltyLastN: 64, Seed: 6}
	for _, c := range []struct {
		rule string
		p    sampler.Params
	}{{"half", knobs["penalties"]}, {"slide", knobs["penalties"]}, {"half", added}, {"slide", miro}} {
		rname, rule := c.rule, rules()[c.rule]
		e := New(newFake(rule, testCtx))
		r := &Reply{req: Request{Prompt: prompt(5, 0), MaxTokens: 1 << 30, Sampler: c.p}, start: time.Now(), done: make(chan struct{})}
		r.buf = make([]byte, 0, 1<<20)
		g := e.begin(r)
		if b := g.smp.Breakers(); c.p.DRYMultiplier != 0 && (b == nil || b.Key() != c.p.DRYBreakers) {
			t.Errorf("%+v: the sampler has breakers %v", c.p, b)
		}
		g.ctx = slices.Grow(g.ctx, 1<<16)
		g.cached = slices.Grow(g.cached, 1<<16)
		g.ids = make([]int, 0, 1<<16)
		g.text = make([]byte, 0, 1<<20)
		for range 50 {
			g.step()
		}
		if a := testing.AllocsPerRun(500, func() { g.step() }); a != 0 || g.reason != "" {
			t.Errorf("%s: %v allocs per step (reason %q)", rname, a, g.reason)
		}
		// Watched (the next-token view): a full record every step, as Poll
		// asks, still allocates nothing.
		r.observe.Store(uint32(ObserveSteps))
		g.step()
		if a := testing.AllocsPerRun(500, func() { r.want.Store(true); g.step() }); a != 0 || g.reason != "" || !r.recNew {
			t.Errorf("%s: %v allocs per recorded step (reason %q)", rname, a, g.reason)
		}
		e.Close()
	}
}

func ExampleEngine() {
	e := New(newFake(models.WindowHalf, testCtx))
	defer e.Close()
	r, err := e.Start(Request{Prompt: []int{1, 2, 3}, MaxTokens: 4, Sampler: sampler.Params{Greedy: true}})
	if err != nil {
		panic(err)
	}
	res := r.Wait()
	fmt.Println(len(res.IDs), res.Reason)
	// Output: 4 length
}

// WindowKeep is what a window cut keeps: after the first cut, of a reply
// whose prompt fills the window, the cache holds WindowKeep ids (the
// session's notice quotes it).
func TestWindowKeep(t *testing.T) {
	for rname, rule := range rules() {
		e := New(newFake(rule, testCtx))
		want := map[string]int{"half": testCtx / 2, "slide": testCtx}[rname]
		res := run(t, e, Request{Prompt: prompt(testCtx, 1), MaxTokens: 2, Sampler: knobs["greedy"]})
		if e.WindowKeep() != want || res.Stats.WindowCuts != 1 || res.Stats.KVUsed != want {
			t.Errorf("%s: WindowKeep %d, %d cuts, %d ids cached; want %d, 1, %d", rname, e.WindowKeep(), res.Stats.WindowCuts, res.Stats.KVUsed, want, want)
		}
		e.Close()
	}
}

// duringTok runs during, once, inside the first TokenBytes call after it
// is armed: in the middle of a build of breakers.
type duringTok struct {
	*fakeTok
	armed  atomic.Bool
	during func()
}

func (t *duringTok) TokenBytes(id int) []byte {
	if t.armed.CompareAndSwap(true, false) {
		t.during()
	}
	return t.fakeTok.TokenBytes(id)
}

// TestBreakersForConcurrent: a build of breakers leaves breakersFor's lock
// free, so a reply asking for other breakers meanwhile is not held up (the
// lock was held through the build); replies asking for the same breakers
// at once share one build. Checked inside the build, by TryLock, with no
// timeout to wait out. Run with -race.
func TestBreakersForConcurrent(t *testing.T) {
	m := newFake(models.WindowHalf, testCtx)
	tok := &duringTok{fakeTok: newFakeTok()}
	m.Tok = tok
	e := New(m)
	defer e.Close()
	slow, fast := sampler.JoinBreakers([]string{"é"}), sampler.JoinBreakers([]string{"ab"})
	var other *sampler.Breakers
	tok.during = func() {
		if !e.brkMu.TryLock() {
			t.Error("breakersFor holds its lock while it builds: a reply asking for other breakers would wait")
			return // asking here would deadlock
		}
		e.brkMu.Unlock()
		other = e.breakersFor(fast)
	}
	tok.armed.Store(true)
	if b := e.breakersFor(slow); b.Key() != slow {
		t.Errorf("breakers %q, want %q", b.Key(), slow)
	}
	if tok.armed.Load() {
		t.Fatal("the build read no token's bytes: the check inside it did not run")
	}
	if other != nil && other.Key() != fast {
		t.Errorf("breakers %q, want %q", other.Key(), fast)
	}

	var wg sync.WaitGroup
	all := make([]*sampler.Breakers, 16)
	for i := range all {
		wg.Go(func() { all[i] = e.breakersFor(slow) })
	}
	wg.Wait()
	for _, b := range all {
		if b != all[0] || b.Key() != slow {
			t.Fatalf("replies asking for the same breakers got %p %q and %p %q", b, b.Key(), all[0], all[0].Key())
		}
	}
}

package engine

import (
	"math"
	"slices"
	"testing"
	"testing/synctest"

	"chat/engine/sampler"
	"chat/engine/speculative"
	"chat/models"
)

// TestRecordIsTheSamplersOwn: every step's record (--trace's and the
// next-token view's) carries, after the chain, the very numbers of the
// distribution the sampler drew that token from (its Probs slice, read at
// the moment of the record), the drawn id of the reply, the sampler's own
// stage counts, and before the chain the softmax of the logits the token
// was sampled from.
func TestRecordIsTheSamplersOwn(t *testing.T) {
	for kname, p := range knobs {
		m := newFake(models.WindowHalf, testCtx)
		e := New(m)
		var recs []StepRecord
		var r *Reply
		req := Request{Prompt: prompt(5, 1), MaxTokens: 40, Sampler: p, OnStep: func(rec *StepRecord) {
			probs := r.g.smp.Probs()
			for _, c := range rec.After[:rec.NAfter] {
				if c.After != probs[c.ID] {
					t.Fatalf("%s step %d: id %d after %v, the sampler's %v", kname, rec.Token, c.ID, c.After, probs[c.ID])
				}
			}
			for _, c := range rec.Before[:rec.NBefore] {
				if c.After != probs[c.ID] {
					t.Fatalf("%s step %d: before-list id %d after %v, the sampler's %v", kname, rec.Token, c.ID, c.After, probs[c.ID])
				}
			}
			if rec.Drawn.After != probs[rec.Drawn.ID] {
				t.Fatalf("%s step %d: drawn after %v, the sampler's %v", kname, rec.Token, rec.Drawn.After, probs[rec.Drawn.ID])
			}
			// The after list is the likeliest of that distribution.
			sorted := slices.Clone(probs)
			slices.SortFunc(sorted, func(a, b float64) int { return -cmpF(a, b) })
			for i, c := range rec.After[:rec.NAfter] {
				if c.After != sorted[i] {
					t.Fatalf("%s step %d: after[%d] %v, the %d-th largest is %v", kname, rec.Token, i, c.After, i+1, sorted[i])
				}
			}
			h := 0.0
			for _, q := range probs {
				if q > 0 {
					h -= q * math.Log2(q)
				}
			}
			if math.Abs(h-rec.EntropyAfter) > 1e-12 {
				t.Fatalf("%s: entropy after %v, want %v", kname, rec.EntropyAfter, h)
			}
			recs = append(recs, *rec)
		}}
		// OnStep runs in the reply's goroutine from the first token on;
		// hand it the reply first.
		rc := make(chan *Reply, 1)
		check := req.OnStep
		req.OnStep = func(rec *StepRecord) {
			if r == nil {
				r = <-rc
			}
			check(rec)
		}
		rr, err := e.Start(req)
		if err != nil {
			t.Fatal(err)
		}
		rc <- rr
		res := rr.Wait()
		if len(recs) != res.Stats.GenTokens {
			t.Fatalf("%s: %d records for %d tokens", kname, len(recs), res.Stats.GenTokens)
		}
		// The drawn ids are the reply's, and the before side is the
		// softmax of the reference logits at that point.
		ctx := slices.Clone(prompt(5, 1))
		for i, rec := range recs {
			if i < len(res.IDs) && rec.Drawn.ID != res.IDs[i] || rec.Token != i+1 || rec.Pos != len(ctx) {
				t.Fatalf("%s: record %d drew %d at token %d pos %d; the reply has %d at pos %d", kname, i, rec.Drawn.ID, rec.Token, rec.Pos, res.IDs[i], len(ctx))
			}
			if len(ctx) < testCtx { // before the window rule: a cold forward gives the same logits
				l := refLogits(t, m, ctx)
				_, z, bits := beforeStats(l)
				mx := float64(slices.Max(l))
				for _, c := range rec.Before[:rec.NBefore] {
					if want := math.Exp(float64(l[c.ID])-mx) / z; math.Abs(c.Before-want) > 1e-15 {
						t.Fatalf("%s: before %v, want %v", kname, c.Before, want)
					}
				}
				if rec.EntropyBefore != bits {
					t.Fatalf("%s: entropy before %v, want %v", kname, rec.EntropyBefore, bits)
				}
				if rec.Stages.Vocab != m.info.VocabSize || rec.Stages.Applied[sampler.StageGreedy] != p.Greedy {
					t.Fatalf("%s: stages %+v", kname, rec.Stages)
				}
			}
			ctx = append(ctx, rec.Drawn.ID)
		}
		e.Close()
	}
}

func cmpF(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// TestStepModeSameTokens: a reply in step mode waits before each token
// (or speculative round) until Step, shows the next token's distribution
// while it waits (made again when the knobs change), and produces the ids
// of free running with the same seed — plainly and speculating.
func TestStepModeSameTokens(t *testing.T) {
	for kname, p := range knobs {
		for _, spec := range []string{"", "self draft"} {
			synctest.Test(t, func(t *testing.T) {
				m := newFake(models.WindowHalf, testCtx)
				e := New(m)
				defer e.Close()
				if spec != "" {
					if err := e.SetSpeculation(speculative.Config{Method: speculative.Draft, K: 3, Draft: newFake(models.WindowHalf, testCtx)}); err != nil {
						t.Fatal(err)
					}
				}
				req := Request{Prompt: loopy(6), MaxTokens: 30, Sampler: p}
				free := run(t, e, req)

				req.Step, req.Observe = true, ObserveSteps|ObserveTokens
				r, err := e.Start(req)
				if err != nil {
					t.Fatal(err)
				}
				var ids []int
				var marks []Mark
				steps := 0
				for {
					synctest.Wait() // the reply is paused (or done)
					d := r.Poll()
					marks = append(marks, d.Marks...)
					if d.Done {
						ids = d.Result.IDs
						break
					}
					if spec == "" && (d.Stats.GenTokens != steps || len(marks) != steps) {
						t.Fatalf("%s %s: %d tokens after %d steps", kname, spec, d.Stats.GenTokens, steps)
					}
					if spec == "" && (d.Preview == nil || !d.Preview.Preview || d.Preview.Drawn.ID != -1 || d.Preview.Token != steps+1) {
						t.Fatalf("%s: no preview while paused after %d steps: %+v", kname, steps, d.Preview)
					}
					if spec == "" && steps > 0 && (d.Step == nil || d.Step.Token != steps || d.Step.Drawn.ID != marks[steps-1].ID) {
						t.Fatalf("%s: step %d's record: %+v", kname, steps, d.Step)
					}
					r.Step()
					steps++
				}
				if !slices.Equal(ids, free.IDs) {
					t.Fatalf("%s %s: step mode gave %v, free running %v", kname, spec, ids, free.IDs)
				}
				if spec == "" && steps < len(ids) {
					t.Fatalf("%s: %d steps for %d tokens", kname, steps, len(ids))
				}
				if spec != "" && (steps >= len(ids) || free.Stats.Spec.Accepted == 0) {
					t.Fatalf("%s %s: %d steps for %d tokens, but rounds accepted guesses", kname, spec, steps, len(ids))
				}
			})
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// TestPreviewFollowsKnobs: while paused, a knob change gives a new preview
// at once, and the token then drawn comes from the previewed distribution.
func TestPreviewFollowsKnobs(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		e := New(newFake(models.WindowHalf, testCtx))
		defer e.Close()
		r, err := e.Start(Request{Prompt: prompt(4, 2), MaxTokens: 5, Sampler: knobs["sampled"], Step: true, Observe: ObserveSteps})
		if err != nil {
			t.Fatal(err)
		}
		synctest.Wait()
		first := r.Poll().Preview
		if first == nil || !first.Preview {
			t.Fatalf("no preview: %+v", first)
		}
		hot := knobs["sampled"]
		hot.Temperature, hot.TopP = 2, 1
		r.SetSampler(hot)
		synctest.Wait()
		again := r.Poll().Preview
		if again == nil || !again.Preview || again.Params != hot || again.EntropyAfter <= first.EntropyAfter || again.Stages.Applied[sampler.StageTopP] {
			t.Fatalf("the preview did not follow the knobs: before %+v after %+v", first, again)
		}
		r.Step()
		synctest.Wait()
		d := r.Poll()
		drawn := d.Step
		if d.Preview == nil || d.Preview.Token != 2 {
			t.Fatalf("no preview of the second token: %+v", d.Preview)
		}
		if drawn == nil || drawn.Preview || drawn.Token != 1 || drawn.NAfter != again.NAfter || drawn.After != again.After {
			t.Fatalf("the drawn step's distribution is not the preview's: %+v vs %+v", drawn, again)
		}
		r.Stop()
		if res := r.Wait(); res.Reason != ReasonStopped {
			t.Fatalf("reason %s", res.Reason)
		}
	})
}

// TestMarksFollowTheReply: the token view's marks are the reply's ids,
// each with the probability it was drawn with; accepted guesses are marked
// as drafted, as many as the round statistics count.
func TestMarksFollowTheReply(t *testing.T) {
	for _, spec := range []bool{false, true} {
		e := New(newFake(models.WindowHalf, testCtx))
		if spec {
			e.SetSpeculation(speculative.Config{Method: speculative.Draft, K: 3, Draft: newFake(models.WindowHalf, testCtx)})
		}
		r, err := e.Start(Request{Prompt: loopy(8), MaxTokens: 40, Sampler: knobs["greedy"], Observe: ObserveTokens})
		if err != nil {
			t.Fatal(err)
		}
		res := r.Wait()
		marks := r.Poll().Marks
		drafted := 0
		for i, mk := range marks {
			if i >= len(res.IDs) || mk.ID != res.IDs[i] || mk.Prob != 1 { // greedy: one-hot
				t.Fatalf("spec %v: mark %d %+v, reply ids %v", spec, i, mk, res.IDs)
			}
			drafted += btoi(mk.Drafted)
		}
		if len(marks) != len(res.IDs) || drafted != res.Stats.Spec.Accepted || spec && drafted == 0 {
			t.Fatalf("spec %v: %d marks (%d drafted) for %d ids, %d accepted", spec, len(marks), drafted, len(res.IDs), res.Stats.Spec.Accepted)
		}
		e.Close()
	}
}

// TestBlockMap: the conversation's blocks are its own, those it took from
// the prefix cache shared; the cache's others are cached; blocks the cache
// had to give up show as evicted.
func TestBlockMap(t *testing.T) {
	m := newFake(models.WindowHalf, 64)
	e := NewWithOptions(m, Options{BlockSize: 4, KVMem: 1})
	defer e.Close()
	count := func(bm []BlockState) map[BlockState]int {
		c := map[BlockState]int{}
		for _, s := range bm {
			c[s]++
		}
		return c
	}
	a := prompt(20, 3)
	run(t, e, Request{Prompt: a, MaxTokens: 4, Sampler: knobs["greedy"]})
	bm := e.BlockMap(nil, nil)
	if len(bm) != e.pool.Blocks() {
		t.Fatalf("%d states for %d blocks", len(bm), e.pool.Blocks())
	}
	// 23 positions cached (the last token is not fed): 5 full blocks, also
	// in the prefix tree, and a partial one of its own.
	if c := count(bm); c[BlockShared] != 5 || c[BlockOwn] != 1 || c[BlockCached] != 0 {
		t.Fatalf("after one reply: %v", c)
	}
	// A reply on another prompt: the first reply's blocks are the cache's.
	r, err := e.Start(Request{Prompt: prompt(9, 4), MaxTokens: 1, Sampler: knobs["greedy"]})
	if err != nil {
		t.Fatal(err)
	}
	r.Wait()
	bm = e.BlockMap(r, bm)
	if c := count(bm); c[BlockCached] != 5 || c[BlockShared] != 2 || c[BlockOwn] != 1 || c[BlockEvicted] != 0 {
		t.Fatalf("second conversation: %v", c)
	}
	// The cache gives up two of the first reply's blocks: they show as
	// evicted for a while, then as free.
	e.kvmu.Lock()
	freed := e.tree.Evict(2)
	e.kvmu.Unlock()
	bm = e.BlockMap(r, bm)
	if c := count(bm); freed < 2 || c[BlockEvicted] != freed || c[BlockCached] != 5-freed {
		t.Fatalf("after evicting %d: %v", freed, c)
	}
	for range evictedFor + 1 {
		bm = e.BlockMap(r, bm)
	}
	if c := count(bm); c[BlockEvicted] != 0 {
		t.Fatalf("evicted marks stay: %v", c)
	}
	// A reply on the first prompt again reuses what is left of its blocks.
	r, err = e.Start(Request{Prompt: append(slices.Clone(a), 1, 2, 3, 4, 5), MaxTokens: 1, Sampler: knobs["greedy"]})
	if err != nil {
		t.Fatal(err)
	}
	r.Wait()
	if c := count(e.BlockMap(r, nil)); c[BlockShared] < 5-freed {
		t.Fatalf("reused prefix not shared: %v", c)
	}
}

// A reply watched by the next-token view that finished before its first
// Poll (a short reply on a fast model: 30 tokens take 30 ms, the UI polls
// at 30 Hz) made no record, so the view said "shown from the next token
// on" after every such reply. Its first step makes one.
func TestShortReplyHasARecord(t *testing.T) {
	e := New(newFake(models.WindowHalf, testCtx))
	defer e.Close()
	r, err := e.Start(Request{Prompt: prompt(4, 2), MaxTokens: 3, Sampler: knobs["sampled"], Observe: ObserveSteps})
	if err != nil {
		t.Fatal(err)
	}
	r.Wait()
	if d := r.Poll(); !d.Done || d.Step == nil || d.Step.Token != 1 {
		t.Fatalf("a reply done before its first Poll: step %+v", d.Step)
	}
}

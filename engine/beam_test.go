package engine

import (
	"errors"
	"math"
	"slices"
	"testing"

	"chat/engine/sampler"
	"chat/models"
	"chat/models/load"
	"chat/models/modeltest"
	"chat/models/testmodels"
)

// seedModel is the worked example of seed 003 as a model: after the prompt
// "The", "nice" has probability 0.6 and "dog" 0.4; after "The nice" the
// best next word has only 0.4 ("woman"; "house" and "guy" 0.3), after "The
// dog" it has 0.9 ("has"). Greedy takes "nice", then "woman": joint
// probability 0.6 × 0.4 = 0.24. A beam of two keeps "dog" and finds
// "dog has": 0.4 × 0.9 = 0.36. Every longer text ends (EOT).
const (
	wThe, wNice, wDog, wWoman, wHouse, wGuy, wHas, wAnd, wRuns, wEOT = 0, 1, 2, 3, 4, 5, 6, 7, 8, 9
)

var seedWords = []string{"The", " nice", " dog", " woman", " house", " guy", " has", " and", " runs", "<eot>"}

type wordTok struct{}

func (wordTok) Encode(string) []int        { return nil }
func (wordTok) EncodeSpecial(string) []int { return nil }
func (wordTok) TokenBytes(id int) []byte {
	if id < 0 || id >= len(seedWords) {
		return nil
	}
	return []byte(seedWords[id])
}
func (t wordTok) Decode(ids []int) string {
	var b []byte
	for _, id := range ids {
		b = append(b, t.TokenBytes(id)...)
	}
	return string(b)
}
func (wordTok) Size() int { return len(seedWords) }
func (wordTok) EOT() int  { return wEOT }
func (wordTok) BOS() int  { return -1 }

func newSeedModel() models.Model {
	// A position's state is the list of ids so far, packed 4 bits each.
	step := func(prev uint64, token, _ int) uint64 { return prev<<4 | uint64(token+1) }
	next := map[uint64]map[int]float64{
		1:        {wNice: 0.6, wDog: 0.4},               // The
		1<<4 | 2: {wWoman: 0.4, wHouse: 0.3, wGuy: 0.3}, // The nice
		1<<4 | 3: {wHas: 0.9, wAnd: 0.05, wRuns: 0.05},  // The dog
	}
	logits := func(dst []float32, state uint64) {
		p, ok := next[state]
		if !ok {
			p = map[int]float64{wEOT: 1}
		}
		for i := range dst {
			dst[i] = -1e9
			if v, ok := p[i]; ok {
				dst[i] = float32(math.Log(v))
			}
		}
	}
	info := models.Info{Name: "seed003", Arch: "fake", VocabSize: len(seedWords), ContextLength: 64, Window: models.WindowHalf}
	return &modeltest.Chain{Meta: info, Tok: wordTok{}, Step: step, Logits: logits, FailOn: -1}
}

// TestBeamSeedExample: seed 003's worked example. Greedy decoding finds
// "The nice woman" (joint probability 0.24); a beam of two finds "The dog
// has" (0.36), the more probable text; a beam of one is greedy.
func TestBeamSeedExample(t *testing.T) {
	e := New(newSeedModel())
	defer e.Close()
	prompt := []int{wThe}

	r, err := e.Start(Request{Prompt: prompt, MaxTokens: 2, Sampler: sampler.Params{Greedy: true}})
	if err != nil {
		t.Fatal(err)
	}
	g := r.Wait()
	if !slices.Equal(g.IDs, []int{wNice, wWoman}) {
		t.Fatalf("greedy: %v", g.IDs)
	}

	b1, err := e.Beam(BeamRequest{Prompt: prompt, MaxTokens: 2, Width: 1})
	if err != nil {
		t.Fatal(err)
	}
	if h := b1.Hypotheses[0]; !slices.Equal(h.IDs, g.IDs) || math.Abs(math.Exp(h.LogProb)-0.24) > 1e-6 {
		t.Fatalf("width 1: %v p=%.4f, want greedy's %v p=0.24", h.IDs, math.Exp(h.LogProb), g.IDs)
	}

	b2, err := e.Beam(BeamRequest{Prompt: prompt, MaxTokens: 2, Width: 2})
	if err != nil {
		t.Fatal(err)
	}
	best := b2.Hypotheses[0]
	if !slices.Equal(best.IDs, []int{wDog, wHas}) || math.Abs(math.Exp(best.LogProb)-0.36) > 1e-6 {
		t.Fatalf("width 2: best %v p=%.4f, want [dog has] p=0.36", best.IDs, math.Exp(best.LogProb))
	}
	if len(b2.Hypotheses) != 2 || !slices.Equal(b2.Hypotheses[1].IDs, []int{wNice, wWoman}) {
		t.Fatalf("width 2: hypotheses %+v", b2.Hypotheses)
	}

	// With room to go on, every hypothesis ends at EOT (not in its ids).
	b3, err := e.Beam(BeamRequest{Prompt: prompt, MaxTokens: 10, Width: 2, StopIDs: []int{wEOT}})
	if err != nil {
		t.Fatal(err)
	}
	if h := b3.Hypotheses[0]; !slices.Equal(h.IDs, []int{wDog, wHas}) || h.Reason != ReasonEOT || h.StopID != wEOT || h.Length != 3 {
		t.Fatalf("with EOT: %+v", b3.Hypotheses)
	}
}

// TestBeamWidthOneIsGreedy: on student.pt a beam of one gives the engine's
// greedy ids token for token (64 tokens, three prompts).
func TestBeamWidthOneIsGreedy(t *testing.T) {
	m, err := load.Open(testmodels.Path(t, "course/student.pt"))
	if err != nil {
		t.Fatal(err)
	}
	e := New(m)
	defer e.Close()
	for _, text := range []string{"Once upon a time", "The little dog was", "Lily wanted to"} {
		prompt := m.Tokenizer().Encode(text)
		r, err := e.Start(Request{Prompt: prompt, MaxTokens: 64, Sampler: sampler.Params{Greedy: true}})
		if err != nil {
			t.Fatal(err)
		}
		g := r.Wait()
		b, err := e.Beam(BeamRequest{Prompt: prompt, MaxTokens: 64, Width: 1})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(b.Hypotheses[0].IDs, g.IDs) {
			t.Fatalf("%q: beam of one\n got %v\nwant %v", text, b.Hypotheses[0].IDs, g.IDs)
		}
	}
}

// TestBeamSharesBlocks: four beams over 96 tokens of student.pt share the
// prompt's blocks and their common continuations: at their peak they hold
// fewer blocks than four separate sequences would, and the pool is back to
// what the prefix cache keeps once the search ends; a second search reuses
// the first one's prompt blocks.
func TestBeamSharesBlocks(t *testing.T) {
	m, err := load.Open(testmodels.Path(t, "course/student.pt"))
	if err != nil {
		t.Fatal(err)
	}
	e := New(m)
	defer e.Close()
	prompt := m.Tokenizer().Encode("Once upon a time, there was a little girl named Lily. She loved to play outside.")
	b4, err := e.Beam(BeamRequest{Prompt: prompt, MaxTokens: 96, Width: 4})
	if err != nil {
		t.Fatal(err)
	}
	st := b4.Stats
	if st.PeakBlocks == 0 || st.PeakBlocks >= st.UnsharedBlocks {
		t.Fatalf("beams held %d blocks at their peak; %d unshared", st.PeakBlocks, st.UnsharedBlocks)
	}
	t.Logf("4 beams × %d tokens: peak %d blocks shared, %d unshared", len(prompt)+96, st.PeakBlocks, st.UnsharedBlocks)
	// The measure: what the search adds to the prompt's blocks stays
	// under width × the blocks of one beam's generated tokens.
	bs := e.pool.BlockSize()
	grown, alone := st.PeakBlocks-(len(prompt)+bs-1)/bs, 4*((96+bs-1)/bs)
	if grown >= alone {
		t.Fatalf("the search grew the pool by %d blocks; 4 unshared beams of 96 tokens take %d", grown, alone)
	}
	e.kvmu.Lock()
	used, tree := e.pool.Used(), e.tree.Blocks()
	e.kvmu.Unlock()
	if used != tree {
		t.Fatalf("after the search %d blocks are in use, the prefix cache holds %d", used, tree)
	}
	b1, err := e.Beam(BeamRequest{Prompt: prompt, MaxTokens: 96, Width: 1})
	if err != nil {
		t.Fatal(err)
	}
	if st.ReusedTokens != 0 || b1.Stats.ReusedTokens == 0 {
		t.Fatalf("reused %d then %d prompt tokens; the second search should reuse the first's prompt", st.ReusedTokens, b1.Stats.ReusedTokens)
	}
}

// TestBeamKeepsWidthFinished: a search that finishes hypotheses at every
// step holds only the Width best of them, best first, ties in the order
// they finished.
func TestBeamKeepsWidthFinished(t *testing.T) {
	s := &beamSearch{req: BeamRequest{Width: 3, LengthPenalty: 1}}
	b := &beam{ids: make([]int, 1000)}
	for i := range 10000 {
		s.finish(b, -float64(i%7), 1, wEOT)
		if len(s.done) > 3 {
			t.Fatalf("after %d finished, %d kept", i+1, len(s.done))
		}
	}
	var got []float64
	for _, h := range s.done {
		got = append(got, h.Score)
	}
	if !slices.Equal(got, []float64{0, 0, 0}) {
		t.Fatalf("kept scores %v", got)
	}
	s.done = nil
	for _, lp := range []float64{-5, -1, -3, -1, -2} {
		s.finish(&beam{ids: []int{int(-lp)}}, lp, 1, -1)
	}
	var ids []int
	for _, h := range s.done {
		ids = append(ids, h.IDs[0])
	}
	if !slices.Equal(ids, []int{1, 1, 2}) {
		t.Fatalf("kept %+v", s.done)
	}
}

// TestBeamStops: closing a search's Done (a server's client hung up) stops
// it at its next step and frees its beams' blocks; it used to run its
// Width sequences to the budget whoever was waiting.
func TestBeamStops(t *testing.T) {
	done := make(chan struct{})
	calls := 0
	m := newSeedModel().(*modeltest.Chain)
	m.Step = nil // a hash of the ids: every text goes on
	m.Logits = func(dst []float32, _ uint64) {
		for i := range dst {
			dst[i] = float32(i % 3) // never the end of text (wEOT's 0 is the least)
		}
		if calls++; calls == 20 {
			close(done)
		}
	}
	e := New(m)
	defer e.Close()
	_, err := e.Beam(BeamRequest{Prompt: []int{wThe}, MaxTokens: 60, Width: 4, Done: done})
	if !errors.Is(err, ErrBeamStopped) || calls > 24 {
		t.Fatalf("%v after %d positions' logits; want %v within a step (4 beams) of the 20th", err, calls, ErrBeamStopped)
	}
	if err := e.ClearCache(); err != nil {
		t.Fatal(err)
	}
	if l := e.Load(); l.PoolUsed != 0 || l.Running != 0 {
		t.Fatalf("after the stopped search: %d blocks held, %d running", l.PoolUsed, l.Running)
	}
}

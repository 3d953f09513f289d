package engine

import (
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"chat/engine/sampler"
	"chat/engine/speculative"
	"chat/models"
)

// TestAdaptChoice: with measured costs and acceptance the choice of k is
// the best expected rate, and speculation turns off when nothing beats
// plain decoding.
func TestAdaptChoice(t *testing.T) {
	a := &adapt{alpha: 0.9, t1: 10e-3, d: 0.5e-3, v: 0.2e-3, total: adaptWarm}
	if k := a.choose(8); k != 8 || a.off {
		t.Errorf("cheap, accurate drafter: k %d, off %v; want 8, on", k, a.off)
	}
	a = &adapt{alpha: 0.5, t1: 10e-3, d: 3e-3, v: 1e-3, total: adaptWarm}
	if k := a.choose(8); k < 1 || k > 3 || a.off {
		t.Errorf("costly, half-right drafter: k %d, off %v; want a small k, on", k, a.off)
	}
	a = &adapt{alpha: 0.05, t1: 10e-3, d: 4e-3, v: 1e-3, total: adaptWarm}
	if a.choose(8); !a.off || !strings.Contains(a.note(8), "lost time") {
		t.Errorf("a drafter that is wrong and slow stays on: %q", a.note(8))
	}
	a = &adapt{alpha: 0.05, t1: 10e-3, d: 4e-3, v: 1e-3, total: 2}
	if a.choose(8); a.off {
		t.Error("turned off before the warm-up rounds")
	}
	// A fresh adapt measures plain steps first (one with a forward pass
	// per probe), then speculates with K.
	f := newAdapt()
	if !f.plainNext() || f.choose(4) != 4 {
		t.Fatal("a fresh adapt should probe plain steps, then start with K")
	}
	f.plainTook(time.Millisecond)
	f.plainTook(time.Millisecond)
	if f.plainNext() || f.t1 != 1e-3 {
		t.Fatalf("after two probes: plain %v, t1 %v", f.plainNext(), f.t1)
	}
}

// stepClock is a clock that moves 10 µs a reading, and more when told:
// what adapt measures then does not depend on this host's load (on the
// wall clock a plain step stalled for 15 ms looked dearer than the 3 ms
// drafts, and speculation stayed on).
type stepClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *stepClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(10 * time.Microsecond)
	return c.t
}

func (c *stepClock) advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

// slowDrafter guesses wrong, and slowly: 3 ms a call on its clock.
type slowDrafter struct {
	vocab int
	clock *stepClock
}

func (slowDrafter) Reset([]int, uint64) {}
func (d slowDrafter) Propose(ctx []int, k int, _ sampler.Params) ([]int, [][]float64, error) {
	d.clock.advance(3 * time.Millisecond)
	g := make([]int, k)
	for i := range g {
		g[i] = (ctx[len(ctx)-1] + 1 + i) % d.vocab
	}
	return g, nil, nil
}

// TestAdaptStepsAside: a drafter that is slow and wrong is switched off by
// itself after the warm-up rounds, says so in the stats, and the greedy
// output is still plain greedy's.
func TestAdaptStepsAside(t *testing.T) {
	m := newFake(models.WindowHalf, 256)
	plain := run(t, New(m), Request{Prompt: prompt(5, 1), MaxTokens: 60, Sampler: knobs["greedy"]})
	e := New(m)
	defer e.Close()
	clock := &stepClock{}
	e.mu.Lock()
	e.now = clock.now
	e.spec, e.drafter = speculative.Config{Method: speculative.NGram, K: 4, Adapt: true}, slowDrafter{vocab: m.info.VocabSize, clock: clock}
	e.mu.Unlock()
	res := run(t, e, Request{Prompt: prompt(5, 1), MaxTokens: 60, Sampler: knobs["greedy"]})
	if !slices.Equal(res.IDs, plain.IDs) {
		t.Fatalf("adaptive greedy %v, plain %v", res.IDs, plain.IDs)
	}
	sp := res.Stats.Spec
	if !strings.Contains(sp.Note, "lost time") || sp.Rounds > adaptWarm+2 {
		t.Fatalf("after %d rounds the note is %q", sp.Rounds, sp.Note)
	}
}

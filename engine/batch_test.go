package engine

import (
	"fmt"
	"slices"
	"sync"
	"testing"

	"chat/engine/sampler"
	"chat/engine/speculative"
	"chat/models"
)

// TestConcurrentRepliesMatchAlone: 8 replies started together on one
// engine (prompts of different lengths, two sharing a prefix, sampled and
// greedy, both window rules, the greedy ones speculating with the n-gram
// drafter when they get it) decode in shared batches and each gives exactly
// the ids it gives alone on a fresh engine; a ninth is refused while they
// run; the batches really held several sequences; the pool holds no blocks
// but the cache's afterwards.
func TestConcurrentRepliesMatchAlone(t *testing.T) {
	for rname, rule := range rules() {
		t.Run(rname, func(t *testing.T) {
			m := newFake(rule, 48)
			reqs := make([]Request, 8)
			for i := range reqs {
				p := prompt(3+5*i%17, i)
				if i == 5 {
					p = append(slices.Clone(reqs[2].Prompt), 9, 9) // shares reply 2's prompt
				}
				s := knobs["sampled"]
				s.Seed = uint64(i + 1)
				if i%3 == 0 {
					s = knobs["greedy"]
				}
				reqs[i] = Request{Prompt: p, MaxTokens: 30 + i, Sampler: s}
			}
			alone := make([]Result, len(reqs))
			for i, r := range reqs {
				e := New(m)
				alone[i] = run(t, e, r)
				e.Close()
			}

			e := NewWithOptions(m, Options{MaxSeqs: len(reqs)})
			defer e.Close()
			replies := make([]*Reply, len(reqs))
			gate := make(chan struct{}) // holds every reply at its first text until all have started
			for i, r := range reqs {
				if i%3 == 0 { // greedy: speculation keeps its ids exactly
					if err := e.SetSpeculation(speculative.Config{Method: speculative.NGram, K: 3}); err != nil {
						t.Fatal(err)
					}
				} else {
					e.SetSpeculation(speculative.Config{})
				}
				r.OnText = func(string) { <-gate }
				var err error
				if replies[i], err = e.Start(r); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := e.Start(reqs[0]); err != ErrBusy {
				t.Errorf("a ninth reply: %v, want ErrBusy", err)
			}
			close(gate)
			most := 0
			for i, r := range replies {
				res := r.Wait()
				if res.Err != nil || !slices.Equal(res.IDs, alone[i].IDs) || res.Reason != alone[i].Reason {
					t.Fatalf("reply %d: %v %q %v, alone %q %v", i, res.Err, res.Reason, res.IDs, alone[i].Reason, alone[i].IDs)
				}
				most = max(most, res.Stats.BatchSeqs)
			}
			if most < 2 {
				t.Errorf("no forward pass held more than one sequence")
			}
			e.kvmu.Lock()
			used, tree := e.pool.Used(), e.tree.Blocks()
			lastBlocks := len(e.last.Table())
			e.kvmu.Unlock()
			if used > tree+lastBlocks {
				t.Errorf("%d blocks in use; the tree holds %d and the last reply %d", used, tree, lastBlocks)
			}
		})
	}
}

// TestConcurrentStartStop: replies started and stopped from many goroutines
// at once (run it with -race) all end, and the engine keeps working.
func TestConcurrentStartStop(t *testing.T) {
	m := newFake(models.WindowHalf, 64)
	e := NewWithOptions(m, Options{MaxSeqs: 4})
	defer e.Close()
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func(g int) {
			defer wg.Done()
			for i := 0; i < 10; i++ {
				r, err := e.Start(Request{Prompt: prompt(2+i%5, g), MaxTokens: 10 + i, Sampler: sampler.Params{Temperature: 1, Seed: uint64(g*100 + i)}})
				if err == ErrBusy {
					continue
				}
				if err != nil {
					t.Error(err)
					return
				}
				if i%3 == 0 {
					r.Stop()
				}
				r.SetSampler(sampler.Params{Greedy: true})
				_ = r.Poll()
				if res := r.Wait(); res.Err != nil {
					t.Error(fmt.Errorf("goroutine %d reply %d: %w", g, i, res.Err))
				}
			}
		}(g)
	}
	wg.Wait()
	if res := run(t, e, Request{Prompt: prompt(4, 0), MaxTokens: 5, Sampler: knobs["greedy"]}); len(res.IDs) != 5 {
		t.Fatalf("after the storm: %v", res.IDs)
	}
}

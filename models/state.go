package models

import "fmt"

// State is one sequence run alone: a Runner and a KV handle, fed a run of
// tokens at a time. It is what a single conversation, a draft model and the
// tests use; the engine's batches go through Runner.Forward directly.
type State struct {
	r  Runner
	kv KV
	b  Batch
	kh []KV
}

// NewState returns a State over kv (see kvcache.NewState for one with a
// cache of its own).
func NewState(m Model, kv KV) *State {
	return &State{r: m.NewRunner(), kv: kv, kh: []KV{kv}}
}

// Forward feeds tokens at positions Len().. and returns the logits of the
// last rows tokens, [rows][VocabSize] (rows clamped to 1..len(tokens)),
// owned by the State until the next call.
func (s *State) Forward(tokens []int, rows int) ([]float32, error) {
	if len(tokens) == 0 {
		return nil, fmt.Errorf("models: Forward with no tokens")
	}
	rows = min(max(rows, 1), len(tokens))
	s.b.Reset()
	s.b.AddRun(0, s.kv.Len(), tokens, rows)
	return s.r.Forward(&s.b, s.kh)
}

// Len is the number of cached positions.
func (s *State) Len() int { return s.kv.Len() }

// Cap is the most positions the cache holds.
func (s *State) Cap() int { return s.kv.Cap() }

// Truncate drops cached positions >= n (rollback; Truncate(0) empties it).
func (s *State) Truncate(n int) { s.kv.Truncate(n) }

// KV is the State's cache.
func (s *State) KV() KV { return s.kv }

package speculative

import (
	"errors"
	"fmt"

	"chat/engine/sampler"
	"chat/models"
	"chat/models/kvcache"
)

// ModelDrafter drafts with a second model. It keeps its own KV cache across
// rounds and replies: each round it keeps the longest cached prefix of the
// text (rejected guesses are rolled back with Truncate) and feeds only the
// rest, never the whole window. Its draws use its own sampler, seeded apart
// from the target's: a draft draw and the acceptance test that judges it
// must not see the same uniform.
type ModelDrafter struct {
	m      models.Model
	st     *models.State
	window int
	off    int   // ctx index of cache position 0
	cached []int // ids at cache positions 0..Len-1
	smp    *sampler.Sampler
	hist   []int // ctx + guesses so far, for the penalties
	guess  []int
	q      [][]float64
}

// NewModelDrafter returns a drafter running m.
func NewModelDrafter(m models.Model) (*ModelDrafter, error) {
	if m == nil {
		return nil, errors.New("speculative: no draft model")
	}
	info := m.Info()
	st := kvcache.NewState(m)
	w := st.Cap()
	if c := info.ContextLength; c > 0 && c < w {
		w = c
	}
	if w < 1 || info.VocabSize < 1 {
		return nil, fmt.Errorf("speculative: draft %q has no context or vocabulary", info.Name)
	}
	return &ModelDrafter{m: m, st: st, window: w, smp: sampler.New(info.VocabSize, sampler.Params{})}, nil
}

// Model is the draft model.
func (d *ModelDrafter) Model() models.Model { return d.m }

// Cached is the ids whose keys and values are in the draft's cache.
func (d *ModelDrafter) Cached() []int { return d.cached }

// State is the draft's cache (for tests and panels).
func (d *ModelDrafter) State() *models.State { return d.st }

// Reset re-seeds the draft's draws from a mix of seed (see the type).
func (d *ModelDrafter) Reset(_ []int, seed uint64) { d.smp.Reset(mix(seed ^ 0x5bd1e995)) }

// Propose feeds the part of ctx the cache lacks, then draws k guesses one
// at a time, feeding each but the last.
func (d *ModelDrafter) Propose(ctx []int, k int, p sampler.Params) ([]int, [][]float64, error) {
	k = min(k, MaxK, d.window)
	if k < 1 || len(ctx) == 0 {
		return nil, nil, nil
	}
	d.smp.SetParams(p)
	logits, err := d.prefill(ctx, k)
	if err != nil {
		return nil, nil, err
	}
	d.hist = append(d.hist[:0], ctx...)
	d.guess = d.guess[:0]
	for i := range k {
		dist, err := d.smp.Dist(logits, d.hist)
		if err != nil {
			return nil, nil, fmt.Errorf("speculative: draft: %w", err)
		}
		if len(d.q) <= i {
			d.q = append(d.q, make([]float64, len(dist)))
		}
		copy(d.q[i], dist)
		t := d.smp.Draw(d.q[i])
		if t < 0 {
			return nil, nil, errors.New("speculative: draft distribution has no mass")
		}
		d.guess = append(d.guess, t)
		d.hist = append(d.hist, t)
		if i == k-1 {
			break // the last guess's logits are never needed
		}
		if logits, err = d.feed(d.guess[i : i+1]); err != nil {
			return nil, nil, err
		}
	}
	return d.guess, d.q[:k], nil
}

// prefill makes the cache hold a suffix of ctx (all of it while it fits)
// with room for k-1 guesses, and returns the logits after ctx's last id.
func (d *ModelDrafter) prefill(ctx []int, k int) ([]float32, error) {
	room := d.window - (k - 1) // ctx ids the cache may hold, >= 1
	if d.off >= len(ctx) || len(ctx)-d.off > room ||
		(d.off > 0 && (len(ctx) <= room || common(d.cached, ctx[d.off:]) == 0)) {
		// Restart: all of ctx if it fits, else its latest ids, leaving
		// half the window to grow into.
		d.off = 0
		if len(ctx) > room {
			d.off = len(ctx) - max(1, min(room, d.window/2))
		}
		d.truncate(0)
	}
	in := ctx[d.off:]
	n := common(d.cached, in)
	if n == len(in) {
		n-- // all cached: re-feed the last id for its logits
	}
	d.truncate(n)
	return d.feed(in[n:])
}

// common is the length of the longest common prefix of a and b.
func common(a, b []int) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

func (d *ModelDrafter) truncate(n int) {
	d.st.Truncate(n)
	d.cached = d.cached[:n]
}

// feed runs ids at the next positions; on error the cache is emptied, since
// its contents are then unknown.
func (d *ModelDrafter) feed(ids []int) ([]float32, error) {
	logits, err := d.st.Forward(ids, 1)
	if err != nil {
		d.truncate(0)
		return nil, fmt.Errorf("speculative: draft forward: %w", err)
	}
	d.cached = append(d.cached, ids...)
	return logits, nil
}

func mix(x uint64) uint64 { // splitmix64 finaliser
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}

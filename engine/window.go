package engine

import "chat/models"

// promptWindow is the part of the prompt the first forward sees: the last
// `window` ids, from position 0 (course §2.3 and §3.4).
func (e *Engine) promptWindow(prompt []int) []int {
	return prompt[max(0, len(prompt)-e.window):]
}

// WindowKeep is how many of the latest ids the model goes on from when its
// window fills: half of it (at least 1) by WindowHalf, all of it by
// WindowSlide (next says how each is run).
func (e *Engine) WindowKeep() int {
	if e.info.Window == models.WindowHalf {
		return max(1, e.window/2)
	}
	return e.window
}

// next feeds the id just sampled (the last of g.ctx) following the model's
// window rule and returns the logits for the next token. The cache holds
// e.window positions at most; "full" is checked before the new id is fed
// (course-format §10.3).
//
//   - models.WindowHalf (modern, §3.4/§10.3): when full, empty the cache and
//     re-prefill the latest window/2 ids (the new one included) from
//     position 0.
//   - models.WindowSlide (classic, §2.3/§10.5): when full, empty the cache
//     and run the latest `window` ids from position 0, every step from then
//     on: the window slides by one.
//
// Otherwise only the new id is fed.
func (g *gen) next() ([]float32, error) {
	e := g.e
	if g.seq.Len() >= e.window {
		g.stats.WindowCuts++
		g.truncate(0)
		return g.forward(g.ctx[len(g.ctx)-e.WindowKeep():], 1)
	}
	return g.forward(g.ctx[len(g.ctx)-1:], 1)
}

package engine

// reuse keeps the longest common prefix of the cached ids and in (the ids
// to be fed from position 0) and truncates the cache to it. It keeps at most
// len(in)-1 ids, so at least one id is fed and yields logits. It returns how
// many ids were kept.
func (e *Engine) reuse(in []int) int {
	n := 0
	for n < len(e.cached) && n < len(in) && e.cached[n] == in[n] {
		n++
	}
	if e.tree != nil {
		n = e.matchTree(in, n)
	}
	if n == len(in) {
		n-- // the whole prompt is cached: re-feed its last id for logits
	}
	e.truncate(n)
	return n
}

// truncate drops cached positions >= n. Emptying the cache (the window
// rule, an error) also unlocks the prefix-tree path the reply matched: the
// sequence no longer uses it.
func (e *Engine) truncate(n int) {
	if n == 0 && e.locked {
		e.unlock()
	}
	e.st.Truncate(n)
	e.cached = e.cached[:n]
}

// feed runs ids at the next positions and returns the logits of the last.
// On error the cache is emptied, since its contents are then unknown.
func (e *Engine) feed(ids []int) ([]float32, error) { return e.feedRows(ids, 1) }

// feedRows is feed returning the logits of the last rows ids, [rows][vocab].
func (e *Engine) feedRows(ids []int, rows int) ([]float32, error) {
	logits, err := e.st.Forward(ids, rows)
	if err != nil {
		e.truncate(0)
		return nil, err
	}
	e.cached = append(e.cached, ids...)
	return logits, nil
}

package engine

import (
	"errors"
	"fmt"
	"io"

	"chat/engine/prefix"
	"chat/models"
	"chat/models/kvcache"
)

// The KV cache and the prefix cache (models/kvcache, engine/prefix).
//
// Every reply's keys and values live in the blocks of one pool sized by
// Options.KVMem; its sequence is a block table. Every reply:
//
//  1. takes the longest cached prefix of its prompt window: whole blocks
//     from the radix tree (shared, refcounted; the path is locked so
//     eviction leaves it alone), or the prefix it shares with the last
//     finished reply (a fork of that sequence), whichever is longer;
//  2. prefills only the rest (a write into a shared block copies it first);
//  3. when it ends, inserts its full blocks into the tree and becomes "the
//     last reply".
//
// So a new turn, a regenerated reply, an edited earlier message and a new
// conversation with the same system prompt all start from the longest
// cached prefix, even one cached several turns or conversations ago, as long
// as the pool had room to keep it: when a batch needs blocks the pool lacks,
// the least recently used unlocked leaves of the tree are evicted first.
//
// The window rule (window.go) still holds: when the cache is full the
// sequence is reset and the latest ids are re-prefilled from position 0.
// Reuse after that is poor by construction: a position's keys depend on its
// position, and the prompt of the next turn (the last `window` ids) no longer
// starts at the token the cached blocks start at, so only a prompt that fits
// the window again (a new conversation, an edit that shortens it) or that
// happens to start where the reset sequence started can reuse blocks.

// newCache makes the pool (and the tree unless the prefix cache is off).
func (e *Engine) newCache(m models.Model, o Options) error {
	kf, err := kvcache.FormatFor(o.KVQuantK, m.Info())
	if err != nil {
		return fmt.Errorf("engine: keys: %w", err)
	}
	vf, err := kvcache.FormatFor(o.KVQuantV, m.Info())
	if err != nil {
		return fmt.Errorf("engine: values: %w", err)
	}
	kl := kvcache.LayoutOf(m, kf, vf)
	bs := o.BlockSize
	if bs <= 0 {
		bs = kvcache.DefaultBlockSize
	}
	ctx := e.window
	budget := o.KVMem
	if budget <= 0 {
		budget = min(DefaultKVMem, 16*int64((ctx+bs-1)/bs)*kl.BytesPerBlock(bs))
	}
	// Without a queue every running reply must fit; with one, a reply the
	// pool cannot hold waits or is preempted (schedule.go).
	floor := e.maxSeqs * MinKVBlocks(ctx, bs)
	if o.MaxWaiting > 0 {
		floor = MinKVBlocks(ctx, bs) + e.maxSeqs
	}
	blocks := max(kvcache.BlocksFor(budget, kl, bs), floor)
	pool, err := kvcache.NewPool(kl, bs, blocks)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	e.pool = pool
	if !o.NoPrefixCache {
		e.tree = prefix.New(pool)
	}
	e.identity = modelIdentity(e.info, m.KVLayout(), bs)
	return nil
}

// MinKVBlocks is the smallest pool that serves a window of ctx positions:
// the window's blocks plus one for a copy-on-write and one spare.
func MinKVBlocks(ctx, bs int) int { return (ctx+bs-1)/bs + 2 }

// modelIdentity names the model a KV file belongs to.
func modelIdentity(i models.Info, l models.KVLayout, bs int) string {
	return fmt.Sprintf("chat-kv model=%s arch=%s format=%s quant=%s vocab=%d ctx=%d layers=%d embed=%d heads=%d/%d params=%d weightbytes=%d kv=%dx%d+%d block=%d",
		i.Name, i.Arch, i.Format, i.Quant, i.VocabSize, i.ContextLength, i.Layers, i.Embed, i.Heads, i.KVHeads, i.Params, i.WeightBytes, l.Layers, l.KDim, l.VDim, bs)
}

// reuse gives the reply a sequence holding the longest cached prefix of in
// (the ids to be fed from position 0) and counts the reuse. It keeps at
// most len(in)-1 ids, so at least one id is fed and yields logits. It
// returns how many ids were kept.
func (g *gen) reuse(in []int) int {
	e := g.e
	e.kvmu.Lock()
	defer e.kvmu.Unlock()
	n := 0
	if e.last != nil {
		n = common(e.lastIDs, in)
	}
	var blocks []int32
	var at prefix.Node
	m := 0
	if e.tree != nil {
		blocks, m, at = e.tree.Match(in)
		if b, k := e.tree.Partial(in, m, at); k > 0 {
			blocks, m = append(blocks, b), m+k // copied before the sequence writes into it
		}
	}
	if m >= n && m > 0 {
		g.seq, _ = e.pool.SeqFrom(blocks, m, e.window) // blocks hold m positions
		e.tree.Lock(at)
		g.lockAt, g.locked = at, true
		n = m
	} else if n > 0 {
		g.seq = e.last.Fork()
		g.seq.Truncate(n)
	} else {
		g.seq = e.pool.NewSeq(e.window)
	}
	if n == len(in) {
		n-- // the whole prompt is cached: re-feed its last id for logits
		g.seq.Truncate(n)
	}
	g.r.seq = g.seq
	g.cached = append(g.cached[:0], in[:n]...)
	e.totalPrompt += g.stats.PromptTokens
	e.totalReused += n
	g.stats.TotalPromptTokens, g.stats.TotalReusedTokens = e.totalPrompt, e.totalReused
	if e.totalPrompt > 0 {
		g.stats.HitRate = float64(e.totalReused) / float64(e.totalPrompt)
	}
	return n
}

// common is the length of the longest common prefix of a and b.
func common(a, b []int) int {
	n := 0
	for n < len(a) && n < len(b) && a[n] == b[n] {
		n++
	}
	return n
}

// truncate drops cached positions >= n. Emptying the cache (the window
// rule, an error) also unlocks the prefix-tree path the reply matched: the
// sequence no longer uses it.
func (g *gen) truncate(n int) {
	e := g.e
	e.kvmu.Lock()
	if n == 0 && g.locked {
		e.tree.Unlock(g.lockAt)
		g.locked = false
	}
	g.seq.Truncate(n)
	e.kvmu.Unlock()
	g.cached = g.cached[:n]
}

// finishCache is called when a reply ends: the sequence's full blocks go
// into the tree, the path is unlocked, and the sequence becomes the last
// reply's (for the next reply's common prefix and ExportKV).
func (g *gen) finishCache() {
	e := g.e
	e.kvmu.Lock()
	defer e.kvmu.Unlock()
	if e.tree != nil {
		e.tree.Insert(g.cached, g.seq.Table())
		if g.locked {
			e.tree.Unlock(g.lockAt)
			g.locked = false
		}
	}
	if e.last != nil {
		e.last.Free()
	}
	e.last, e.lastIDs = g.seq, g.cached
}

// makeRoom evicts prefix-tree blocks until need blocks are free, if it can
// (under kvmu).
func (e *Engine) makeRoom(need int) {
	if free := e.pool.Free(); free < need && e.tree != nil {
		e.tree.Evict(need - free)
	}
	if free := e.pool.Free(); free < need && e.last != nil && e.last.Len() > 0 {
		// The last reply's own blocks (those not in the tree) go last.
		e.last.Free()
		e.lastIDs = e.lastIDs[:0]
		if e.tree != nil {
			e.tree.Evict(need - e.pool.Free())
		}
	}
}

// kvStats fills the cache fields of the reply's stats.
func (g *gen) kvStats() {
	e, st := g.e, &g.stats
	e.kvmu.Lock()
	defer e.kvmu.Unlock()
	st.KVUsed = g.seq.Len()
	st.PoolBlocks, st.PoolUsed, st.BlockSize = e.pool.Blocks(), e.pool.Used(), e.pool.BlockSize()
	st.SeqBlocks = len(g.seq.Table())
	if e.tree != nil {
		st.TreeBlocks, st.Evictions = e.tree.Blocks(), e.tree.Evicted()
	}
	lay := e.pool.Layout()
	st.KVFormatK, st.KVFormatV = lay.K.String(), lay.V.String()
	st.BlockBytes = lay.BytesPerBlock(e.pool.BlockSize())
}

// ExportKV writes the last reply's sequence (the ids of its prompt and
// reply, and their keys and values) to w in the kvcache v1 format. It fails
// while a reply runs.
func (e *Engine) ExportKV(w io.Writer) error {
	return e.idle(func() error {
		e.kvmu.Lock()
		defer e.kvmu.Unlock()
		if e.last == nil || len(e.lastIDs) == 0 {
			return errors.New("engine: nothing cached to export")
		}
		return e.last.Export(w, e.identity, e.lastIDs)
	})
}

// ImportKV reads a file ExportKV wrote for the same model and makes it the
// last reply's sequence (and puts it in the prefix tree), so a conversation
// continues without prefilling what the file holds. It returns the cached
// ids. A file from another model, another format version, or a truncated or
// corrupted one is refused and changes nothing.
func (e *Engine) ImportKV(r io.Reader) ([]int, error) {
	var ids []int
	err := e.idle(func() error {
		e.kvmu.Lock()
		defer e.kvmu.Unlock()
		s, toks, err := e.pool.Import(r, e.identity, e.window)
		if err != nil {
			return err
		}
		for i, id := range toks {
			if id < 0 || id >= e.vocab {
				s.Free()
				return fmt.Errorf("%w: token id %d at position %d is outside the vocabulary", kvcache.ErrFormat, id, i)
			}
		}
		if e.last != nil {
			e.last.Free()
		}
		e.last, e.lastIDs = s, toks
		if e.tree != nil {
			e.tree.Insert(toks, s.Table())
		}
		ids = toks
		return nil
	})
	return ids, err
}

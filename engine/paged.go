package engine

import (
	"errors"
	"fmt"
	"io"

	"chat/engine/kvcache"
	"chat/engine/prefix"
	"chat/models"
)

// The paged KV cache and the prefix cache (engine/kvcache, engine/prefix).
//
// When the model implements models.PagedModel (course and llama) and the
// prefix cache is on (the default), the engine's State reads and writes its
// keys and values in the blocks of one pool sized by Options.KVMem, and its
// sequence is a block table. Every reply:
//
//  1. matches the prompt window in the radix tree (longest prefix, whole
//     blocks) and, when that beats the common prefix with the sequence
//     already cached, makes the sequence those blocks (shared, refcounted)
//     and locks the path so eviction leaves it alone;
//  2. prefills only the rest (a write into a shared block copies it first);
//  3. when it ends, inserts the sequence's full blocks into the tree.
//
// So a new turn, a regenerated reply, an edited earlier message and a new
// conversation with the same system prompt all start from the longest
// cached prefix, even one cached several turns or conversations ago, as long
// as the pool had room to keep it (least recently used leaves go first).
//
// The window rule (window.go) still holds: when the cache is full the
// sequence is reset and the latest ids are re-prefilled from position 0.
// Reuse after that is poor by construction: a position's keys depend on its
// position, and the prompt of the next turn (the last `window` ids) no longer
// starts at the token the cached blocks start at, so only a prompt that fits
// the window again (a new conversation, an edit that shortens it) or that
// happens to start where the reset sequence started can reuse blocks. A
// conversation longer than the window therefore prefills its whole window
// every turn, with or without the prefix cache.

// Options configure an engine.
type Options struct {
	// KVMem is the KV block pool's budget in bytes (0: DefaultKVMem). It is
	// raised to the minimum one full window needs (MinKVBlocks blocks).
	KVMem int64
	// NoPrefixCache runs the model's contiguous State (one sequence, only
	// the common prefix with the last reply is reused), as before paging.
	NoPrefixCache bool
	// BlockSize is the positions per block (0: kvcache.DefaultBlockSize).
	BlockSize int
	// KVQuantK and KVQuantV are how the pool stores keys and values: "" or
	// "f32" (float32 rows), or "int8" (int8 rows with a float32 scale per
	// position and KV head; see engine/kvcache/quant.go). Int8 makes a
	// block smaller, so KVMem buys more of them; it needs the paged cache
	// and the KV file export/import refuses it.
	KVQuantK, KVQuantV string
	// Context caps the window generation sees (0: the model's context).
	Context int
}

// DefaultKVMem is the pool budget when Options.KVMem is 0: 256 MiB, or 16
// full windows if that is less.
const DefaultKVMem = 256 << 20

// NewWithOptions is New with options.
func NewWithOptions(m models.Model, o Options) *Engine {
	return newEngine(m, o)
}

// newCache sets up e.st: paged over a pool when it can, contiguous otherwise.
func (e *Engine) newCache(m models.Model, o Options) error {
	kf, err := kvcache.ParseFormat(o.KVQuantK)
	if err != nil {
		return fmt.Errorf("engine: keys: %w", err)
	}
	vf, err := kvcache.ParseFormat(o.KVQuantV)
	if err != nil {
		return fmt.Errorf("engine: values: %w", err)
	}
	pm, ok := m.(models.PagedModel)
	if !ok || o.NoPrefixCache {
		if kf != kvcache.F32 || vf != kvcache.F32 {
			return errors.New("engine: an int8 KV cache needs the paged KV cache (a model with a paged path and the prefix cache on)")
		}
		e.st = m.NewState()
		return nil
	}
	lay := pm.KVLayout()
	kl := kvcache.Layout{Layers: lay.Layers, KDim: lay.KDim, VDim: lay.VDim, Heads: lay.Heads, K: kf, V: vf}
	bs := o.BlockSize
	if bs <= 0 {
		bs = kvcache.DefaultBlockSize
	}
	ctx := e.info.ContextLength
	if ctx <= 0 {
		return errors.New("engine: model has no context")
	}
	budget := o.KVMem
	if budget <= 0 {
		budget = min(DefaultKVMem, 16*int64((ctx+bs-1)/bs)*kl.BytesPerBlock(bs))
	}
	blocks := max(kvcache.BlocksFor(budget, kl, bs), MinKVBlocks(ctx, bs))
	pool, err := kvcache.NewPool(kl, bs, blocks)
	if err != nil {
		return fmt.Errorf("engine: %w", err)
	}
	e.pool, e.tree = pool, prefix.New(pool)
	pool.Reclaim = e.tree.Reclaim
	e.seq = pool.NewSeq(ctx)
	e.st = pm.NewPagedState(e.seq)
	e.identity = modelIdentity(e.info, lay, bs)
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

// matchTree is reuse's tree lookup: n ids of in are the common prefix with
// the cached sequence; if the tree holds a longer prefix the sequence
// becomes its blocks. The matched path is locked until the reply ends (or
// the window rule resets the sequence). It returns the ids now cached.
func (e *Engine) matchTree(in []int, n int) int {
	blocks, m, at := e.tree.Match(in)
	if m > n && e.seq.Replace(blocks, m) == nil {
		e.cached = append(e.cached[:0], in[:m]...)
		n = m
	}
	if m > 0 {
		e.unlock()
		e.tree.Lock(at)
		e.lockAt, e.locked = at, true
	}
	return n
}

func (e *Engine) unlock() {
	if e.locked {
		e.tree.Unlock(e.lockAt)
		e.locked = false
	}
}

// finishCache is called when a reply ends: the sequence's full blocks go
// into the tree and the path is unlocked.
func (e *Engine) finishCache() {
	if e.tree == nil {
		return
	}
	e.tree.Insert(e.cached, e.seq.Table())
	e.unlock()
}

// kvStats fills the cache fields of st.
func (e *Engine) kvStats(st *Stats) {
	st.KVUsed = e.st.Len()
	if e.pool == nil {
		return
	}
	st.PoolBlocks, st.PoolUsed, st.BlockSize = e.pool.Blocks(), e.pool.Used(), e.pool.BlockSize()
	st.SeqBlocks, st.TreeBlocks = len(e.seq.Table()), e.tree.Blocks()
	st.Evictions = e.tree.Evicted()
	lay := e.pool.Layout()
	st.KVFormatK, st.KVFormatV = lay.K.String(), lay.V.String()
	st.BlockBytes = lay.BytesPerBlock(e.pool.BlockSize())
}

// countReuse adds a reply's prompt and reused ids to the engine's totals.
func (e *Engine) countReuse(st *Stats) {
	e.totalPrompt += st.PromptTokens
	e.totalReused += st.ReusedTokens
	st.TotalPromptTokens, st.TotalReusedTokens = e.totalPrompt, e.totalReused
	if e.totalPrompt > 0 {
		st.HitRate = float64(e.totalReused) / float64(e.totalPrompt)
	}
}

// ErrNoPagedCache is returned by ExportKV and ImportKV when the engine runs
// a contiguous cache (the model has no paged path, or the prefix cache is off).
var ErrNoPagedCache = errors.New("engine: KV export/import needs the paged KV cache (a course model with the prefix cache on)")

// idle runs f while no reply runs (and none can start).
func (e *Engine) idle(f func() error) error {
	if e.err != nil {
		return e.err
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.closed:
		return ErrClosed
	case e.running != nil:
		return ErrBusy
	}
	return f()
}

// ExportKV writes the cached sequence (the ids of the last reply's prompt
// and reply, and their keys and values) to w in the kvcache v1 format. It
// fails while a reply runs.
func (e *Engine) ExportKV(w io.Writer) error {
	return e.idle(func() error {
		if e.pool == nil {
			return ErrNoPagedCache
		}
		if len(e.cached) == 0 {
			return errors.New("engine: nothing cached to export")
		}
		return e.seq.Export(w, e.identity, e.cached)
	})
}

// ImportKV reads a file ExportKV wrote for the same model and makes it the
// cached sequence (and puts it in the prefix tree), so a conversation
// continues without prefilling what the file holds. It returns the cached
// ids. A file from another model, another format version, or a truncated or
// corrupted one is refused and changes nothing.
func (e *Engine) ImportKV(r io.Reader) ([]int, error) {
	var ids []int
	err := e.idle(func() error {
		if e.pool == nil {
			return ErrNoPagedCache
		}
		s, toks, err := e.pool.Import(r, e.identity, e.seq.Cap())
		if err != nil {
			return err
		}
		defer s.Free()
		for i, id := range toks {
			if id < 0 || id >= e.vocab {
				return fmt.Errorf("%w: token id %d at position %d is outside the vocabulary", kvcache.ErrFormat, id, i)
			}
		}
		if err := e.seq.Replace(s.Table(), s.Len()); err != nil {
			return err
		}
		e.cached = append(e.cached[:0], toks...)
		e.tree.Insert(e.cached, e.seq.Table())
		ids = toks
		return nil
	})
	return ids, err
}

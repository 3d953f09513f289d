package engine

// The KV block map: the pool as the KV view draws it, one state per block.
// It is made on demand (at the UI's frame rate, under the cache lock for a
// pass over the blocks), never by the decoding loop.

// BlockState is what one block of the KV pool holds.
type BlockState uint8

const (
	BlockFree    BlockState = iota // nobody holds it
	BlockOwn                       // the conversation's sequence alone
	BlockShared                    // the conversation's, and held elsewhere too (ref count > 1): a prefix reused, or kept by the cache
	BlockCached                    // not the conversation's: kept by the prefix cache (or another sequence) for reuse
	BlockEvicted                   // dropped from the cache lately (by eviction, or the last reply's copy freed), free now
)

// evictedFor is how many BlockMap calls a block stays marked as evicted
// (about 3 s at the UI's 30 Hz).
const evictedFor = 90

// blockMapState is what BlockMap remembers between calls, under kvmu.
type blockMapState struct {
	prev []BlockState
	age  []uint16 // calls since the block was evicted
}

// BlockMap writes the state of every block of the pool into dst (grown as
// needed) and returns it. The conversation is r's sequence (nil, or a reply
// that has finished: the last finished reply's). A block counts as evicted
// when it went from the cache to free since an earlier call.
func (e *Engine) BlockMap(r *Reply, dst []BlockState) []BlockState {
	if e.err != nil {
		return dst[:0]
	}
	e.kvmu.Lock()
	defer e.kvmu.Unlock()
	p := e.pool
	n := p.Blocks()
	if cap(dst) < n {
		dst = make([]BlockState, n)
	}
	dst = dst[:n]
	clear(dst)
	for b := range n {
		if p.Ref(int32(b)) > 0 {
			dst[b] = BlockCached
		}
	}
	seq := e.last
	if r != nil && r.seq != nil {
		seq = r.seq
	}
	if seq != nil {
		for _, b := range seq.Table() {
			dst[b] = BlockOwn
			if p.Ref(b) > 1 {
				dst[b] = BlockShared
			}
		}
	}
	m := &e.bmap
	if len(m.prev) != n {
		m.prev, m.age = make([]BlockState, n), make([]uint16, n)
	}
	for b, s := range dst {
		switch prev := m.prev[b]; {
		case s != BlockFree:
		case prev == BlockCached || prev == BlockShared:
			dst[b], m.age[b] = BlockEvicted, 0
		case prev == BlockEvicted && m.age[b] < evictedFor:
			dst[b] = BlockEvicted
			m.age[b]++
		}
	}
	copy(m.prev, dst)
	return dst
}

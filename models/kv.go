package models

// Paged KV caches. A model that implements PagedModel can run its forward
// pass over a KV handle whose positions live in fixed-size blocks of a shared
// pool (engine/kvcache), so sequences can share a cached prefix block by block
// instead of each owning a contiguous [Cap][KVDim] slab. Models that do not
// implement it keep the contiguous State from NewState.

// KVLayout is what a model caches per position: KDim key floats and VDim
// value floats in each of Layers layers, each row made of Heads equal head
// slices (an int8 cache keeps one scale per position and head).
type KVLayout struct {
	Layers     int
	KDim, VDim int
	Heads      int
}

// KV is one sequence's paged KV cache as a forward pass sees it. Position p
// lives in row p%BlockSize() of block p/BlockSize(). The engine owns it; a
// paged State only reads and writes rows and moves Len through it.
type KV interface {
	// Len is the number of positions written.
	Len() int
	// Cap is the most positions the sequence may hold.
	Cap() int
	// BlockSize is the positions per block.
	BlockSize() int
	// Append makes positions Len()..Len()+n-1 writable and counts them in
	// Len (copying a shared block first). It fails, changing nothing, when
	// no block can be had or Cap would be passed. It must not allocate.
	Append(n int) error
	// Truncate drops positions >= n.
	Truncate(n int)
	// Row is layer l's key row [KDim] and value row [VDim] of position pos,
	// for writing the position's keys and values (pos < Len()). A part
	// stored as int8 (see Quantized) is nil.
	Row(l, pos int) (k, v []float32)
	// Block is layer l's rows of the i-th block of the sequence,
	// [BlockSize][KDim] and [BlockSize][VDim]: attention reads positions in
	// contiguous runs of a block rather than one call per position. A part
	// stored as int8 is nil.
	Block(l, i int) (k, v []float32)

	// Quantized reports whether keys and values are stored as int8. When
	// either is, a forward pass writes rows with WriteRow and reads blocks
	// with BlockK and BlockV instead of Row and Block.
	Quantized() (k, v bool)
	// WriteRow stores layer l's key row [KDim] and value row [VDim] of
	// position pos (< Len()), quantizing a part stored as int8. It must not
	// allocate.
	WriteRow(l, pos int, k, v []float32)
	// BlockK is layer l's key rows of the i-th block as float32,
	// [BlockSize][KDim]: the cache's own rows when keys are float32, else
	// the rows below Len() dequantized into scratch (len >= BlockSize·KDim),
	// which is returned. It must not allocate.
	BlockK(l, i int, scratch []float32) []float32
	// BlockV: see BlockK (values, [BlockSize][VDim]).
	BlockV(l, i int, scratch []float32) []float32
}

// PagedModel is a Model whose forward pass can read and write its KV cache
// through a KV handle.
type PagedModel interface {
	Model
	// KVLayout is the shape of one cached position.
	KVLayout() KVLayout
	// NewPagedState returns a State whose cache is kv (Len, Cap and
	// Truncate go through it) with the model's own scratch buffers. A
	// Forward that returns an error leaves kv as it was.
	NewPagedState(kv KV) State
}

package models

// KV caches. A sequence's keys and values live in fixed-size blocks of a
// shared pool (models/kvcache), so sequences can share a cached prefix block
// by block; a forward pass reads and writes them through this interface
// only. A cache for one private sequence is a sequence over a pool of its
// own.

// KVLayout is what a model caches per position: KDim key floats and VDim
// value floats in each of Layers layers, each row made of Heads equal head
// slices (a quantized cache keeps one scale per position and head).
type KVLayout struct {
	Layers     int
	KDim, VDim int
	Heads      int
}

// KV is one sequence's cache as a forward pass sees it. Position p lives in
// row p%BlockSize() of block p/BlockSize(). How rows are stored (float32,
// int8, ...) is the cache's business: a forward pass writes float32 rows
// and reads float32 runs of blocks.
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
	// WriteRow stores layer l's key row [KDim] and value row [VDim] of
	// position pos (< Len()). It must not allocate.
	WriteRow(l, pos int, k, v []float32)
	// Keys is layer l's key rows of blocks i.. of the sequence as float32:
	// the cache's own rows of the longest run of blocks i..i+n-1 (n >= 1,
	// i+n <= j) that lie next to each other in its storage, so one kernel
	// call reads them all, [n·BlockSize][KDim]; or, when it stores keys in
	// another form, block i's rows below Len() decoded into scratch (len >=
	// BlockSize·KDim), n = 1. It returns the rows and n, and must not
	// allocate.
	Keys(l, i, j int, scratch []float32) ([]float32, int)
	// Values: see Keys (values, [n·BlockSize][VDim]).
	Values(l, i, j int, scratch []float32) ([]float32, int)
	// KeysStored is layer l's key rows of the longest run of blocks
	// i..i+n-1 (n >= 1, i+n <= j) that lie next to each other in storage,
	// as stored, when the cache keeps keys in a form attention reads in
	// place (f16 halves; int8 or E4M3 codes with a scale per position and
	// head; int4 codes with a scale per 32 values of a head), and n; a zero
	// StoredRows otherwise (read them through Keys).
	// It must not allocate.
	KeysStored(l, i, j int) (StoredRows, int)
	// ValuesStored: see KeysStored.
	ValuesStored(l, i, j int) (StoredRows, int)
}

// StoredRows is a run of cached rows in a form attention reads in place,
// without decoding it into float32 first: F16, IEEE halves ([rows][dim]);
// or I8, int8 codes ([rows][dim]), or FP8, E4M3 codes, with Scales, a
// float32 per row and head ([rows][Heads]; a value is the code's value
// times its scale); or I4, int4 codes, two a byte, each head's starting on
// a byte ([rows][Heads][⌈d/2⌉], d = dim/Heads), with Scales a float32 per
// kernels.Int4KVGroup values of a head ([rows][Heads][⌈d/32⌉]; a value is
// kernels.Int4Levels[code] times its scale).
type StoredRows struct {
	F16    []uint16
	I8     []int8
	FP8    []uint8
	I4     []byte
	Scales []float32
}

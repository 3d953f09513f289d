// Package kvcache is a paged KV cache: one preallocated pool of fixed-size
// blocks (BlockSize positions of every layer's keys and values each), shared
// by sequences that are block tables into it (vLLM's PagedAttention layout).
//
// Blocks are reference counted: Alloc, Retain, Release. Fork shares a
// sequence's blocks; a write into a block someone else also holds copies it
// first (copy-on-write, in Seq.Append). Which prefixes are worth keeping is
// not the pool's business: the radix tree (engine/prefix) holds references
// on the blocks it caches and lets go of them when asked; a caller that
// needs blocks the pool lacks (Seq.Need tells how many) asks the tree first.
//
// Keys and values are each stored as float32 rows or, when the layout asks,
// quantized: int8 or FP8 codes with a float32 scale per position and KV
// head, or int4 codes with a scale per 32 elements of a head (quant.go).
//
// The pool is pure data: rows, block ids, counts. It is not safe for
// concurrent use. Export/Import (file.go) move a sequence to and from a file,
// with the chained hash of each block (ChainHash) to check it.
package kvcache

import (
	"errors"
	"fmt"
	"slices"

	"chat/models/hugepage"
)

// Layout is what one position stores: KDim key and VDim value floats in each
// of Layers layers, the keys stored as K and the values as V (the zero value
// of each is F32). Heads is the number of KV heads a row holds (KDim and VDim
// are multiples of it): a quantized row's scale groups lie inside one head
// (0 means 1).
type Layout struct {
	Layers, KDim, VDim int
	Heads              int
	K, V               Format
}

// heads is the number of scale groups per row.
func (l Layout) heads() int { return max(l.Heads, 1) }

// RowBytes is the bytes one position of one layer takes: KDim+VDim floats,
// or for a quantized part its codes and float32 scales (quant.go).
func (l Layout) RowBytes() int64 {
	return l.K.rowBytes(l.KDim, l.heads()) + l.V.rowBytes(l.VDim, l.heads())
}

// BytesPerBlock is the memory one block of bs positions takes.
func (l Layout) BytesPerBlock(bs int) int64 {
	return int64(bs) * int64(l.Layers) * l.RowBytes()
}

// DefaultBlockSize is the block size the engine uses: 16 positions.
const DefaultBlockSize = 16

// BlocksFor is how many blocks of bs positions fit in budget bytes.
func BlocksFor(budget int64, l Layout, bs int) int {
	per := l.BytesPerBlock(bs)
	if per <= 0 || budget <= 0 {
		return 0
	}
	return int(min(budget/per, 1<<30))
}

// ErrFull is returned when no block is free for a write: every block is held
// by a sequence or the prefix tree.
var ErrFull = errors.New("kvcache: the KV pool is full: every block is in use (raise --kv-mem)")

const none = -1

// Pool is the block store.
type Pool struct {
	lay    Layout
	bs     int
	blocks int
	k, v   [][]float32 // per layer: [blocks][bs][KDim], [blocks][bs][VDim] (F32 parts)
	kq, vq [][]byte    // per layer, the codes of quantized parts, [blocks][bs][row's code bytes] (quant.go)
	ks, vs [][]float32 // per layer: their scales, [blocks][bs][row's scales]

	ref    []int32
	free   []int32 // blocks with ref 0 (a stack; see Alloc)
	at     []int32 // each block's index in free, or none while held
	used   int     // blocks with ref > 0
	copies int64   // copy-on-write copies
}

// NewPool preallocates blocks blocks of bs positions for layout l.
func NewPool(l Layout, bs, blocks int) (*Pool, error) {
	if l.Layers <= 0 || l.KDim <= 0 || l.VDim < 0 || bs <= 0 || blocks <= 0 {
		return nil, fmt.Errorf("kvcache: bad pool shape: %d layers, key %d, value %d floats, %d positions per block, %d blocks", l.Layers, l.KDim, l.VDim, bs, blocks)
	}
	if int64(blocks)*int64(bs)*int64(max(l.KDim, l.VDim)) > 1<<40 {
		return nil, fmt.Errorf("kvcache: a pool of %d blocks is too large", blocks)
	}
	if err := l.checkQuant(); err != nil {
		return nil, err
	}
	// The pool is made resident at once (allocRows), so one larger than
	// memory would not fail later but now, by the kernel's OOM killer.
	need := int64(blocks) * l.BytesPerBlock(bs)
	if avail, ok := hugepage.Available(); ok && need > avail {
		return nil, fmt.Errorf("kvcache: a KV pool of %d MB does not fit in the %d MB of memory available", need>>20, avail>>20)
	}
	p := &Pool{lay: l, bs: bs, blocks: blocks}
	p.allocRows()
	p.ref = make([]int32, blocks)
	p.free, p.at = spread(blocks), make([]int32, blocks)
	for i, b := range p.free {
		p.at[b] = int32(i)
	}
	return p, nil
}

// spread is the free stack of a new pool: popped, it gives block 0, then
// the middle of the pool, then the quarters, the eighths... (the
// bit-reversal order), so that sequences started together begin far apart
// and each has room to grow into the blocks after its own (Alloc).
func spread(blocks int) []int32 {
	bits := 0
	for 1<<bits < blocks {
		bits++
	}
	order := make([]int32, 0, blocks)
	for i := range 1 << bits {
		r := 0
		for k := range bits {
			r |= (i >> k & 1) << (bits - 1 - k)
		}
		if r < blocks {
			order = append(order, int32(r))
		}
	}
	slices.Reverse(order)
	return order
}

// Layout is the shape of a position.
func (p *Pool) Layout() Layout { return p.lay }

// BlockSize is the positions per block.
func (p *Pool) BlockSize() int { return p.bs }

// Blocks is the pool size in blocks.
func (p *Pool) Blocks() int { return p.blocks }

// Used is the number of blocks someone holds (ref > 0).
func (p *Pool) Used() int { return p.used }

// Free is the number of blocks nobody holds.
func (p *Pool) Free() int { return len(p.free) }

// Copies counts copy-on-write block copies.
func (p *Pool) Copies() int64 { return p.copies }

// Ref is block b's reference count.
func (p *Pool) Ref(b int32) int { return int(p.ref[b]) }

// rows is n blocks' rows from block b of one layer's storage (dim floats
// per position).
func (p *Pool) rows(layer []float32, b int32, n, dim int) []float32 {
	w := p.bs * dim
	return layer[int(b)*w : (int(b)+n)*w : (int(b)+n)*w]
}

// K and V are layer l's rows of block b: [BlockSize][KDim] and
// [BlockSize][VDim]; nil for a quantized part (see KQ, VQ).
func (p *Pool) K(l int, b int32) []float32 {
	if p.lay.K != F32 {
		return nil
	}
	n := p.bs * p.lay.KDim
	return p.k[l][int(b)*n : (int(b)+1)*n : (int(b)+1)*n]
}

// V: see K.
func (p *Pool) V(l int, b int32) []float32 {
	if p.lay.V != F32 {
		return nil
	}
	n := p.bs * p.lay.VDim
	return p.v[l][int(b)*n : (int(b)+1)*n : (int(b)+1)*n]
}

// Alloc returns a free block with ref 1, or ErrFull: the block after
// prev (a sequence's last block; none for a new sequence) when it is free,
// else the top of the free stack. A sequence's blocks then lie next to
// each other in the pool, so attention reads them as one stream: a block
// elsewhere costs a fresh start of the hardware prefetchers, which made
// scattered 16-position blocks of f16 keys and values about 1.8× slower
// to read than adjacent ones. Its contents are whatever they were.
func (p *Pool) Alloc(prev int32) (int32, error) {
	n := len(p.free)
	if n == 0 {
		return none, ErrFull
	}
	b := p.free[n-1]
	if next := prev + 1; prev != none && int(next) < p.blocks && p.ref[next] == 0 {
		b = next
	}
	// Take b out of the stack: the top moves into its place.
	i, top := p.at[b], p.free[n-1]
	p.free[i], p.at[top] = top, i
	p.free, p.at[b] = p.free[:n-1], none
	p.ref[b] = 1
	p.used++
	return b, nil
}

// Retain adds a reference to a held block.
func (p *Pool) Retain(b int32) {
	if p.ref[b] <= 0 {
		panic("kvcache: Retain of a free block")
	}
	p.ref[b]++
}

// Release drops a reference to b; at zero the block is free.
func (p *Pool) Release(b int32) {
	if p.ref[b] <= 0 {
		panic("kvcache: Release of an unreferenced block")
	}
	p.ref[b]--
	if p.ref[b] == 0 {
		p.used--
		p.at[b] = int32(len(p.free))
		p.free = append(p.free, b)
	}
}

// copyBlock copies every layer's rows of src into dst.
func (p *Pool) copyBlock(dst, src int32) {
	for l := 0; l < p.lay.Layers; l++ {
		copy(p.K(l, dst), p.K(l, src))
		copy(p.V(l, dst), p.V(l, src))
		kq, ks := p.KQ(l, dst)
		sq, ss := p.KQ(l, src)
		copy(kq, sq)
		copy(ks, ss)
		vq, vs := p.VQ(l, dst)
		sq, ss = p.VQ(l, src)
		copy(vq, sq)
		copy(vs, ss)
	}
	p.copies++
}

// ChainHash is the chained hash of a block: FNV-1a (64-bit) over prev's 8
// little-endian bytes and each token id's 4 little-endian bytes. The first
// block of a sequence chains from 0.
func ChainHash(prev uint64, tokens []int) uint64 {
	const off, prime = 14695981039346656037, 1099511628211
	h := uint64(off)
	for i := 0; i < 8; i++ {
		h = (h ^ uint64(byte(prev>>(8*i)))) * prime
	}
	for _, t := range tokens {
		u := uint32(t)
		for i := 0; i < 4; i++ {
			h = (h ^ uint64(byte(u>>(8*i)))) * prime
		}
	}
	return h
}

// Package prefix is a radix tree over token ids at block granularity (as in
// SGLang's RadixAttention): every edge holds a whole number of KV blocks, and
// a path from the root spells a token prefix whose keys and values are those
// blocks, in order. The tree holds one pool reference on each of its blocks,
// and it is the only place that knows which prefix a block holds.
//
// Match finds the longest cached prefix of a prompt in whole blocks, and
// Partial the part of the next block that agrees with it; Lock pins the matched
// path while a request runs on it (a locked node is never evicted); Insert
// adds a finished sequence's full blocks; Evict drops least recently used
// unlocked leaves when the caller needs blocks the pool lacks.
//
// Children are keyed by the chained hash (kvcache.ChainHash) of their first
// block.
package prefix

import (
	"slices"

	"chat/models/kvcache"
)

// Tree is the radix tree. It is not safe for concurrent use.
type Tree struct {
	pool    *kvcache.Pool
	bs      int
	root    *node
	clock   uint64
	blocks  int   // blocks the tree holds
	evicted int64 // blocks evicted
}

type node struct {
	parent   *node
	tokens   []int   // edge label: len(blocks)·bs ids
	blocks   []int32 // the edge's blocks
	hashes   []uint64
	children map[uint64]*node // by the chained hash of the child's first block
	lock     int
	last     uint64
}

// Node is a handle on a matched path, for Lock and Unlock.
type Node struct{ n *node }

// New returns an empty tree over pool's blocks.
func New(pool *kvcache.Pool) *Tree {
	return &Tree{pool: pool, bs: pool.BlockSize(), root: &node{children: map[uint64]*node{}}}
}

// Blocks is the number of blocks the tree holds.
func (t *Tree) Blocks() int { return t.blocks }

// Evicted counts the blocks evicted so far.
func (t *Tree) Evicted() int64 { return t.evicted }

// Match returns the blocks of the longest cached prefix of tokens (whole
// blocks only), how many ids they cover, and the deepest node on the path,
// to Lock while the blocks are used. It marks the path as recently used.
func (t *Tree) Match(tokens []int) (blocks []int32, n int, at Node) {
	t.clock++
	cur := t.root
	var h uint64
	for {
		cur.last = t.clock
		if len(tokens)-n < t.bs {
			return blocks, n, Node{cur}
		}
		h1 := kvcache.ChainHash(h, tokens[n:n+t.bs])
		c := cur.children[h1]
		if c == nil || !slices.Equal(c.tokens[:t.bs], tokens[n:n+t.bs]) {
			return blocks, n, Node{cur}
		}
		// Walk the edge block by block.
		k := 0
		for k < len(c.blocks) && n+t.bs <= len(tokens) && slices.Equal(c.tokens[k*t.bs:(k+1)*t.bs], tokens[n:n+t.bs]) {
			blocks = append(blocks, c.blocks[k])
			h = c.hashes[k]
			n += t.bs
			k++
		}
		if k < len(c.blocks) {
			// Split so that a lock covers the matched blocks only.
			up := t.split(c, k)
			up.last = t.clock
			return blocks, n, Node{up}
		}
		cur = c
	}
}

// Partial extends a match (n ids at at, from Match) into the block after
// it: among at's children, the block whose first ids agree longest with
// tokens[n:], and how many do (k < BlockSize; 0: none). Its keys and values
// at those k positions are the ones tokens would give there, so a sequence
// may hold it for them: a partly filled, shared last block is copied before
// the sequence writes into it (kvcache.Seq.Append). This shares whole
// prompts that end inside a block (SGLang's radix cache shares at a token's
// granularity), where Match alone makes every request recompute up to a
// block's worth of the same ids.
func (t *Tree) Partial(tokens []int, n int, at Node) (block int32, k int) {
	rest := tokens[n:]
	for _, c := range at.n.children {
		m := 0
		for m < len(rest) && m < t.bs && c.tokens[m] == rest[m] {
			m++
		}
		if m > k {
			block, k = c.blocks[0], m
		}
	}
	if k == t.bs {
		k-- // a whole block Match did not take (it stops short of the last ids)
	}
	return block, k
}

// Lock pins at and its ancestors: they are not evicted until Unlock.
func (t *Tree) Lock(at Node) {
	for n := at.n; n != nil; n = n.parent {
		n.lock++
	}
}

// Unlock undoes one Lock of at.
func (t *Tree) Unlock(at Node) {
	for n := at.n; n != nil; n = n.parent {
		if n.lock > 0 {
			n.lock--
		}
	}
}

// Insert adds the prefix tokens[:len(blocks)·bs] held by blocks (a
// sequence's block table; a shorter tokens drops the blocks it does not
// fill). Blocks already in the tree for the same prefix are kept; the new
// ones gain a tree reference and their chained hashes. It returns how many
// blocks were added.
func (t *Tree) Insert(tokens []int, blocks []int32) int {
	nb := min(len(blocks), len(tokens)/t.bs)
	t.clock++
	cur := t.root
	cur.last = t.clock
	var h uint64
	i := 0 // blocks consumed
	added := 0
	for i < nb {
		blk := tokens[i*t.bs : (i+1)*t.bs]
		h1 := kvcache.ChainHash(h, blk)
		c := cur.children[h1]
		if c == nil || !slices.Equal(c.tokens[:t.bs], blk) {
			if c != nil {
				return added // a hash collision: leave the tree as it is
			}
			// A new leaf with the rest.
			leaf := &node{parent: cur, children: map[uint64]*node{}, last: t.clock}
			for ; i < nb; i++ {
				blk := tokens[i*t.bs : (i+1)*t.bs]
				h = kvcache.ChainHash(h, blk)
				b := blocks[i]
				t.pool.Retain(b)
				leaf.tokens = append(leaf.tokens, blk...)
				leaf.blocks = append(leaf.blocks, b)
				leaf.hashes = append(leaf.hashes, h)
				added++
				t.blocks++
			}
			if len(leaf.blocks) > 0 {
				cur.children[leaf.hashes[0]] = leaf
			}
			return added
		}
		k := 0
		for k < len(c.blocks) && i < nb && slices.Equal(c.tokens[k*t.bs:(k+1)*t.bs], tokens[i*t.bs:(i+1)*t.bs]) {
			h = c.hashes[k]
			k++
			i++
		}
		c.last = t.clock
		if k < len(c.blocks) {
			if i == nb {
				return added
			}
			c = t.split(c, k)
		}
		cur = c
	}
	return added
}

// split cuts c's edge after k blocks and returns the new node above c
// holding the first k; c keeps the rest and its children. Handles keep
// pointing at c, and locks through c pass through the new node (it takes
// c's lock count), so Unlock stays balanced.
func (t *Tree) split(c *node, k int) *node {
	up := &node{
		parent:   c.parent,
		tokens:   slices.Clone(c.tokens[:k*t.bs]),
		blocks:   slices.Clone(c.blocks[:k]),
		hashes:   slices.Clone(c.hashes[:k]),
		children: map[uint64]*node{c.hashes[k]: c},
		lock:     c.lock,
		last:     c.last,
	}
	c.parent.children[c.hashes[0]] = up
	c.tokens, c.blocks, c.hashes = c.tokens[k*t.bs:], c.blocks[k:], c.hashes[k:]
	c.parent = up
	return up
}

// Evict drops least recently used unlocked leaves until at least need of
// their blocks went back to the pool unreferenced, or no leaf can go. It
// returns how many blocks became unreferenced.
func (t *Tree) Evict(need int) int {
	freed := 0
	for freed < need {
		leaf := t.lru(t.root, nil)
		if leaf == nil {
			break
		}
		for _, b := range leaf.blocks {
			t.pool.Release(b)
			if t.pool.Ref(b) == 0 {
				freed++
			}
		}
		t.blocks -= len(leaf.blocks)
		delete(leaf.parent.children, leaf.hashes[0])
		t.evicted += int64(len(leaf.blocks))
	}
	return freed
}

// lru returns the least recently used unlocked leaf under n (depth-first,
// no allocation), or best.
func (t *Tree) lru(n *node, best *node) *node {
	for _, c := range n.children {
		if len(c.children) == 0 {
			if c.lock == 0 && (best == nil || c.last < best.last) {
				best = c
			}
			continue
		}
		best = t.lru(c, best)
	}
	return best
}

// Clear evicts every unlocked leaf, and so every unlocked subtree.
func (t *Tree) Clear() { t.Evict(1 << 30) }

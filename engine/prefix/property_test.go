package prefix

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"chat/models/kvcache"
)

// refSeq is the reference model of one sequence: its token ids and the value
// written at each position (every key float of position i in layer l is
// val[i]+l, every value float -(val[i]+l)).
type refSeq struct {
	s      *kvcache.Seq
	tokens []int
	val    []float32
	lock   *Node
}

// TestPoolProperties drives random fork / append / truncate / free / tree
// insert / match / evict / export / import against a plain model (each
// sequence as a list of rows) and checks after every step that each
// sequence reads back exactly its rows (copy-on-write isolation), that every
// block's reference count is the number of its holders, that used + free =
// total, and at the end that freeing everything leaks no block.
func TestPoolProperties(t *testing.T) {
	seeds := 30
	if testing.Short() {
		seeds = 5
	}
	for seed := range seeds {
		runProperties(t, uint64(seed))
	}
}

func runProperties(t *testing.T, seed uint64) {
	rng := rand.New(rand.NewPCG(seed, 7))
	lay := kvcache.Layout{Layers: 2, KDim: 3, VDim: 2}
	bs := 1 + rng.IntN(4)
	nblocks := 6 + rng.IntN(20)
	maxPos := 4 * bs * 3
	pool, err := kvcache.NewPool(lay, bs, nblocks)
	if err != nil {
		t.Fatal(err)
	}
	tree := New(pool)
	var seqs []*refSeq
	counter := float32(0)
	const id = "test-model"

	write := func(r *refSeq, from int) {
		for pos := from; pos < r.s.Len(); pos++ {
			counter++
			r.val = append(r.val[:pos], counter)
			for l := 0; l < lay.Layers; l++ {
				k, v := make([]float32, lay.KDim), make([]float32, lay.VDim)
				for j := range k {
					k[j] = counter + float32(l)
				}
				for j := range v {
					v[j] = -(counter + float32(l))
				}
				r.s.WriteRow(l, pos, k, v)
			}
		}
	}
	check := func(step int, op string) {
		t.Helper()
		holders := make([]int, nblocks)
		for _, r := range seqs {
			if r.s.Len() != len(r.tokens) || len(r.val) != len(r.tokens) {
				t.Fatalf("seed %d step %d (%s): seq len %d, tokens %d, vals %d", seed, step, op, r.s.Len(), len(r.tokens), len(r.val))
			}
			for _, b := range r.s.Table() {
				holders[b]++
			}
			for pos := range r.s.Len() {
				for l := 0; l < lay.Layers; l++ {
					k, v := row(r.s, l, pos)
					want := r.val[pos] + float32(l)
					if k[0] != want || k[len(k)-1] != want || v[0] != -want {
						t.Fatalf("seed %d step %d (%s): pos %d layer %d reads k=%v v=%v, want %v", seed, step, op, pos, l, k[0], v[0], want)
					}
				}
			}
		}
		for _, r := range seqs { // a locked path is never evicted
			if r.lock == nil {
				continue
			}
			for n := r.lock.n; n.parent != nil; n = n.parent {
				if n.lock <= 0 || n.parent.children[n.hashes[0]] != n {
					t.Fatalf("seed %d step %d (%s): a locked node was evicted or unlocked", seed, step, op)
				}
			}
		}
		tree.walk(tree.root, func(n *node) {
			for _, b := range n.blocks {
				holders[b]++
			}
		})
		used := 0
		for b := range nblocks {
			if pool.Ref(int32(b)) != holders[b] {
				t.Fatalf("seed %d step %d (%s): block %d ref %d, holders %d", seed, step, op, b, pool.Ref(int32(b)), holders[b])
			}
			if holders[b] > 0 {
				used++
			}
		}
		if pool.Used() != used || pool.Used()+pool.Free() != nblocks || tree.Blocks() != countTree(tree) {
			t.Fatalf("seed %d step %d (%s): used %d (counted %d), free %d, total %d, tree %d/%d",
				seed, step, op, pool.Used(), used, pool.Free(), nblocks, tree.Blocks(), countTree(tree))
		}
	}
	vocab := 3 // a small vocabulary makes shared prefixes common
	for step := range 400 {
		op := rng.IntN(9)
		name := ""
		switch {
		case op == 0 || len(seqs) == 0: // new sequence from a tree match
			name = "match"
			toks := make([]int, rng.IntN(maxPos))
			for i := range toks {
				toks[i] = rng.IntN(vocab)
			}
			blocks, n, at := tree.Match(toks)
			s, err := pool.SeqFrom(blocks, n, maxPos)
			if err != nil {
				t.Fatal(err)
			}
			r := &refSeq{s: s, tokens: slices.Clone(toks[:n])}
			// The matched rows are the ones the tree's blocks hold: read them
			// back through the reference of whoever inserted them.
			r.val = make([]float32, n)
			for pos := range n {
				k, _ := row(s, 0, pos)
				r.val[pos] = k[0]
			}
			tree.Lock(at)
			r.lock = &at
			seqs = append(seqs, r)
		case op == 1: // fork
			name = "fork"
			r := seqs[rng.IntN(len(seqs))]
			seqs = append(seqs, &refSeq{s: r.s.Fork(), tokens: slices.Clone(r.tokens), val: slices.Clone(r.val)})
		case op <= 3: // append
			name = "append"
			r := seqs[rng.IntN(len(seqs))]
			n := 1 + rng.IntN(2*bs)
			from := r.s.Len()
			if need := r.s.Need(n); pool.Free() < need { // as the engine does
				tree.Evict(need - pool.Free())
			}
			err := r.s.Append(n)
			if from+n > maxPos || errors.Is(err, kvcache.ErrFull) {
				if err == nil {
					t.Fatalf("seed %d: append past the cap succeeded", seed)
				}
				if r.s.Len() != from {
					t.Fatalf("seed %d: failed append changed the length", seed)
				}
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			for range n {
				r.tokens = append(r.tokens, rng.IntN(vocab))
			}
			write(r, from)
		case op == 4: // truncate
			name = "truncate"
			r := seqs[rng.IntN(len(seqs))]
			n := rng.IntN(r.s.Len() + 1)
			r.s.Truncate(n)
			r.tokens, r.val = r.tokens[:n], r.val[:n]
		case op == 5: // free
			name = "free"
			i := rng.IntN(len(seqs))
			seqs[i].s.Free()
			if seqs[i].lock != nil {
				tree.Unlock(*seqs[i].lock)
			}
			seqs = slices.Delete(seqs, i, i+1)
		case op == 6: // insert into the tree
			name = "insert"
			r := seqs[rng.IntN(len(seqs))]
			tree.Insert(r.tokens, r.s.Table())
		case op == 7: // evict
			name = "evict"
			tree.Evict(1 + rng.IntN(3))
		case op == 8: // export, then import as a new sequence
			name = "export/import"
			r := seqs[rng.IntN(len(seqs))]
			if r.s.Len() == 0 {
				break
			}
			var buf bytes.Buffer
			if err := r.s.Export(&buf, id, r.tokens); err != nil {
				t.Fatal(err)
			}
			if pool.Free() < len(r.s.Table()) {
				tree.Evict(len(r.s.Table()) - pool.Free())
			}
			s, toks, err := pool.Import(bytes.NewReader(buf.Bytes()), id, maxPos)
			if errors.Is(err, kvcache.ErrFull) {
				break
			}
			if err != nil {
				t.Fatalf("seed %d: import: %v", seed, err)
			}
			if !slices.Equal(toks, r.tokens) {
				t.Fatalf("seed %d: imported tokens %v, want %v", seed, toks, r.tokens)
			}
			seqs = append(seqs, &refSeq{s: s, tokens: toks, val: slices.Clone(r.val)})
		}
		check(step, name)
	}
	for _, r := range seqs {
		r.s.Free()
		if r.lock != nil {
			tree.Unlock(*r.lock)
		}
	}
	tree.Clear()
	if pool.Used() != 0 || tree.Blocks() != 0 || pool.Free() != nblocks {
		t.Fatalf("seed %d: leak: used %d, tree %d, free %d of %d", seed, pool.Used(), tree.Blocks(), pool.Free(), nblocks)
	}
}

func (t *Tree) walk(n *node, f func(*node)) {
	f(n)
	for _, c := range n.children {
		t.walk(c, f)
	}
}

func countTree(t *Tree) int {
	n := 0
	t.walk(t.root, func(x *node) { n += len(x.blocks) })
	return n
}

// row is position pos's key and value rows in layer l.
func row(s *kvcache.Seq, l, pos int) (k, v []float32) {
	lay, bs := s.Pool().Layout(), s.BlockSize()
	r := pos % bs
	k, _ = s.Keys(l, pos/bs, pos/bs+1, nil)
	v, _ = s.Values(l, pos/bs, pos/bs+1, nil)
	return k[r*lay.KDim : (r+1)*lay.KDim], v[r*lay.VDim : (r+1)*lay.VDim]
}

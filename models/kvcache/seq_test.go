package kvcache

import (
	"math"
	"slices"
	"testing"
)

// TestKeysRuns: a fresh sequence's blocks are adjacent, so Keys hands out
// one run over all of them (capped at j); after a fork and copy-on-write
// the run breaks where the table does; blocks freed by Truncate come back
// in ascending order; an int8 cache decodes one block at a time.
// TestAllocKeepsSequencesAdjacent: sequences that grow together, a block
// each in turn, each keep their blocks adjacent in the pool while it has
// room (started apart, each growing into the blocks after its own), and
// so are read as one run; a sequence started after one ended takes its
// place. Every block is handed out once.
func TestAllocKeepsSequencesAdjacent(t *testing.T) {
	p, _ := NewPool(Layout{Layers: 1, KDim: 2, VDim: 2}, 4, 64)
	seqs := make([]*Seq, 8)
	for i := range seqs {
		seqs[i] = p.NewSeq(1 << 10)
	}
	for range 8 {
		for _, s := range seqs {
			if err := s.Append(4); err != nil {
				t.Fatal(err)
			}
		}
	}
	held := map[int32]bool{}
	for i, s := range seqs {
		tab := s.Table()
		if n := s.run(0, len(tab)); n != len(tab) {
			t.Errorf("sequence %d: blocks %v, a run of %d", i, tab, n)
		}
		for _, b := range tab {
			if held[b] {
				t.Fatalf("block %d handed out twice", b)
			}
			held[b] = true
		}
	}
	if p.Free() != 0 || len(held) != 64 {
		t.Fatalf("%d blocks free, %d held", p.Free(), len(held))
	}
	first := seqs[3].Table()[0]
	seqs[3].Free()
	s := p.NewSeq(1 << 10)
	if err := s.Append(32); err != nil {
		t.Fatal(err)
	}
	if tab := s.Table(); tab[0] != first || s.run(0, len(tab)) != len(tab) {
		t.Fatalf("a new sequence in a freed place: blocks %v, the freed ones began at %d", tab, first)
	}
	// Past its room a sequence goes on elsewhere rather than failing.
	s.Free()
	seqs[5].Free()
	if err := seqs[4].Append(64); err != nil {
		t.Fatalf("growing into another sequence's freed blocks: %v", err)
	}
}

func TestKeysRuns(t *testing.T) {
	p, _ := NewPool(Layout{Layers: 1, KDim: 2, VDim: 1}, 2, 12)
	s := p.NewSeq(20)
	if err := s.Append(7); err != nil { // blocks 0..3
		t.Fatal(err)
	}
	for pos := 0; pos < 7; pos++ {
		s.WriteRow(0, pos, []float32{float32(pos), -1}, []float32{float32(10 + pos)})
	}
	k, n := s.Keys(0, 0, 4, nil)
	if n != 4 || len(k) != 16 || k[2*6] != 6 {
		t.Fatalf("run of %d blocks, %d floats, position 6 key %v", n, len(k), k[12])
	}
	if _, n := s.Keys(0, 1, 3, nil); n != 2 {
		t.Fatalf("capped run: %d blocks", n)
	}
	v, n := s.Values(0, 2, 4, nil)
	if n != 2 || v[0] != 14 {
		t.Fatalf("values run: %d blocks, first %v", n, v[0])
	}
	f := s.Fork()
	if err := f.Append(1); err != nil { // copies block 3 (partly filled, shared)
		t.Fatal(err)
	}
	if _, n := f.Keys(0, 0, 4, nil); n != 3 {
		t.Fatalf("after copy-on-write the run is %d blocks, want 3 (table %v)", n, f.Table())
	}
	f.Free()
	s.Truncate(0)
	s.Append(8)
	if tab := s.Table(); !slices.IsSorted(tab) || tab[3] != tab[0]+3 {
		t.Fatalf("re-allocated blocks %v are not in order", tab)
	}

	q, _ := NewPool(Layout{Layers: 1, KDim: 2, VDim: 2, Heads: 1, K: Int8}, 2, 4)
	qs := q.NewSeq(8)
	qs.Append(4)
	qs.WriteRow(0, 3, []float32{1, -2}, []float32{3, 4})
	k, n = qs.Keys(0, 0, 2, make([]float32, 4))
	if n != 1 || len(k) != 4 {
		t.Fatalf("int8 keys: %d blocks, %d floats", n, len(k))
	}
	if k, _ = qs.Keys(0, 1, 2, make([]float32, 4)); math.Abs(float64(k[2]-1)) > 1.0/127 || k[3] != -2 {
		t.Fatalf("int8 keys of position 3: %v", k[2:])
	}
}

package kvcache

import "fmt"

// Seq is one sequence: a block table into a pool and a length. Position i
// lives in row i%BlockSize of block Table()[i/BlockSize]. It implements
// models.KV (WriteRow, Keys and Values are in quant.go, with the quantized
// storage they may go through), so a forward pass reads and writes through
// it.
type Seq struct {
	p     *Pool
	table []int32
	n     int
	max   int
}

// NewSeq returns an empty sequence of at most maxPos positions.
func (p *Pool) NewSeq(maxPos int) *Seq {
	nb := (maxPos + p.bs - 1) / p.bs
	return &Seq{p: p, max: maxPos, table: make([]int32, 0, nb+1)}
}

// SeqFrom returns a sequence of the first n positions held by blocks (a
// prefix found in the prefix tree); it takes a reference on each.
func (p *Pool) SeqFrom(blocks []int32, n, maxPos int) (*Seq, error) {
	if n < 0 || n > maxPos || (n+p.bs-1)/p.bs != len(blocks) {
		return nil, fmt.Errorf("kvcache: %d blocks cannot hold exactly %d positions (max %d)", len(blocks), n, maxPos)
	}
	s := p.NewSeq(maxPos)
	for _, b := range blocks {
		p.Retain(b)
		s.table = append(s.table, b)
	}
	s.n = n
	return s, nil
}

// Replace makes s the first n positions held by blocks (references are
// taken on them before s's old blocks are released, so shared blocks stay).
func (s *Seq) Replace(blocks []int32, n int) error {
	if n < 0 || n > s.max || (n+s.p.bs-1)/s.p.bs != len(blocks) {
		return fmt.Errorf("kvcache: %d blocks cannot hold exactly %d positions (max %d)", len(blocks), n, s.max)
	}
	for _, b := range blocks {
		s.p.Retain(b)
	}
	for _, b := range s.table {
		s.p.Release(b)
	}
	s.table = append(s.table[:0], blocks...)
	s.n = n
	return nil
}

// Pool is the pool s lives in.
func (s *Seq) Pool() *Pool { return s.p }

// Len is the number of positions.
func (s *Seq) Len() int { return s.n }

// Cap is the most positions s may hold.
func (s *Seq) Cap() int { return s.max }

// BlockSize is the positions per block.
func (s *Seq) BlockSize() int { return s.p.bs }

// Table is the block table (owned by s; valid until the next change).
func (s *Seq) Table() []int32 { return s.table }

// Fork returns a sequence sharing all of s's blocks (each gains a
// reference); a later write by either copies the shared block first.
func (s *Seq) Fork() *Seq {
	f := &Seq{p: s.p, n: s.n, max: s.max, table: make([]int32, len(s.table), cap(s.table))}
	copy(f.table, s.table)
	for _, b := range f.table {
		s.p.Retain(b)
	}
	return f
}

// last is the block before the i-th of the table, or none: where the
// pool looks first for the i-th (Pool.Alloc).
func (s *Seq) last(i int) int32 {
	if i == 0 {
		return none
	}
	return s.table[i-1]
}

// Free releases every block; s is empty afterwards.
func (s *Seq) Free() { s.Truncate(0) }

// Truncate drops positions >= n and releases the blocks no longer needed.
func (s *Seq) Truncate(n int) {
	n = max(n, 0)
	if n >= s.n {
		return
	}
	keep := (n + s.p.bs - 1) / s.p.bs
	// Released last block first: the pool's free list is a stack, so the
	// next sequence starts where this one did and grows into the rest.
	for i := len(s.table) - 1; i >= keep; i-- {
		s.p.Release(s.table[i])
	}
	s.table = s.table[:keep]
	s.n = n
}

// Need is how many blocks Append(n) takes from the pool: new blocks, plus a
// copy of the partly filled last block when another holder shares it.
func (s *Seq) Need(n int) int {
	if n <= 0 {
		return 0
	}
	need := (s.n+n+s.p.bs-1)/s.p.bs - len(s.table)
	if s.n%s.p.bs != 0 && s.p.ref[s.table[len(s.table)-1]] > 1 {
		need++
	}
	return need
}

// Append makes positions Len()..Len()+n-1 writable and counts them in Len:
// the partly filled last block is copied first if another holder shares it,
// and new blocks come from the pool. On error (the pool is full, or Cap
// would be passed) nothing changes. It allocates no Go memory.
func (s *Seq) Append(n int) error {
	if n <= 0 {
		return nil
	}
	if s.n+n > s.max {
		return fmt.Errorf("kvcache: %d positions after %d exceed the sequence's %d", n, s.n, s.max)
	}
	p := s.p
	if r := s.n % p.bs; r != 0 {
		i := len(s.table) - 1
		if b := s.table[i]; p.ref[b] > 1 {
			nb, err := p.Alloc(s.last(i))
			if err != nil {
				return err
			}
			p.copyBlock(nb, b)
			s.table[i] = nb
			p.Release(b)
		}
	}
	need := (s.n+n+p.bs-1)/p.bs - len(s.table)
	have := len(s.table)
	for range need {
		b, err := p.Alloc(s.last(len(s.table)))
		if err != nil {
			for _, b := range s.table[have:] {
				p.Release(b)
			}
			s.table = s.table[:have]
			return err
		}
		s.table = append(s.table, b)
	}
	s.n += n
	return nil
}

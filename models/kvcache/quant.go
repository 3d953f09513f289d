package kvcache

import (
	"chat/models/hugepage"
	"fmt"
	"math"
)

// Int8 KV storage. Keys and values are quantized separately (Layout.K,
// Layout.V). An Int8 part stores each position's row of each layer as int8
// values with one float32 scale per KV head:
//
//	scale = absmax(row's head slice) / 127
//	q     = clamp(roundHalfToEven(x / scale), -127, 127)   (all 0 when absmax is 0)
//	x'    = float32(q) · scale                              (|x - x'| <= scale/2)
//
// The scale is per (position, head) rather than per (block, head): rows are
// appended one position at a time, and a per-block scale would have to
// re-quantize the block's earlier rows whenever a later row raised the
// absmax. Per-position scales make every write final and exact to describe.
// They cost 4 bytes per head per position and layer, so a row of D = H·d
// elements takes D + 4H bytes instead of 4D: with head size d that is
// (d+4)/(4d) of the float32 bytes — 0.27 for d = 64, 0.375 for d = 8.

// Format is how a part (keys or values) of the cache is stored.
type Format uint8

const (
	F32  Format = iota // float32 rows
	Int8               // int8 rows, a float32 scale per position and head
)

func (f Format) String() string {
	switch f {
	case F32:
		return "f32"
	case Int8:
		return "int8"
	}
	return fmt.Sprintf("Format(%d)", uint8(f))
}

// ParseFormat reads "f32" (or "") and "int8".
func ParseFormat(s string) (Format, error) {
	switch s {
	case "", "f32":
		return F32, nil
	case "int8":
		return Int8, nil
	}
	return F32, fmt.Errorf("kvcache: KV format %q: want f32 or int8", s)
}

func (f Format) rowBytes(dim, heads int) int64 {
	if f == Int8 {
		return int64(dim) + 4*int64(heads)
	}
	return 4 * int64(dim)
}

// Quantized reports whether any part is stored as Int8.
func (l Layout) Quantized() bool { return l.K != F32 || l.V != F32 }

func (l Layout) checkQuant() error {
	for _, f := range []Format{l.K, l.V} {
		if f != F32 && f != Int8 {
			return fmt.Errorf("kvcache: unknown KV format %v", f)
		}
	}
	h := l.heads()
	if l.K == Int8 && l.KDim%h != 0 || l.V == Int8 && l.VDim%h != 0 {
		return fmt.Errorf("kvcache: %d heads do not divide rows of %d key and %d value floats", h, l.KDim, l.VDim)
	}
	return nil
}

// allocRows allocates every layer's storage for the layout's formats.
func (p *Pool) allocRows() {
	l, n, h := p.lay, p.blocks*p.bs, p.lay.heads()
	mk := func(f Format, dim int) (fl [][]float32, q [][]int8, sc [][]float32) {
		for range l.Layers {
			if f == Int8 {
				q = append(q, make([]int8, n*dim))
				sc = append(sc, make([]float32, n*h))
			} else {
				fl = append(fl, hugepage.Floats(n*dim))
			}
		}
		return
	}
	p.k, p.kq, p.ks = mk(l.K, l.KDim)
	p.v, p.vq, p.vs = mk(l.V, l.VDim)
}

// KQ is layer l's int8 key rows of block b, [BlockSize][KDim], and their
// scales, [BlockSize][Heads]; nil when keys are stored as F32.
func (p *Pool) KQ(l int, b int32) ([]int8, []float32) {
	if p.lay.K != Int8 {
		return nil, nil
	}
	return qrows(p.kq[l], p.ks[l], b, p.bs, p.lay.KDim, p.lay.heads())
}

// VQ: see KQ.
func (p *Pool) VQ(l int, b int32) ([]int8, []float32) {
	if p.lay.V != Int8 {
		return nil, nil
	}
	return qrows(p.vq[l], p.vs[l], b, p.bs, p.lay.VDim, p.lay.heads())
}

func qrows(q []int8, sc []float32, b int32, bs, dim, h int) ([]int8, []float32) {
	n, m := bs*dim, bs*h
	return q[int(b)*n : (int(b)+1)*n : (int(b)+1)*n], sc[int(b)*m : (int(b)+1)*m : (int(b)+1)*m]
}

// QuantizeRow stores x (len(q) floats, h equal head slices) as q and one
// scale per head in sc: scale = absmax/127, q = clamp(round half to even of
// x/scale, ±127); a head of zeros gets scale 0.
func QuantizeRow(q []int8, sc []float32, x []float32) {
	h := len(sc)
	d := len(q) / h
	x = x[:len(q)]
	for i := 0; i < h; i++ {
		xs, qs := x[i*d:(i+1)*d], q[i*d:(i+1)*d]
		var amax float32
		for _, v := range xs {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		if amax == 0 || amax != amax || math.IsInf(float64(amax), 0) {
			clear(qs)
			sc[i] = 0
			continue
		}
		s := amax / 127
		sc[i] = s
		for j, v := range xs {
			r := math.RoundToEven(float64(v / s))
			qs[j] = int8(min(max(r, -127), 127))
		}
	}
}

// DequantizeRows writes float32(q)·scale for rows rows of dim elements
// (h heads each) into out.
func DequantizeRows(out []float32, q []int8, sc []float32, rows, dim, h int) {
	d := dim / h
	out = out[:rows*dim]
	q = q[:rows*dim]
	for r := 0; r < rows*h; r++ {
		s := sc[r]
		qs, os := q[r*d:(r+1)*d], out[r*d:(r+1)*d]
		for j := range os {
			os[j] = float32(qs[j]) * s
		}
	}
}

// WriteRow stores layer l's key row k [KDim] and value row v [VDim] of
// position pos (< Len), quantizing the parts stored as Int8. It allocates
// nothing.
func (s *Seq) WriteRow(l, pos int, k, v []float32) {
	p := s.p
	b := s.table[pos/p.bs]
	r := pos % p.bs
	kd, vd, h := p.lay.KDim, p.lay.VDim, p.lay.heads()
	if p.lay.K == Int8 {
		q, sc := p.KQ(l, b)
		QuantizeRow(q[r*kd:(r+1)*kd], sc[r*h:(r+1)*h], k)
	} else {
		copy(p.K(l, b)[r*kd:(r+1)*kd], k[:kd])
	}
	if p.lay.V == Int8 {
		q, sc := p.VQ(l, b)
		QuantizeRow(q[r*vd:(r+1)*vd], sc[r*h:(r+1)*h], v)
	} else {
		copy(p.V(l, b)[r*vd:(r+1)*vd], v[:vd])
	}
}

// Keys is layer l's key rows of blocks i.. of the table as float32: the
// pool's own rows of the longest run of blocks i..i+n-1 (n >= 1, i+n <= j)
// that lie next to each other in the pool when keys are F32, so attention
// reads a freshly allocated sequence in one run; else block i's positions
// below Len dequantized into scratch (len >= BlockSize·KDim), n = 1. It
// allocates nothing.
func (s *Seq) Keys(l, i, j int, scratch []float32) ([]float32, int) {
	p := s.p
	if p.lay.K != Int8 {
		n := s.run(i, j)
		return p.rows(p.k[l], s.table[i], n, p.lay.KDim), n
	}
	q, sc := p.KQ(l, s.table[i])
	DequantizeRows(scratch, q, sc, s.rowsIn(i), p.lay.KDim, p.lay.heads())
	return scratch[:p.bs*p.lay.KDim], 1
}

// Values: see Keys.
func (s *Seq) Values(l, i, j int, scratch []float32) ([]float32, int) {
	p := s.p
	if p.lay.V != Int8 {
		n := s.run(i, j)
		return p.rows(p.v[l], s.table[i], n, p.lay.VDim), n
	}
	q, sc := p.VQ(l, s.table[i])
	DequantizeRows(scratch, q, sc, s.rowsIn(i), p.lay.VDim, p.lay.heads())
	return scratch[:p.bs*p.lay.VDim], 1
}

// run is how many blocks from the i-th of the table (before the j-th) have
// consecutive ids, so their rows are adjacent in the pool.
func (s *Seq) run(i, j int) int {
	j = min(j, len(s.table))
	n := 1
	for i+n < j && s.table[i+n] == s.table[i]+int32(n) {
		n++
	}
	return n
}

// rowsIn is the number of positions below Len in the i-th block.
func (s *Seq) rowsIn(i int) int { return min(s.p.bs, s.n-i*s.p.bs) }

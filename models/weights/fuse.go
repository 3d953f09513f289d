package weights

import (
	"chat/models/gguf"
	"chat/models/hugepage"
	"chat/models/kernels"
)

// Fused projections. Matrices that multiply the same input (an attention's
// Q, K and V; a gated feed-forward's gate and up) can be stacked into one
// matrix at load, so that a product streams one long matrix instead of
// several short ones (a short matrix loses its memory streams' start: on
// the AVX-512 host a batch of 8 read a 3072×768 Q8_0 matrix at 27 GB/s but a
// 768×768 one at 18). Each output row is the same kernel's dot product of
// the same row, so a fused product gives every part's rows the bits the
// part's own product gives. Only the integer formats stack: a float
// format's prefill takes the GEMM or not by the matrix's size
// (kernels.MatMulPrefill), so a fused matrix could round a part's rows
// otherwise than the part alone.
//
// Stack makes the stacked matrix, Split cuts it back into its parts (views
// sharing its storage, which stand wherever the parts stood: adapters,
// converters and tensor names see them as the matrices they were), and
// Whole recognises a list of parts as the matrix they were cut from, which
// is how a forward pass finds the fused product (nn.Pass.Mul3).

// part is rows [r0, r0+Rows()) of a stacked matrix whole: Linear is
// whole.Slice of those rows, sharing its storage.
type part struct {
	Linear
	whole Linear
	r0    int
}

// stacker is a format whose matrices can be stacked and split again at
// row boundaries without copying.
type stacker interface {
	// splitsAt reports whether Slice(r, ...) shares the storage.
	splitsAt(r int) bool
	// stack returns the rows of the matrix and then of rest (matrices of
	// the same type, format, kind and columns; stackable reports that) as
	// one new matrix.
	stack(rest []Linear) Linear
	// stackable reports whether o can be stacked below this matrix.
	stackable(o Linear) bool
}

// Stack returns the rows of parts, in order, as one new matrix, or nil when
// they cannot be stacked: parts of different formats (or kinds, or
// columns), a format that cannot be split again without a copy (LoRA,
// GPTQ, ...), or a part that would not start at a row where the format's
// storage can be cut (an interleaved format's row group of 16).
func Stack(parts ...Linear) Linear {
	if len(parts) < 2 || !splittable(parts) {
		return nil
	}
	return parts[0].(stacker).stack(parts[1:])
}

// splittable reports whether parts can be stacked and split again.
func splittable(parts []Linear) bool {
	s, ok := parts[0].(stacker)
	if !ok {
		return false
	}
	r := 0
	for i, p := range parts {
		if i > 0 && (!s.stackable(p) || !s.splitsAt(r)) {
			return false
		}
		r += p.Rows()
	}
	return true
}

// Split cuts whole into parts of rows[i] rows, in order (they must add up
// to whole.Rows()), as views sharing its storage that Whole recognises. It
// returns nil when a cut falls where whole's storage cannot be shared.
func Split(whole Linear, rows ...int) []Linear {
	s, ok := whole.(stacker)
	if !ok {
		return nil
	}
	total := 0
	for _, n := range rows {
		if n <= 0 || !s.splitsAt(total) {
			return nil
		}
		total += n
	}
	if total != whole.Rows() {
		return nil
	}
	out := make([]Linear, len(rows))
	r := 0
	for i, n := range rows {
		out[i] = &part{Linear: whole.Slice(r, r+n), whole: whole, r0: r}
		r += n
	}
	return out
}

// Whole returns the matrix parts were split from (Split) when they are
// all of its rows in order, and nil otherwise (parts of different
// matrices, or one of them replaced since, by an adapter or a
// conversion).
func Whole(parts ...Linear) Linear {
	if len(parts) == 0 {
		return nil
	}
	first, ok := parts[0].(*part)
	if !ok || first.r0 != 0 {
		return nil
	}
	r := 0
	for _, l := range parts {
		p, ok := l.(*part)
		if !ok || p.whole != first.whole || p.r0 != r {
			return nil
		}
		r += p.Rows()
	}
	if r != first.whole.Rows() {
		return nil
	}
	return first.whole
}

// StackGGUF is FromGGUF of several tensors of type t with cols columns,
// raws[i] holding rows[i] rows, stacked in order into one matrix (their
// bytes concatenated are the stacked tensor's), each packed into its place
// without a concatenated copy (which, garbage after the load, stayed in the
// RSS: the Go heap keeps freed memory while the live heap is large); nil
// when Split could not cut the result at the parts' boundaries without
// copying.
func StackGGUF(t gguf.Type, raws [][]byte, rows []int, cols int) (Linear, error) {
	if len(raws) != len(rows) || len(raws) < 2 {
		return nil, nil
	}
	total := 0
	for i, r := range rows {
		if i > 0 && !ggufSplitsAt(t, total) {
			return nil, nil
		}
		if err := checkGGUF(t, raws[i], r, cols); err != nil {
			return nil, err
		}
		total += r
	}
	if _, ok := ilPacks[t]; ok {
		return newInterleaved(t, raws, rows, cols), nil
	}
	return newBlocks(blockKinds[t], raws, rows, cols), nil
}

// ggufSplitsAt reports whether FromGGUF's matrix of type t splits at row
// r without copying.
func ggufSplitsAt(t gguf.Type, r int) bool {
	if _, ok := ilPacks[t]; ok {
		return r%kernels.ILRows == 0
	}
	if k, ok := blockKinds[t]; ok {
		if _, il := kernels.ILKFor(k.typ); il {
			return r%kernels.ILRows == 0
		}
		return true
	}
	return false
}

func (m *Interleaved) splitsAt(r int) bool { return r%kernels.ILRows == 0 }
func (m *Interleaved) stackable(o Linear) bool {
	p, ok := o.(*Interleaved)
	return ok && p.k == m.k && p.cols == m.cols && p.g == m.g && p.format == m.format && (p.gs == nil) == (m.gs == nil)
}
func (m *Interleaved) stack(rest []Linear) Linear {
	all := append([]Linear{m}, rest...)
	c := *m
	c.rows = 0
	for _, o := range all {
		c.rows += o.Rows()
	}
	c.w = hugepage.Bytes(kernels.ILBytes(m.k, c.rows, m.cols))
	at := 0
	for _, o := range all {
		p := o.(*Interleaved)
		at += copy(c.w[at:], p.w[:kernels.ILBytes(p.k, p.rows, p.cols)])
	}
	if m.gs != nil {
		c.gs = make([]float32, 0, kernels.ILScales(c.rows, m.cols, m.g))
		for _, o := range all {
			p := o.(*Interleaved)
			c.gs = append(c.gs, p.gs[:kernels.ILScales(p.rows, p.cols, p.g)]...)
		}
	}
	return &c
}

func (m *Blocks) splitsAt(r int) bool { return m.il == nil || r%kernels.ILRows == 0 }
func (m *Blocks) stackable(o Linear) bool {
	p, ok := o.(*Blocks)
	return ok && p.k == m.k && p.cols == m.cols && (p.il == nil) == (m.il == nil) && p.ilk == m.ilk
}
func (m *Blocks) stack(rest []Linear) Linear {
	all := append([]Linear{m}, rest...)
	c := *m
	c.rows = 0
	for _, o := range all {
		c.rows += o.Rows()
	}
	size := func(p *Blocks) int {
		if p.il != nil {
			return kernels.ILKBytes(p.ilk, p.rows, p.cols)
		}
		return p.rows * p.rowBytes()
	}
	buf := hugepage.Bytes(size(&c))
	at := 0
	for _, o := range all {
		p := o.(*Blocks)
		src := p.raw
		if p.il != nil {
			src = p.il
		}
		at += copy(buf[at:], src[:size(p)])
	}
	if m.il != nil {
		c.il, c.raw = buf, nil
	} else {
		c.raw, c.il = buf, nil
	}
	return &c
}

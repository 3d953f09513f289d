package weights

import (
	"chat/models/gguf"
	"chat/models/hugepage"
	"chat/models/kernels"
)

// Blocks is a matrix in one of GGUF's block formats, kept as the tensor's
// raw bytes (a view of the mapping, never copied) and multiplied by the
// format's own kernels with the activations quantised once per token as
// ggml's CPU backend does: Q8_K super-blocks for the K-quants (q4_k.go).
// The kinds are declared in the format files. (Q8_0, Q4_0 and Q5_0 are
// interleaved at load instead: il.go.) On AVX-512 VNNI hosts Q4_K, Q5_K,
// Q6_K, IQ4_XS, Q2_K and Q3_K are interleaved too (kernels.PackILK; the same size):
// their products then give the same bits several times faster.
type Blocks struct {
	rows, cols int
	raw        []byte
	il         []byte // interleaved (raw is nil then), of kind ilk
	ilk        kernels.ILKKind
	k          *blockKind
}

// newBlocks keeps raw blocks (a copy of them) or their interleaved form:
// parts raws[i] of rows[i] rows, stacked in order (each but the last whole
// row groups when interleaved), each copied or packed straight into its
// place (StackGGUF leaves no stacked copy of the file's blocks behind).
func newBlocks(k *blockKind, raws [][]byte, rows []int, cols int) *Blocks {
	m := &Blocks{rows: sum(rows), cols: cols, k: k}
	ilk, ok := kernels.ILKFor(k.typ)
	if !ok {
		if len(raws) == 1 {
			m.raw = bytesCopy(raws[0])
			return m
		}
		m.raw = hugepage.Bytes(m.rows * m.rowBytes())
		at := 0
		for _, raw := range raws {
			at += copy(m.raw[at:], raw)
		}
		return m
	}
	m.ilk = ilk
	m.il = hugepage.Bytes(kernels.ILKBytes(ilk, m.rows, cols))
	at := 0
	for i, raw := range raws {
		kernels.PackILK(ilk, m.il[at:], raw, rows[i], cols)
		at += kernels.ILKBytes(ilk, rows[i], cols)
	}
	return m
}

// blockKind is what sets one block format apart: its GGUF type, the
// activation it takes, and its kernels.
type blockKind struct {
	typ gguf.Type
	// mul computes out [n][rows] from n activations quantised into s.
	mul func(out []float32, w []byte, a quantAct, rows, cols, n int)
}

// quantAct is n quantised activation rows.
type quantAct struct {
	q    []int8
	d    []float32
	sums []int16
}

// blockKinds maps a GGUF type to its kind; each format file adds itself.
var blockKinds = map[gguf.Type]*blockKind{}

// registerBlocks adds a block format; it is made from float32 weights by
// ggml's reference quantiser (gguf.Quantize), and its products are int8 dots.
func registerBlocks(name string, k *blockKind) {
	blockKinds[k.typ] = k
	register(name, format{fromFloat: func(w []float32, rows, cols int) (Linear, error) {
		raw, err := quantizeBlocks(k.typ, w, cols)
		if err != nil {
			return nil, err
		}
		return newBlocks(k, [][]byte{raw}, []int{rows}, cols), nil
	}, arith: kernels.ArithInt8})
}

// quantizeBlocks encodes w, rows of cols values, as blocks of t.
func quantizeBlocks(t gguf.Type, w []float32, cols int) ([]byte, error) {
	if bs := t.BlockSize(); cols%bs != 0 {
		return nil, &ShapeError{Format: t.String(), Block: bs, Cols: cols}
	}
	return gguf.Quantize(t, w)
}

func (m *Blocks) Rows() int      { return m.rows }
func (m *Blocks) Cols() int      { return m.cols }
func (m *Blocks) Format() string { return m.k.typ.String() }
func (m *Blocks) Bytes() int64 {
	if m.il != nil {
		return int64(kernels.ILKBytes(m.ilk, m.rows, m.cols))
	}
	return int64(len(m.raw))
}

func (m *Blocks) rowBytes() int { return m.cols / m.k.typ.BlockSize() * m.k.typ.BlockBytes() }

func (m *Blocks) Mul(out, x []float32, n int, s *Scratch) {
	checkMul(m, out, x, n)
	a := quantizeQ8_K(x, n, m.cols, s)
	if m.il != nil {
		kernels.MatMulILK(m.ilk, out[:n*m.rows], m.il, a.q, a.d, a.sums, m.rows, m.cols, n)
		return
	}
	m.k.mul(out[:n*m.rows], m.raw, a, m.rows, m.cols, n)
}

func (m *Blocks) Row(dst []float32, r int) {
	if m.il != nil {
		var buf [kernels.Q6_KBytes]byte // a block at a time: no allocation
		blk := buf[:m.k.typ.BlockBytes()]
		for b := 0; b < m.cols/kernels.QK; b++ {
			kernels.ILKBlock(m.ilk, blk, m.il, r, b, m.cols)
			_ = gguf.Dequantize(m.k.typ, blk, dst[b*kernels.QK:(b+1)*kernels.QK])
		}
		return
	}
	rb := m.rowBytes()
	_ = gguf.Dequantize(m.k.typ, m.raw[r*rb:(r+1)*rb], dst[:m.cols]) // sizes checked at construction
}

// Slice shares the storage, unless the matrix is interleaved and r0 does not
// start a row group: those rows are repacked.
func (m *Blocks) Slice(r0, r1 int) Linear {
	checkSlice(m, r0, r1)
	rb := m.rowBytes()
	if m.il == nil {
		return &Blocks{rows: r1 - r0, cols: m.cols, raw: m.raw[r0*rb : r1*rb : r1*rb], k: m.k}
	}
	if r0%kernels.ILRows == 0 {
		return &Blocks{rows: r1 - r0, cols: m.cols, il: m.il[kernels.ILKBytes(m.ilk, r0, m.cols):], ilk: m.ilk, k: m.k}
	}
	raw := make([]byte, (r1-r0)*rb)
	bb := m.k.typ.BlockBytes()
	for r := r0; r < r1; r++ {
		for b := 0; b < m.cols/kernels.QK; b++ {
			kernels.ILKBlock(m.ilk, raw[(r-r0)*rb+b*bb:(r-r0)*rb+(b+1)*bb], m.il, r, b, m.cols)
		}
	}
	return newBlocks(m.k, [][]byte{raw}, []int{r1 - r0}, m.cols)
}

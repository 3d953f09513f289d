package weights

import (
	"chat/models/gguf"
	"chat/models/hugepage"
	"chat/models/kernels"
)

// Interleaved is a matrix of 32-value integer blocks repacked at load into
// the kernels' interleaved layout (kernels.ILKind: 16 rows in the lanes of
// a register), multiplied with the activations quantized to Q8_0 once per
// product, as ggml quantizes them. GGUF Q8_0, Q5_0, Q4_0, IQ4_NL, Q4_1 and
// Q5_1 tensors and the int4-gN-a8 formats use it (q8_0.go, q5_0.go,
// q4_0.go, iq4_nl.go, q4_1.go, int4.go). Each output is ggml's
// scalar-reference sum (one float step per block, Q4_1 and Q5_1 a second
// for their min), the same for one token or a batch.
//
// Repacking copies the tensor (it is no longer a view of the file's
// mapping); it is the same size as the file's blocks for Q8_0, Q4_0, IQ4_NL
// and Q4_1, 1.6× for Q5_0 and 1.5× for Q5_1, whose values are widened to
// bytes.
type Interleaved struct {
	rows, cols int
	k          kernels.ILKind
	w          []byte
	gs         []float32 // kernels.IL4G: group scales
	g          int       // their group
	format     string
}

// ilPacks is each GGUF block type's interleaved kind and packer.
var ilPacks = map[gguf.Type]struct {
	k    kernels.ILKind
	pack func(dst, raw []byte, rows, cols int)
}{
	gguf.TypeQ8_0:   {kernels.IL8, kernels.PackILQ8_0},
	gguf.TypeQ5_0:   {kernels.IL8, kernels.PackILQ5_0},
	gguf.TypeIQ4_NL: {kernels.IL4NL, kernels.PackILIQ4_NL},
	gguf.TypeQ4_0:   {kernels.IL4, kernels.PackILQ4_0},
	gguf.TypeQ4_1:   {kernels.IL4M, kernels.PackILQ4_1},
	gguf.TypeQ5_1:   {kernels.IL8M, kernels.PackILQ5_1},
}

// newInterleaved packs raw GGUF blocks of t (a type of ilPacks): parts
// raws[i] of rows[i] rows, stacked in order (each but the last whole row
// groups), each packed straight into its place (StackGGUF leaves no
// stacked copy of the file's blocks behind).
func newInterleaved(t gguf.Type, raws [][]byte, rows []int, cols int) *Interleaved {
	il, ok := ilPacks[t]
	if !ok {
		panic("weights: no interleaved layout for " + t.String())
	}
	m := &Interleaved{rows: sum(rows), cols: cols, format: t.String(), k: il.k}
	m.w = hugepage.Bytes(kernels.ILBytes(m.k, m.rows, cols))
	at := 0
	for i, raw := range raws {
		il.pack(m.w[at:], raw, rows[i], cols)
		at += kernels.ILBytes(m.k, rows[i], cols)
	}
	return m
}

// registerInterleaved adds the GGUF block format t, made from float32
// weights by ggml's reference quantiser; its products are int8 dots.
func registerInterleaved(t gguf.Type) {
	register(t.String(), format{fromFloat: func(w []float32, rows, cols int) (Linear, error) {
		raw, err := quantizeBlocks(t, w, cols)
		if err != nil {
			return nil, err
		}
		return newInterleaved(t, [][]byte{raw}, []int{rows}, cols), nil
	}, arith: kernels.ArithInt8})
}

func (m *Interleaved) Rows() int      { return m.rows }
func (m *Interleaved) Cols() int      { return m.cols }
func (m *Interleaved) Format() string { return m.format }
func (m *Interleaved) Bytes() int64 {
	return int64(kernels.ILBytes(m.k, m.rows, m.cols)) + 4*int64(len(m.gs))
}

func (m *Interleaved) Mul(out, x []float32, n int, s *Scratch) {
	checkMul(m, out, x, n)
	s.il.Quantize(x, n, m.cols, m.k)
	kernels.MatMulIL(m.k, out, m.w, m.gs, m.g, &s.il, m.rows, m.cols, s.Reuse)
}

func (m *Interleaved) Row(dst []float32, r int) {
	kernels.ILRow(m.k, dst, m.w, m.gs, m.g, r, m.cols)
}

// Slice shares the storage when r0 starts a row group, and repacks rows
// [r0, r1) otherwise.
func (m *Interleaved) Slice(r0, r1 int) Linear {
	checkSlice(m, r0, r1)
	c := *m
	c.rows = r1 - r0
	if r0%kernels.ILRows != 0 {
		c.w, c.gs = kernels.ILRepack(m.k, m.w, m.gs, m.g, m.rows, m.cols, r0, r1)
		return &c
	}
	g0 := r0 / kernels.ILRows
	c.w = m.w[g0*kernels.ILBytes(m.k, kernels.ILRows, m.cols):]
	if m.gs != nil {
		c.gs = m.gs[g0*kernels.ILScales(kernels.ILRows, m.cols, m.g):][:kernels.ILScales(c.rows, m.cols, m.g)]
	}
	return &c
}

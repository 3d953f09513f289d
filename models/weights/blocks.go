package weights

import (
	"chat/models/gguf"
)

// Blocks is a matrix in one of GGUF's block formats, kept as the tensor's
// raw bytes (a view of the mapping, never copied) and multiplied by the
// format's own kernels with the activations quantised once per token as
// ggml's CPU backend does: Q8_K super-blocks for the K-quants (q4_k.go).
// The kinds are declared in the format files. (Q8_0, Q4_0 and Q5_0 are
// interleaved at load instead: il.go.)
type Blocks struct {
	rows, cols int
	raw        []byte
	k          *blockKind
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
// ggml's reference quantiser (gguf.Quantize).
func registerBlocks(name string, k *blockKind) {
	blockKinds[k.typ] = k
	register(name, format{fromFloat: func(w []float32, rows, cols int) (Linear, error) {
		raw, err := quantizeBlocks(k.typ, w, cols)
		if err != nil {
			return nil, err
		}
		return &Blocks{rows: rows, cols: cols, raw: bytesCopy(raw), k: k}, nil
	}})
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
func (m *Blocks) Bytes() int64   { return int64(len(m.raw)) }

func (m *Blocks) rowBytes() int { return m.cols / m.k.typ.BlockSize() * m.k.typ.BlockBytes() }

func (m *Blocks) Mul(out, x []float32, n int, s *Scratch) {
	checkMul(m, out, x, n)
	a := quantizeQ8_K(x, n, m.cols, s)
	m.k.mul(out[:n*m.rows], m.raw, a, m.rows, m.cols, n)
}

func (m *Blocks) Row(dst []float32, r int) {
	rb := m.rowBytes()
	_ = gguf.Dequantize(m.k.typ, m.raw[r*rb:(r+1)*rb], dst[:m.cols]) // sizes checked at construction
}

func (m *Blocks) Slice(r0, r1 int) Linear {
	checkSlice(m, r0, r1)
	rb := m.rowBytes()
	return &Blocks{rows: r1 - r0, cols: m.cols, raw: m.raw[r0*rb : r1*rb : r1*rb], k: m.k}
}

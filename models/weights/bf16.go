package weights

import (
	"encoding/binary"

	"chat/models/gguf"
	"chat/models/kernels"
)

// BF16 is a matrix of bfloat16 weights, widened to float32 at load (there is
// no bf16 kernel yet, so it reads 4 bytes a weight). As ggml's vec_dot_bf16
// does, the activations are rounded to bf16 before the product.
type BF16 struct {
	rows, cols int
	w          []float32 // widened
}

func init() {
	register("bf16", format{fromFloat: func(w []float32, rows, cols int) (Linear, error) {
		m := &BF16{rows: rows, cols: cols, w: make([]float32, len(w))}
		for i, v := range w {
			m.w[i] = gguf.BF16ToF32(gguf.F32ToBF16(v))
		}
		return m, nil
	}})
}

// newBF16 widens the little-endian bf16 raw straight from the mapping (no
// u16View: that would copy it into huge-page memory only to read it once).
func newBF16(raw []byte, rows, cols int) *BF16 {
	m := &BF16{rows: rows, cols: cols, w: make([]float32, len(raw)/2)}
	for i := range m.w {
		m.w[i] = gguf.BF16ToF32(binary.LittleEndian.Uint16(raw[2*i:]))
	}
	return m
}

func (m *BF16) Rows() int      { return m.rows }
func (m *BF16) Cols() int      { return m.cols }
func (m *BF16) Format() string { return "bf16" }
func (m *BF16) Bytes() int64   { return 4 * int64(len(m.w)) }

func (m *BF16) Mul(out, x []float32, n int, s *Scratch) {
	checkMul(m, out, x, n)
	xr := s.floats(n * m.cols)
	for i, v := range x[:n*m.cols] {
		xr[i] = gguf.BF16ToF32(gguf.F32ToBF16(v))
	}
	mul := kernels.MatMul
	if s.Prefill {
		mul = kernels.MatMulPrefill
	}
	mul(out[:n*m.rows], m.w, xr, m.rows, m.cols, n)
}

func (m *BF16) Row(dst []float32, r int) { copy(dst[:m.cols], m.w[r*m.cols:(r+1)*m.cols]) }

func (m *BF16) Slice(r0, r1 int) Linear {
	checkSlice(m, r0, r1)
	return &BF16{rows: r1 - r0, cols: m.cols, w: m.w[r0*m.cols : r1*m.cols]}
}

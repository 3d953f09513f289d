package weights

import (
	"chat/models/gguf"
	"chat/models/kernels"
)

// BF16 is a matrix of bfloat16 weights (2 bytes each, usually a view of the
// file), widened in registers by kernels.MatMulBF16. As ggml's vec_dot_bf16
// does, the activations are rounded to bf16 first; the kernel then gives
// the bits of MatMul on the widened weights.
type BF16 struct {
	rows, cols int
	h          []uint16
}

func init() {
	register("bf16", format{fromFloat: func(w []float32, rows, cols int) (Linear, error) {
		h := make([]uint16, len(w))
		for i, v := range w {
			h[i] = gguf.F32ToBF16(v)
		}
		return &BF16{rows: rows, cols: cols, h: h}, nil
	}})
}

func (m *BF16) Rows() int      { return m.rows }
func (m *BF16) Cols() int      { return m.cols }
func (m *BF16) Format() string { return "bf16" }
func (m *BF16) Bytes() int64   { return 2 * int64(len(m.h)) }

func (m *BF16) Mul(out, x []float32, n int, s *Scratch) {
	checkMul(m, out, x, n)
	xr := s.floats(n * m.cols)
	kernels.RoundBF16(xr, x[:n*m.cols])
	mul := kernels.MatMulBF16
	if s.Prefill {
		mul = kernels.MatMulBF16Prefill
	}
	mul(out[:n*m.rows], m.h, xr, m.rows, m.cols, n)
}

func (m *BF16) Row(dst []float32, r int) {
	for i, h := range m.h[r*m.cols : (r+1)*m.cols] {
		dst[i] = gguf.BF16ToF32(h)
	}
}

func (m *BF16) Slice(r0, r1 int) Linear {
	checkSlice(m, r0, r1)
	return &BF16{rows: r1 - r0, cols: m.cols, h: m.h[r0*m.cols : r1*m.cols]}
}

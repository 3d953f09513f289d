package weights

import (
	"chat/models/gguf"
	"chat/models/kernels"
)

// F16 is a matrix of IEEE half-precision weights (2 bytes each, usually a
// view of the file), widened in registers by kernels.MatMulF16. As ggml's
// vec_dot_f16 does, the activations are rounded to f16 first; the kernel
// then gives the bits of MatMul on the widened weights.
type F16 struct {
	rows, cols int
	h          []uint16
}

func init() {
	register("f16", format{fromFloat: func(w []float32, rows, cols int) (Linear, error) {
		h := make([]uint16, len(w))
		for i, v := range w {
			h[i] = gguf.F32ToF16(v)
		}
		return &F16{rows: rows, cols: cols, h: h}, nil
	}})
}

func (m *F16) Rows() int      { return m.rows }
func (m *F16) Cols() int      { return m.cols }
func (m *F16) Format() string { return "f16" }
func (m *F16) Bytes() int64   { return 2 * int64(len(m.h)) }

func (m *F16) Mul(out, x []float32, n int, s *Scratch) {
	checkMul(m, out, x, n)
	xr := s.floats(n * m.cols)
	kernels.RoundF16(xr, x[:n*m.cols])
	mul := kernels.MatMulF16
	if s.Prefill {
		mul = kernels.MatMulF16Prefill
	}
	mul(out[:n*m.rows], m.h, xr, m.rows, m.cols, n)
}

func (m *F16) Row(dst []float32, r int) {
	for i, h := range m.h[r*m.cols : (r+1)*m.cols] {
		dst[i] = gguf.F16ToF32(h)
	}
}

func (m *F16) Slice(r0, r1 int) Linear {
	checkSlice(m, r0, r1)
	return &F16{rows: r1 - r0, cols: m.cols, h: m.h[r0*m.cols : r1*m.cols]}
}

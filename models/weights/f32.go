package weights

import "chat/models/kernels"

// F32 is a float32 matrix: a view of an F32 tensor in a GGUF mapping, a
// checkpoint's tensor, or weights widened at load.
type F32 struct {
	rows, cols int
	w          []float32
}

func init() {
	register("f32", format{fromFloat: func(w []float32, rows, cols int) (Linear, error) {
		return NewF32(append([]float32(nil), w...), rows, cols), nil
	}})
}

// NewF32 wraps w (row-major [rows][cols]) without copying it.
func NewF32(w []float32, rows, cols int) *F32 {
	if len(w) != rows*cols {
		panic("weights: NewF32 of a slice that is not rows·cols long")
	}
	return &F32{rows: rows, cols: cols, w: w}
}

func (m *F32) Rows() int      { return m.rows }
func (m *F32) Cols() int      { return m.cols }
func (m *F32) Format() string { return "f32" }
func (m *F32) Bytes() int64   { return 4 * int64(len(m.w)) }

// Floats is the matrix itself (row-major), for code that needs the values.
func (m *F32) Floats() []float32 { return m.w }

// Mul is kernels.MatMul (each token's row is MatVec's bits), or for a
// prefill kernels.MatMulPrefill.
func (m *F32) Mul(out, x []float32, n int, s *Scratch) {
	checkMul(m, out, x, n)
	mul := kernels.MatMul
	if s != nil && s.Prefill {
		mul = kernels.MatMulPrefill
	}
	mul(out[:n*m.rows], m.w, x[:n*m.cols], m.rows, m.cols, n)
}

func (m *F32) Row(dst []float32, r int) { copy(dst[:m.cols], m.w[r*m.cols:(r+1)*m.cols]) }

func (m *F32) Slice(r0, r1 int) Linear {
	checkSlice(m, r0, r1)
	return &F32{rows: r1 - r0, cols: m.cols, w: m.w[r0*m.cols : r1*m.cols]}
}

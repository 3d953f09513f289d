package weights

import (
	"chat/models/gguf"
	"chat/models/kernels"
)

// F16 is a matrix of IEEE half-precision weights (2 bytes each), widened in
// registers by kernels.MatMulF16IL. As ggml's vec_dot_f16 does, the
// activations are rounded to f16 first; the kernel then gives the bits of
// MatMul on the widened weights.
type F16 struct{ halves }

// halves is the storage of F16 and BF16: the rows interleaved at load
// (kernels.PackHalfIL, a copy in huge-page memory), so that a decode step
// reads each matrix as one stream.
type halves struct {
	rows, cols int
	h          []uint16
}

// newHalves interleaves the row-major [rows][cols] halves of w.
func newHalves(w []uint16, rows, cols int) halves {
	h := hugeU16(kernels.HalfILLen(rows, cols))
	kernels.PackHalfIL(h, w, rows, cols)
	return halves{rows: rows, cols: cols, h: h}
}

func init() {
	register("f16", format{fromFloat: func(w []float32, rows, cols int) (Linear, error) {
		h := make([]uint16, len(w))
		for i, v := range w {
			h[i] = gguf.F32ToF16(v)
		}
		return &F16{newHalves(h, rows, cols)}, nil
	}})
}

func (m *halves) Rows() int    { return m.rows }
func (m *halves) Cols() int    { return m.cols }
func (m *halves) Bytes() int64 { return 2 * int64(kernels.HalfILLen(m.rows, m.cols)) }

// at is the half at row r, column c.
func (m *halves) at(r, c int) uint16 { return m.h[kernels.HalfILIndex(r, c, m.cols)] }

// slice is rows [r0, r1): sharing the storage when r0 starts a row group,
// repacked otherwise.
func (m *halves) slice(r0, r1 int) halves {
	if r0%kernels.HalfILRows == 0 {
		c := halves{rows: r1 - r0, cols: m.cols}
		c.h = m.h[kernels.HalfILLen(r0, m.cols):][:kernels.HalfILLen(c.rows, c.cols)]
		return c
	}
	w := make([]uint16, 0, (r1-r0)*m.cols)
	for r := r0; r < r1; r++ {
		for c := 0; c < m.cols; c++ {
			w = append(w, m.at(r, c))
		}
	}
	return newHalves(w, r1-r0, m.cols)
}

func (m *F16) Format() string { return "f16" }

func (m *F16) Mul(out, x []float32, n int, s *Scratch) {
	checkMul(m, out, x, n)
	xr := s.floats(n * m.cols)
	kernels.RoundF16(xr, x[:n*m.cols])
	mul := kernels.MatMulF16IL
	if s.Prefill {
		mul = kernels.MatMulF16ILPrefill
	}
	mul(out[:n*m.rows], m.h, xr, m.rows, m.cols, n)
}

func (m *F16) Row(dst []float32, r int) {
	for c := range dst[:m.cols] {
		dst[c] = gguf.F16ToF32(m.at(r, c))
	}
}

func (m *F16) Slice(r0, r1 int) Linear {
	checkSlice(m, r0, r1)
	return &F16{m.slice(r0, r1)}
}

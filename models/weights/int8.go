package weights

import (
	"fmt"
	"math"

	"chat/models/kernels"
)

// Int8 is the course's int8 format (quantize_int8's Int8Linear): one
// float32 scale per row, int8 codes in [-127, 127]:
//
//	scale = max(max|w_row|, 1e-8)/127 (float32), q = round(w/scale) with
//	ties to even, clamped to ±127; w' = float32(q)·scale.
//
// A product computes what the course computes after quantize_int8: the
// float32 product with the dequantised weights (MatVecI8F32 converts them
// in registers and gives MatVec's bits on W'). "int8-a8" keeps the same
// weights but quantises each input row to int8 too (one scale per row) and
// multiplies in integers: faster, and no longer the course's numbers.
type Int8 struct {
	rows, cols int
	q          []int8    // [rows][cols]
	scale      []float32 // [rows]
	a8         bool
}

func init() {
	register("int8", format{fromFloat: func(w []float32, rows, cols int) (Linear, error) {
		return NewInt8(w, rows, cols, false)
	}})
	register("int8-a8", format{fromFloat: func(w []float32, rows, cols int) (Linear, error) {
		return NewInt8(w, rows, cols, true)
	}, arith: kernels.ArithInt8})
}

// minAmax is the course's clamp on a row's max|w| (a float32 1e-8), so a
// row of zeros gets a tiny positive scale instead of a division by zero.
const minAmax = float32(1e-8)

// NewInt8 quantises w as quantize_int8 does; a8 makes it "int8-a8".
func NewInt8(w []float32, rows, cols int, a8 bool) (*Int8, error) {
	m := &Int8{rows: rows, cols: cols, q: make([]int8, rows*cols), scale: make([]float32, rows), a8: a8}
	for r := 0; r < rows; r++ {
		row := w[r*cols : (r+1)*cols]
		amax := absMax(row)
		if !finite(amax) {
			return nil, fmt.Errorf("weights: int8: row %d holds a non-finite weight", r)
		}
		s := max(amax, minAmax) / 127
		m.scale[r] = s
		q := m.q[r*cols : (r+1)*cols]
		for c, v := range row {
			q[c] = int8(roundClamp(v/s, 127))
		}
	}
	return m, nil
}

func (m *Int8) Rows() int { return m.rows }
func (m *Int8) Cols() int { return m.cols }
func (m *Int8) Format() string {
	if m.a8 {
		return "int8-a8"
	}
	return "int8"
}
func (m *Int8) Bytes() int64 { return int64(len(m.q)) + 4*int64(len(m.scale)) }

// i8f32MaxN is the largest batch that takes MatMulI8F32 (int8 widened in
// registers, 4-token tiles); larger ones dequantise the matrix once and run
// MatMul's tiles. Measured at 2048×768 on both kernel sets of the AVX-512
// host (CHAT_KERNELS=avx2 for the other): MatMulI8F32 is 1.3-1.6× faster at
// 4 tokens and 0.7-0.9× from 8 tokens on.
const i8f32MaxN = 4

func (m *Int8) Mul(out, x []float32, n int, s *Scratch) {
	checkMul(m, out, x, n)
	rows, cols := m.rows, m.cols
	switch {
	case m.a8:
		xq, xs := s.int8s(n*cols), s.tokenScales(n)
		for t := 0; t < n; t++ {
			xs[t] = kernels.QuantizeI8(xq[t*cols:(t+1)*cols], x[t*cols:(t+1)*cols])
		}
		if n == 1 {
			kernels.MatVecI8(out[:rows], m.q, m.scale, xq, xs[0], rows, cols)
			return
		}
		kernels.MatMulI8(out[:n*rows], m.q, m.scale, xq, xs, rows, cols, n)
	case n == 1:
		kernels.MatVecI8F32(out[:rows], m.q, m.scale, x[:cols], rows, cols)
	case n <= i8f32MaxN:
		kernels.MatMulI8F32(out[:n*rows], m.q, m.scale, x[:n*cols], rows, cols, n)
	default:
		// A larger batch dequantises the matrix once; MatMul then gives
		// the bits of MatVec on W', which MatVecI8F32 gives too.
		w := s.floats(rows * cols)
		for r := 0; r < rows; r++ {
			kernels.ScaleI8(w[r*cols:(r+1)*cols], m.q[r*cols:(r+1)*cols], m.scale[r])
		}
		kernels.MatMul(out[:n*rows], w, x[:n*cols], rows, cols, n)
	}
}

// Row writes float32(q)·scale, the course's W' = Q.float()·scale.
func (m *Int8) Row(dst []float32, r int) {
	kernels.ScaleI8(dst[:m.cols], m.q[r*m.cols:(r+1)*m.cols], m.scale[r])
}

func (m *Int8) Slice(r0, r1 int) Linear {
	checkSlice(m, r0, r1)
	return &Int8{rows: r1 - r0, cols: m.cols, q: m.q[r0*m.cols : r1*m.cols], scale: m.scale[r0:r1], a8: m.a8}
}

func absMax(w []float32) float32 {
	var m float32
	for _, v := range w {
		if v < 0 {
			v = -v
		}
		if v > m || v != v {
			m = v
		}
	}
	return m
}

// roundClamp rounds x half to even and clamps it to [-lim, lim]. x is already
// the float32 quotient, so the tie test sees the value torch.round sees.
func roundClamp(x float32, lim float64) float64 {
	return max(-lim, min(lim, math.RoundToEven(float64(x))))
}

func finite(v float32) bool { return v == v && v <= math.MaxFloat32 }

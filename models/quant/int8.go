package quant

import (
	"fmt"
	"math"

	"chat/models/kernels"
)

// Int8Rows is the course's int8 format (quantize_int8's Int8Linear): one
// float32 scale per row, int8 codes in [-127, 127].
type Int8Rows struct {
	R, C  int
	Q     []int8    // [R][C]
	Scale []float32 // [R]

	// A8 makes products quantize their input vectors too and multiply in
	// int8 (format "int8-a8"); the weights are the same.
	A8 bool
}

// NewInt8Rows quantizes w as quantize_int8 does: scale = max(max|w_row|,
// 1e-8)/127 in float32, q = round(w/scale) (float32 division, ties to even
// like torch.round), clamped to [-127, 127].
func NewInt8Rows(w []float32, rows, cols int) (*Int8Rows, error) {
	if err := checkShape("int8", w, rows, cols); err != nil {
		return nil, err
	}
	m := &Int8Rows{R: rows, C: cols, Q: make([]int8, rows*cols), Scale: make([]float32, rows)}
	for r := 0; r < rows; r++ {
		row := w[r*cols : (r+1)*cols]
		amax := absMax(row)
		if !finite(amax) {
			return nil, fmt.Errorf("quant: int8: row %d holds a non-finite weight", r)
		}
		s := max(amax, minAmax) / 127
		m.Scale[r] = s
		q := m.Q[r*cols : (r+1)*cols]
		for c, v := range row {
			q[c] = int8(roundClamp(v/s, 127))
		}
	}
	return m, nil
}

func (m *Int8Rows) Rows() int { return m.R }
func (m *Int8Rows) Cols() int { return m.C }
func (m *Int8Rows) Format() string {
	if m.A8 {
		return "int8-a8"
	}
	return "int8"
}
func (m *Int8Rows) Bytes() int64 { return int64(len(m.Q)) + 4*int64(len(m.Scale)) }

// DequantizeRows writes float32(q)·scale, the course's W' = Q.float()·scale.
func (m *Int8Rows) DequantizeRows(dst []float32, r0, r1 int) {
	dequantI8(dst, m.Q, m.Scale, m.C, r0, r1)
}

func dequantI8(dst []float32, codes []int8, scale []float32, C, r0, r1 int) {
	dst = dst[:(r1-r0)*C]
	for r := r0; r < r1; r++ {
		kernels.ScaleI8(dst[(r-r0)*C:(r-r0+1)*C], codes[r*C:(r+1)*C], scale[r])
	}
}

// roundClamp rounds x half to even and clamps it to [-lim, lim]. x is already
// the float32 quotient, so the tie test sees the value torch.round sees.
func roundClamp(x float32, lim float64) float64 {
	return max(-lim, min(lim, math.RoundToEven(float64(x))))
}

func finite(v float32) bool { return v == v && v <= math.MaxFloat32 }

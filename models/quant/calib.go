package quant

import (
	"fmt"
	"math"

	"chat/models/kernels"
)

// This file and gptq.go, awq.go, nf4.go, fp8.go depend on nothing but
// the kernels, so they can move with the weight formats.

// Int4Codes is a row-major [Rows][Cols] int4-group matrix as GPTQ, AWQ and
// RoundToNearestInt4 write it, in the layout of models/weights' Int4 and
// kernels.MatVecLUT4 and kernels.PackILInt4: groups of
// Group consecutive values of a row (the last may be shorter) share one
// float32 scale; codes q+8 with q in [-8, 7] (round-to-nearest writes
// [-7, 7], GPTQ and AWQ's clip search all 16), two per byte, low nibble first, row r at byte
// r·⌈Cols/2⌉; the weight is float32(q)·scale.
type Int4Codes struct {
	Rows, Cols, Group int
	Packed            []byte    // [Rows][⌈Cols/2⌉]
	Scale             []float32 // [Rows][⌈Cols/Group⌉]
}

func newInt4Codes(rows, cols, g int) *Int4Codes {
	return &Int4Codes{Rows: rows, Cols: cols, Group: g,
		Packed: make([]byte, rows*((cols+1)/2)), Scale: make([]float32, rows*((cols+g-1)/g))}
}

// Dequantize returns the weights float32(q)·scale, [Rows][Cols].
func (m *Int4Codes) Dequantize() []float32 {
	rb, ng := (m.Cols+1)/2, (m.Cols+m.Group-1)/m.Group
	out := make([]float32, m.Rows*m.Cols)
	for r := 0; r < m.Rows; r++ {
		kernels.DequantizeLUT4(out[r*m.Cols:(r+1)*m.Cols], m.Packed[r*rb:(r+1)*rb], m.Scale[r*ng:(r+1)*ng], &kernels.Int4Levels, m.Group, m.Cols)
	}
	return out
}

// int4Scale is a group's scale from its largest magnitude: max(amax,
// 1e-8)/7 in float32, the rule of every int4 format here.
func int4Scale(amax float32) float32 { return max(amax, calibMinAmax) / 7 }

// codeRange is round(w/s) (float32 quotient, ties to even) clamped to
// [-lo, 7]: round-to-nearest's code minus 8 with lo 7, the full int4 range
// of GPTQ and AWQ's clip search with lo 8.
func codeRange(w, s float32, lo int) int {
	return int(max(float64(-lo), min(7, math.RoundToEven(float64(w/s)))))
}

// clipSteps is the grid of the clip search (AWQ's and GPTQ's reference
// code): a group's scale max|group|/7 times 1, 1−0.5/clipSteps, ..., 0.5.
const clipSteps = 40

// clipScale is the scale at step k of the clip search of a group whose
// largest magnitude is amax (step 0 is int4Scale's).
func clipScale(amax float64, k int) float32 {
	return max(float32(amax*(1-0.5*float64(k)/clipSteps)), calibMinAmax) / 7
}

// RoundToNearestInt4 quantizes the row-major [rows][cols] w to int4 groups
// of g (32, 64 or 128) by round-to-nearest: the int4-gN format's codes and
// scales (weights.NewInt4), the baseline GPTQ and AWQ improve on.
func RoundToNearestInt4(w []float32, rows, cols, g int) (*Int4Codes, error) {
	if g != 32 && g != 64 && g != 128 {
		return nil, fmt.Errorf("quant: int4: group size %d, want 32, 64 or 128", g)
	}
	if err := checkMatrix("int4", w, rows, cols); err != nil {
		return nil, err
	}
	m := newInt4Codes(rows, cols, g)
	rb, ng := (cols+1)/2, (cols+g-1)/g
	for r := 0; r < rows; r++ {
		EncodeInt4(m.Packed[r*rb:(r+1)*rb], m.Scale[r*ng:(r+1)*ng], w[r*cols:(r+1)*cols], g)
	}
	return m, nil
}

// EncodeInt4 is RoundToNearestInt4 of one row x: groups of g consecutive
// values (the last may be shorter, g any size) each get scale max(amax,
// 1e-8)/7 in scale [⌈len(x)/g⌉] and codes round(x/scale)+8 packed two per
// byte, low nibble first, into packed [⌈len(x)/2⌉] (overwritten). It
// allocates nothing, so a KV cache can quantize rows as they are written.
func EncodeInt4(packed []byte, scale []float32, x []float32, g int) {
	clear(packed[:(len(x)+1)/2])
	for j := 0; j*g < len(x); j++ {
		grp := x[j*g : min((j+1)*g, len(x))]
		amax, finite := kernels.AbsMax(grp) // a NaN makes the scale NaN
		s := int4Scale(amax)
		scale[j] = s
		done := 0
		if finite && j*g%2 == 0 { // the assembly's codes are these (TestEncodeInt4Kernel)
			done = kernels.DivRoundInt4(packed[j*g/2:], grp, s)
		}
		for i, v := range grp[done:] {
			c := j*g + done + i
			packed[c/2] |= byte(codeRange(v, s, 7)+8) << (4 * (c & 1))
		}
	}
}

// calibMinAmax is the course's clamp on a row's (group's) max|w|.
const calibMinAmax = float32(1e-8)

// checkMatrix checks a [rows][cols] weight matrix: shape, length, finite
// values.
func checkMatrix(what string, w []float32, rows, cols int) error {
	if rows <= 0 || cols <= 0 {
		return fmt.Errorf("quant: %s: bad shape [%d][%d]", what, rows, cols)
	}
	if len(w) != rows*cols {
		return fmt.Errorf("quant: %s: %d values for shape [%d][%d]", what, len(w), rows, cols)
	}
	for i, v := range w {
		if !isFinite(v) {
			return fmt.Errorf("quant: %s: row %d holds a non-finite weight", what, i/cols)
		}
	}
	return nil
}

func isFinite(v float32) bool { return !math.IsNaN(float64(v)) && !math.IsInf(float64(v), 0) }

// maxAbs is max|v| over w (w's values are finite).
func maxAbs(w []float32) float32 {
	var m float32
	for _, v := range w {
		m = max(m, float32(math.Abs(float64(v))))
	}
	return m
}

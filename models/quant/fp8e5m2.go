package quant

import (
	"math"
	"sort"

	"chat/models/kernels"
)

// FP8 E5M2 as in the OCP 8-bit floating point spec (PyTorch's float8_e5m2):
// 1 sign, 5 exponent bits (bias 15), 2 mantissa bits, the top byte of an
// IEEE half: subnormals m/4·2⁻¹⁴, infinities and NaNs at exponent 31, so the
// largest finite value is 1.75·2¹⁵ = 57344. One more exponent bit than E4M3
// and one mantissa bit fewer: wider range, coarser steps.

// E5M2Max is the largest finite E5M2 value.
const E5M2Max = 57344

// e5m2Pos holds the values of codes 0x00..0x7B (the non-negative finite
// values, increasing with the code).
var e5m2Pos = func() (pos []float64) {
	for c := 0; c <= 0x7B; c++ {
		pos = append(pos, float64(kernels.FP8Value(uint8(c), kernels.E5M2)))
	}
	return pos
}()

// DecodeE5M2 returns code's value (±Inf for 0x7C/0xFC, NaN for the other
// codes with exponent 31).
func DecodeE5M2(code uint8) float32 { return kernels.FP8Value(code, kernels.E5M2) }

// EncodeE5M2 rounds x to the nearest E5M2 value, ties to the even code,
// saturating at ±57344 (as a scaled quantizer wants, rather than overflowing
// to infinity); NaN gives 0x7F.
func EncodeE5M2(x float32) uint8 {
	if x != x {
		return 0x7F
	}
	var sign uint8
	a := float64(x)
	if math.Signbit(a) {
		sign, a = 0x80, -a
	}
	if a >= E5M2Max {
		return sign | 0x7B
	}
	i := sort.SearchFloat64s(e5m2Pos, a) // first value >= a
	if e5m2Pos[i] == a {
		return sign | uint8(i)
	}
	lo, hi := e5m2Pos[i-1], e5m2Pos[i]
	switch d := (a - lo) - (hi - a); {
	case d < 0:
		i--
	case d == 0 && i&1 == 1:
		i--
	}
	return sign | uint8(i)
}

// FP8E5M2Rows stores E5M2 codes with one float32 scale per row: scale =
// max(max|w_row|, 1e-8)/57344, code = E5M2(w/scale), w' = value(code)·scale.
// kernels.MatVecFP8(..., kernels.E5M2) multiplies by it in place.
type FP8E5M2Rows struct {
	R, C  int
	Codes []uint8   // [R][C]
	Scale []float32 // [R]
}

// NewFP8E5M2Rows quantizes w row by row to E5M2.
func NewFP8E5M2Rows(w []float32, rows, cols int) (*FP8E5M2Rows, error) {
	if err := checkMatrix("fp8-e5m2", w, rows, cols); err != nil {
		return nil, err
	}
	m := &FP8E5M2Rows{R: rows, C: cols, Codes: make([]uint8, rows*cols), Scale: make([]float32, rows)}
	for r := 0; r < rows; r++ {
		row := w[r*cols : (r+1)*cols]
		s := max(maxAbs(row), calibMinAmax) / E5M2Max
		m.Scale[r] = s
		codes := m.Codes[r*cols : (r+1)*cols]
		for c, v := range row {
			codes[c] = EncodeE5M2(v / s)
		}
	}
	return m, nil
}

func (m *FP8E5M2Rows) Rows() int      { return m.R }
func (m *FP8E5M2Rows) Cols() int      { return m.C }
func (m *FP8E5M2Rows) Format() string { return "fp8-e5m2" }
func (m *FP8E5M2Rows) Bytes() int64   { return int64(len(m.Codes)) + 4*int64(len(m.Scale)) }

// DequantizeRows writes float32(value(code)·scale).
func (m *FP8E5M2Rows) DequantizeRows(dst []float32, r0, r1 int) {
	C := m.C
	dst = dst[:(r1-r0)*C]
	for r := r0; r < r1; r++ {
		kernels.DequantizeFP8(dst[(r-r0)*C:(r-r0+1)*C], m.Codes[r*C:(r+1)*C], m.Scale[r], kernels.E5M2)
	}
}

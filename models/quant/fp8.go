package quant

import (
	"fmt"
	"math"
	"sort"
)

// FP8 E4M3 as in the OCP 8-bit floating point spec (PyTorch's float8_e4m3fn):
// 1 sign, 4 exponent bits (bias 7), 3 mantissa bits; exponent 0 holds the
// subnormals m/8·2⁻⁶; there are no infinities and S.1111.111 is NaN, so the
// largest finite value is 1.75·2⁸ = 448.

// E4M3Max is the largest finite E4M3 value.
const E4M3Max = 448

// e4m3 maps every code to its value; e4m3Pos holds codes 0x00..0x7E (the
// non-negative finite values, increasing with the code).
var e4m3, e4m3Pos = func() (all [256]float32, pos []float64) {
	for b := 0; b < 256; b++ {
		e, mant := b>>3&15, b&7
		var v float64
		switch {
		case e == 15 && mant == 7:
			v = math.NaN()
		case e == 0:
			v = float64(mant) / 8 * 0x1p-6
		default:
			v = (1 + float64(mant)/8) * math.Ldexp(1, e-7)
		}
		if b&0x80 != 0 {
			v = -v
		}
		all[b] = float32(v)
	}
	for b := 0; b < 0x7F; b++ {
		pos = append(pos, float64(all[b]))
	}
	return all, pos
}()

// DecodeE4M3 returns code's value (NaN for 0x7F and 0xFF).
func DecodeE4M3(code uint8) float32 { return e4m3[code] }

// EncodeE4M3 rounds x to the nearest E4M3 value, ties to the even code (the
// one with an even mantissa), saturating at ±448; NaN gives 0x7F.
func EncodeE4M3(x float32) uint8 {
	if x != x {
		return 0x7F
	}
	var sign uint8
	a := float64(x)
	if math.Signbit(a) {
		sign, a = 0x80, -a
	}
	if a >= E4M3Max {
		return sign | 0x7E
	}
	i := sort.SearchFloat64s(e4m3Pos, a) // first value >= a; i >= 1 unless a == 0
	if e4m3Pos[i] == a {
		return sign | uint8(i)
	}
	lo, hi := e4m3Pos[i-1], e4m3Pos[i]
	switch d := (a - lo) - (hi - a); {
	case d < 0:
		i--
	case d == 0 && i&1 == 1:
		i--
	}
	return sign | uint8(i)
}

// FP8Rows stores E4M3 codes with one float32 scale per row: scale =
// max(max|w_row|, 1e-8)/448, code = E4M3(w/scale), w' = value(code)·scale.
type FP8Rows struct {
	R, C  int
	Codes []uint8   // [R][C]
	Scale []float32 // [R]
}

// NewFP8Rows quantizes w row by row to E4M3.
func NewFP8Rows(w []float32, rows, cols int) (*FP8Rows, error) {
	if err := checkShape("fp8", w, rows, cols); err != nil {
		return nil, err
	}
	m := &FP8Rows{R: rows, C: cols, Codes: make([]uint8, rows*cols), Scale: make([]float32, rows)}
	for r := 0; r < rows; r++ {
		row := w[r*cols : (r+1)*cols]
		amax := absMax(row)
		if !finite(amax) {
			return nil, fmt.Errorf("quant: fp8: row %d holds a non-finite weight", r)
		}
		s := max(amax, minAmax) / E4M3Max
		m.Scale[r] = s
		codes := m.Codes[r*cols : (r+1)*cols]
		for c, v := range row {
			codes[c] = EncodeE4M3(v / s)
		}
	}
	return m, nil
}

func (m *FP8Rows) Rows() int      { return m.R }
func (m *FP8Rows) Cols() int      { return m.C }
func (m *FP8Rows) Format() string { return "fp8" }
func (m *FP8Rows) Bytes() int64   { return int64(len(m.Codes)) + 4*int64(len(m.Scale)) }

// DequantizeRows writes value(code)·scale.
func (m *FP8Rows) DequantizeRows(dst []float32, r0, r1 int) {
	C := m.C
	dst = dst[:(r1-r0)*C]
	for r := r0; r < r1; r++ {
		s := m.Scale[r]
		d := dst[(r-r0)*C : (r-r0+1)*C]
		q := m.Codes[r*C : (r+1)*C]
		c := 0
		for ; c+8 <= C; c += 8 {
			qq, dd := q[c:c+8:c+8], d[c:c+8:c+8]
			dd[0], dd[1], dd[2], dd[3] = e4m3[qq[0]]*s, e4m3[qq[1]]*s, e4m3[qq[2]]*s, e4m3[qq[3]]*s
			dd[4], dd[5], dd[6], dd[7] = e4m3[qq[4]]*s, e4m3[qq[5]]*s, e4m3[qq[6]]*s, e4m3[qq[7]]*s
		}
		for ; c < C; c++ {
			d[c] = e4m3[q[c]] * s
		}
	}
}

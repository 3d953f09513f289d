package weights

import (
	"fmt"
	"math"
	"sort"

	"chat/models/kernels"
	"chat/models/quant"
)

// FP8 stores OCP FP8 codes with one float32 scale per row, E4M3 ("fp8": no
// infinities, max 448) or E5M2 ("fp8-e5m2": models/quant's encoder, max
// 57344, one more exponent bit and one mantissa bit fewer): scale =
// max(max|w_row|, 1e-8)/max, code = FP8(w/scale) (round to nearest, ties to
// even), w' = value(code)·scale. A product widens the codes in registers
// (kernels.MatVecFP8): bitwise the product of the dequantised float32
// matrix.
type FP8 struct {
	rows, cols int
	codes      []uint8   // [rows][cols]
	scale      []float32 // [rows]
	f          kernels.FP8
}

func init() {
	register("fp8", format{fromFloat: func(w []float32, rows, cols int) (Linear, error) {
		return NewFP8(w, rows, cols)
	}})
	register("fp8-e5m2", format{fromFloat: func(w []float32, rows, cols int) (Linear, error) {
		q, err := quant.NewFP8E5M2Rows(w, rows, cols)
		if err != nil {
			return nil, fmt.Errorf("weights: %w", err)
		}
		return &FP8{rows: rows, cols: cols, codes: q.Codes, scale: q.Scale, f: kernels.E5M2}, nil
	}})
}

// E4M3Max is the largest finite E4M3 value.
const E4M3Max = 448

// e4m3 decodes every code; e4m3Pos lists the non-negative finite values in
// code order (increasing), for encoding by search.
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

// DecodeE4M3 is the value of an E4M3 code.
func DecodeE4M3(code uint8) float32 { return e4m3[code] }

// EncodeE4M3 rounds x to the nearest E4M3 value (ties to an even code),
// saturating at ±448; NaN gives the NaN code.
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

// NewFP8 quantises w row by row to E4M3.
func NewFP8(w []float32, rows, cols int) (*FP8, error) {
	m := &FP8{rows: rows, cols: cols, codes: make([]uint8, rows*cols), scale: make([]float32, rows)}
	for r := 0; r < rows; r++ {
		row := w[r*cols : (r+1)*cols]
		amax := absMax(row)
		if !finite(amax) {
			return nil, fmt.Errorf("weights: fp8: row %d holds a non-finite weight", r)
		}
		s := max(amax, minAmax) / E4M3Max
		m.scale[r] = s
		codes := m.codes[r*cols : (r+1)*cols]
		for c, v := range row {
			codes[c] = EncodeE4M3(v / s)
		}
	}
	return m, nil
}

func (m *FP8) Rows() int { return m.rows }
func (m *FP8) Cols() int { return m.cols }
func (m *FP8) Format() string {
	if m.f == kernels.E5M2 {
		return "fp8-e5m2"
	}
	return "fp8"
}
func (m *FP8) Bytes() int64 { return int64(len(m.codes)) + 4*int64(len(m.scale)) }

func (m *FP8) Mul(out, x []float32, n int, _ *Scratch) {
	checkMul(m, out, x, n)
	if n == 1 {
		kernels.MatVecFP8(out[:m.rows], m.codes, m.scale, x[:m.cols], m.rows, m.cols, m.f)
		return
	}
	kernels.MatMulFP8(out[:n*m.rows], m.codes, m.scale, x[:n*m.cols], m.rows, m.cols, n, m.f)
}

// Row writes float32(value(code)·scale), the weights the product multiplies
// by.
func (m *FP8) Row(dst []float32, r int) {
	kernels.DequantizeFP8(dst[:m.cols], m.codes[r*m.cols:(r+1)*m.cols], m.scale[r], m.f)
}

func (m *FP8) Slice(r0, r1 int) Linear {
	checkSlice(m, r0, r1)
	return &FP8{rows: r1 - r0, cols: m.cols, codes: m.codes[r0*m.cols : r1*m.cols], scale: m.scale[r0:r1], f: m.f}
}

package weights

import (
	"fmt"
	"math"
	"sort"
)

// FP8 stores OCP FP8 E4M3 codes (no infinities, max 448) with one float32
// scale per row: scale = max(max|w_row|, 1e-8)/448, code = E4M3(w/scale)
// (round to nearest, ties to even), w' = value(code)·scale.
type FP8 struct {
	rows, cols int
	codes      []uint8   // [rows][cols]
	scale      []float32 // [rows]
}

func init() {
	register("fp8", format{fromFloat: func(w []float32, rows, cols int) (Linear, error) {
		return NewFP8(w, rows, cols)
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

func (m *FP8) Rows() int      { return m.rows }
func (m *FP8) Cols() int      { return m.cols }
func (m *FP8) Format() string { return "fp8" }
func (m *FP8) Bytes() int64   { return int64(len(m.codes)) + 4*int64(len(m.scale)) }

// Mul dequantises and runs the float kernels (no fp8 kernel yet).
func (m *FP8) Mul(out, x []float32, n int, s *Scratch) { mulDequant(m, out, x, n, s) }

func (m *FP8) Row(dst []float32, r int) { m.rowsTo(dst, r, r+1) }

// rowsTo writes value(code)·scale for rows [r0, r1).
func (m *FP8) rowsTo(dst []float32, r0, r1 int) {
	C := m.cols
	for r := r0; r < r1; r++ {
		s := m.scale[r]
		d := dst[(r-r0)*C : (r-r0+1)*C]
		q := m.codes[r*C : (r+1)*C]
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

func (m *FP8) Slice(r0, r1 int) Linear {
	checkSlice(m, r0, r1)
	return &FP8{rows: r1 - r0, cols: m.cols, codes: m.codes[r0*m.cols : r1*m.cols], scale: m.scale[r0:r1]}
}

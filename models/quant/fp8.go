package quant

import (
	"math"

	"chat/models/kernels"
)

// FP8 as in the OCP 8-bit floating point spec, in both of its formats
// (kernels.FP8 describes the bits): E4M3 (PyTorch's float8_e4m3fn, largest
// finite value 448, no infinities) and E5M2 (float8_e5m2, the top byte of an
// IEEE half, largest finite value 57344: one more exponent bit and one
// mantissa bit fewer, so a wider range in coarser steps).

// fp8Pos holds, by format, the values of the non-negative finite codes in
// code order (increasing): E4M3 0x00..0x7E, E5M2 0x00..0x7B.
var fp8Pos = func() (pos [2][]float64) {
	for f, last := range [2]int{kernels.E4M3: 0x7E, kernels.E5M2: 0x7B} {
		for c := 0; c <= last; c++ {
			pos[f] = append(pos[f], float64(kernels.FP8Value(uint8(c), kernels.FP8(f))))
		}
	}
	return pos
}()

// FP8Max is the largest finite value of format f.
func FP8Max(f kernels.FP8) float32 { pos := fp8Pos[f&1]; return float32(pos[len(pos)-1]) }

// DecodeFP8 returns code's value in format f: NaN for the NaN codes, ±Inf
// for E5M2's infinities.
func DecodeFP8(code uint8, f kernels.FP8) float32 {
	if f == kernels.E4M3 && code&0x7F == 0x7F {
		return float32(math.NaN())
	}
	return kernels.FP8Value(code, f)
}

// EncodeFP8 rounds x to the nearest value of format f, ties to the even
// code, saturating at ±FP8Max (as a scaled quantizer wants, rather than
// overflowing to infinity or NaN); NaN gives 0x7F.
func EncodeFP8(x float32, f kernels.FP8) uint8 {
	if x != x {
		return 0x7F
	}
	pos := fp8Pos[f&1]
	var sign uint8
	a := float64(x)
	if math.Signbit(a) {
		sign, a = 0x80, -a
	}
	if a >= pos[len(pos)-1] {
		return sign | uint8(len(pos)-1)
	}
	// i is the first value >= a (sort.SearchFloat64s without its closure
	// call per step: a KV cache encodes every value it stores); i >= 1
	// unless a == 0.
	i, j := 0, len(pos)
	for i < j {
		h := int(uint(i+j) >> 1)
		if pos[h] < a {
			i = h + 1
		} else {
			j = h
		}
	}
	if pos[i] == a {
		return sign | uint8(i)
	}
	lo, hi := pos[i-1], pos[i]
	switch d := (a - lo) - (hi - a); {
	case d < 0:
		i--
	case d == 0 && i&1 == 1:
		i--
	}
	return sign | uint8(i)
}

// FP8Rows stores FP8 codes of format F with one float32 scale per row:
// scale = max(max|w_row|, 1e-8)/FP8Max, code = EncodeFP8(w/scale), w' =
// value(code)·scale. kernels.MatVecFP8 multiplies by it in place.
type FP8Rows struct {
	R, C  int
	F     kernels.FP8
	Codes []uint8   // [R][C]
	Scale []float32 // [R]
}

// NewFP8Rows quantizes w row by row to format f.
func NewFP8Rows(w []float32, rows, cols int, f kernels.FP8) (*FP8Rows, error) {
	if err := checkMatrix("fp8", w, rows, cols); err != nil {
		return nil, err
	}
	m := &FP8Rows{R: rows, C: cols, F: f, Codes: make([]uint8, rows*cols), Scale: make([]float32, rows)}
	for r := 0; r < rows; r++ {
		row := w[r*cols : (r+1)*cols]
		s := max(maxAbs(row), calibMinAmax) / FP8Max(f)
		m.Scale[r] = s
		codes := m.Codes[r*cols : (r+1)*cols]
		for c, v := range row {
			codes[c] = EncodeFP8(v/s, f)
		}
	}
	return m, nil
}

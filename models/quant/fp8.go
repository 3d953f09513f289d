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

// EncodeFP8 rounds x to the nearest value of format f, ties to the even
// code, saturating at ±FP8Max (as a scaled quantizer wants, rather than
// overflowing to infinity or NaN); NaN gives 0x7F. It works on x's bits (a
// KV cache encodes every value it stores): a normal result is x's float32
// mantissa rounded half to even to the format's bits, the carry moving the
// exponent; below the smallest normal the codes are the multiples of the
// smallest subnormal, rounded half to even.
func EncodeFP8(x float32, f kernels.FP8) uint8 {
	if x != x {
		return 0x7F
	}
	m, bias := uint32(3), uint32(7) // E4M3
	if f&1 == kernels.E5M2 {
		m, bias = 2, 15
	}
	pos := fp8Pos[f&1]
	b := math.Float32bits(x)
	sign := uint8(b>>24) & 0x80
	b &^= 1 << 31
	a := math.Float32frombits(b)
	if float64(a) >= pos[len(pos)-1] {
		return sign | uint8(len(pos)-1)
	}
	if b < (127+1-bias)<<23 { // below 2^(1-bias): a multiple of 2^(1-bias-m)
		return sign | uint8(math.RoundToEven(math.Ldexp(float64(a), int(bias+m-1))))
	}
	sh := 23 - m
	b += 1<<(sh-1) - 1 + (b>>sh)&1
	return sign | uint8(b>>sh-(127-bias)<<m)
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

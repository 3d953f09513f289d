package weights

import (
	"fmt"

	"chat/models/kernels"
	"chat/models/quant"
)

// FP8 stores OCP FP8 codes with one float32 scale per row, E4M3 ("fp8": no
// infinities, max 448) or E5M2 ("fp8-e5m2": max 57344, one more exponent bit
// and one mantissa bit fewer), encoded by quant.NewFP8Rows: scale =
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
	for name, f := range map[string]kernels.FP8{"fp8": kernels.E4M3, "fp8-e5m2": kernels.E5M2} {
		register(name, format{fromFloat: func(w []float32, rows, cols int) (Linear, error) {
			q, err := quant.NewFP8Rows(w, rows, cols, f)
			if err != nil {
				return nil, fmt.Errorf("weights: %w", err)
			}
			return &FP8{rows: rows, cols: cols, codes: q.Codes, scale: q.Scale, f: f}, nil
		}})
	}
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

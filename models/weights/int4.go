package weights

import (
	"fmt"

	"chat/models/kernels"
	"chat/models/quant"
)

// Int4 stores groups of G values along a row (32, 64 or 128) with one
// float32 scale each, in quant.Int4Codes' layout: scale =
// max(max|w_group|, 1e-8)/7, code = clamp(round(w/scale), -7, 7) + 8 (ties
// to even), two codes per byte, low nibble first; w' = (code-8)·scale. NF4 (nf4.go) shares the layout with
// other levels. A product multiplies float32 activations by the codes
// looked up in registers (kernels.MatVecLUT4): bitwise the product of the
// dequantised float32 matrix.
//
// "int4-gG-a8" keeps the same codes but interleaves them at load (il.go)
// and quantises each activation to Q8_0 (integer dots, faster, no longer the
// float path's numbers), as "int8-a8" does for int8.
type Int4 struct {
	rows, cols, g int
	packed        []byte    // [rows][⌈cols/2⌉]
	scale         []float32 // [rows][⌈cols/g⌉]
	levels        *[16]float32
	format        string
}

func init() {
	for _, g := range []int{32, 64, 128} {
		register(fmt.Sprintf("int4-g%d", g), format{fromFloat: func(w []float32, rows, cols int) (Linear, error) {
			return NewInt4(w, rows, cols, g)
		}})
		register(fmt.Sprintf("int4-g%d-a8", g), format{fromFloat: func(w []float32, rows, cols int) (Linear, error) {
			if cols%kernels.Q8Block != 0 {
				return nil, &ShapeError{Format: fmt.Sprintf("int4-g%d-a8", g), Block: kernels.Q8Block, Cols: cols}
			}
			m, err := NewInt4(w, rows, cols, g)
			if err != nil {
				return nil, err
			}
			return m.A8(), nil
		}, arith: kernels.ArithInt8})
	}
}

// NewInt4 quantises w in groups of g by round-to-nearest
// (quant.RoundToNearestInt4).
func NewInt4(w []float32, rows, cols, g int) (*Int4, error) {
	q, err := quant.RoundToNearestInt4(w, rows, cols, g)
	if err != nil {
		return nil, fmt.Errorf("weights: %w", err)
	}
	return NewInt4Codes(q.Packed, q.Scale, rows, cols, g, fmt.Sprintf("int4-g%d", g)), nil
}

// NewInt4Codes wraps int4 codes and scales already in Int4's layout (GPTQ's
// and AWQ's output) without copying them.
func NewInt4Codes(packed []byte, scale []float32, rows, cols, g int, format string) *Int4 {
	return &Int4{rows: rows, cols: cols, g: g, packed: packed, scale: scale, levels: &kernels.Int4Levels, format: format}
}

// A8 is the same codes interleaved for Q8_0 activations ("int4-gG-a8");
// cols must be a multiple of 32.
func (m *Int4) A8() *Interleaved {
	il := &Interleaved{rows: m.rows, cols: m.cols, k: kernels.IL4G, g: m.g, format: m.format + "-a8",
		w: make([]byte, kernels.ILBytes(kernels.IL4G, m.rows, m.cols)), gs: make([]float32, kernels.ILScales(m.rows, m.cols, m.g))}
	kernels.PackILInt4(il.w, il.gs, m.packed, m.scale, m.g, m.rows, m.cols)
	return il
}

func (m *Int4) Rows() int      { return m.rows }
func (m *Int4) Cols() int      { return m.cols }
func (m *Int4) Format() string { return m.format }
func (m *Int4) Bytes() int64   { return int64(len(m.packed)) + 4*int64(len(m.scale)) }

func (m *Int4) Mul(out, x []float32, n int, _ *Scratch) {
	checkMul(m, out, x, n)
	if n == 1 {
		kernels.MatVecLUT4(out[:m.rows], m.packed, m.scale, m.levels, m.g, x[:m.cols], m.rows, m.cols)
		return
	}
	kernels.MatMulLUT4(out[:n*m.rows], m.packed, m.scale, m.levels, m.g, x[:n*m.cols], m.rows, m.cols, n)
}

// Row writes float32(level·scale), the weights the product multiplies by.
func (m *Int4) Row(dst []float32, r int) {
	rb, ng := (m.cols+1)/2, (m.cols+m.g-1)/m.g
	kernels.DequantizeLUT4(dst[:m.cols], m.packed[r*rb:(r+1)*rb], m.scale[r*ng:(r+1)*ng], m.levels, m.g, m.cols)
}

func (m *Int4) Slice(r0, r1 int) Linear {
	checkSlice(m, r0, r1)
	rb, ng := (m.cols+1)/2, (m.cols+m.g-1)/m.g
	c := *m
	c.rows, c.packed, c.scale = r1-r0, m.packed[r0*rb:r1*rb], m.scale[r0*ng:r1*ng]
	return &c
}

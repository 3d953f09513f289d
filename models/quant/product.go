package quant

import (
	"fmt"

	"chat/models/kernels"
)

// The products dequantize the weights to float32 and call the float kernels.
// For int8 that is exactly the course's Int8Linear (W' = Q.float()·scale,
// then a float linear), so the goldens hold to float rounding. This file is
// the one place that would switch to a fused int8-weight × float32-activation
// kernel; the kernels package's int8 products quantize the activations too,
// which is what int8-a8 uses them for.

// decodeBlock is how many weights a decode step dequantizes at a time: 16 KiB
// of float32, so the block stays in L1 between the dequantization and the dot
// products.
const decodeBlock = 4096

// ScratchSize is how much working memory MatMul needs for a set of matrices.
type ScratchSize struct {
	Floats int // a whole dequantized matrix (prefill dequantizes it once)
	Int8s  int // one quantized input vector (int8-a8)
}

// Add grows z to cover m.
func (z *ScratchSize) Add(m Matrix) {
	if i8, ok := m.(*Int8Rows); ok && i8.A8 {
		z.Int8s = max(z.Int8s, m.Cols())
		return
	}
	z.Floats = max(z.Floats, m.Rows()*m.Cols())
}

// New allocates scratch of size z.
func (z ScratchSize) New() *Scratch {
	return &Scratch{w: make([]float32, z.Floats), x: make([]int8, z.Int8s)}
}

// Scratch is one caller's working memory for MatMul; it must not be shared
// by concurrent products.
type Scratch struct {
	w []float32
	x []int8
}

// MatMul computes out[t*rows+r] = w'[r]·x[t*cols:] for t < n, where w' is m
// dequantized (kernels.MatMul's layout). s must come from a ScratchSize that
// m was added to; its contents are overwritten. It allocates nothing.
func MatMul(out []float32, m Matrix, x []float32, n int, s *Scratch) {
	rows, cols := m.Rows(), m.Cols()
	i8, a8 := m.(*Int8Rows)
	a8 = a8 && i8.A8
	if n < 1 || len(out) < n*rows || len(x) < n*cols || s == nil ||
		(!a8 && len(s.w) < rows*cols) || (a8 && len(s.x) < cols) {
		panic(fmt.Sprintf("quant.MatMul: %s [%d][%d] n=%d with len(out)=%d len(x)=%d, scratch too small or nil",
			m.Format(), rows, cols, n, len(out), len(x)))
	}
	switch {
	case a8:
		for t := 0; t < n; t++ {
			xs := kernels.QuantizeI8(s.x[:cols], x[t*cols:(t+1)*cols])
			kernels.MatVecI8(out[t*rows:(t+1)*rows], i8.Q, i8.Scale, s.x, xs, rows, cols)
		}
	case n > 1:
		m.DequantizeRows(s.w, 0, rows)
		kernels.MatMul(out, s.w, x, rows, cols, n)
	case i8 != nil:
		kernels.MatVecI8F32(out, i8.Q, i8.Scale, x, rows, cols)
	default:
		matVecBlocks(out, m, x, s.w)
	}
}

// matVecBlocks is a decode step: it reads each weight once, so it
// dequantizes a block of rows (a multiple of the float kernel's 8-row block)
// and uses it while it is hot.
func matVecBlocks(out []float32, m Matrix, x, buf []float32) {
	rows, cols := m.Rows(), m.Cols()
	br := max(8, decodeBlock/cols/8*8)
	for r0 := 0; r0 < rows; r0 += br {
		r1 := min(rows, r0+br)
		m.DequantizeRows(buf, r0, r1)
		kernels.MatVec(out[r0:r1], buf, x, r1-r0, cols)
	}
}

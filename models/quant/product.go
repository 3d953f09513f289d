package quant

import (
	"fmt"

	"chat/models/kernels"
)

// The products dequantize the weights to float32 and call the float kernels.
// For int8 that is exactly the course's Int8Linear (W' = Q.float()·scale,
// then a float linear), so the goldens hold to float rounding. This file is
// the one place that would switch to a fused int8-weight × float32-activation
// kernel (kernels has int8 × int8 ones, which quantize the activations too
// and so do not compute the course's numbers).

// decodeBlock is how many weights a decode step dequantizes at a time: 16 KiB
// of float32, so the block stays in L1 between the dequantization and the dot
// products.
const decodeBlock = 4096

// ScratchLen is the scratch MatMul needs for m: the whole dequantized matrix
// (prefill dequantizes it once and runs one batched product).
func ScratchLen(m Matrix) int { return m.Rows() * m.Cols() }

// MatMul computes out[t*rows+r] = w'[r]·x[t*cols:] for t < n, where w' is m
// dequantized (kernels.MatMul's layout). scratch must hold ScratchLen(m)
// floats; it is overwritten. It allocates nothing.
func MatMul(out []float32, m Matrix, x []float32, n int, scratch []float32) {
	rows, cols := m.Rows(), m.Cols()
	if n < 1 || len(out) < n*rows || len(x) < n*cols || len(scratch) < rows*cols {
		panic(fmt.Sprintf("quant.MatMul: %s [%d][%d] n=%d with len(out)=%d len(x)=%d len(scratch)=%d",
			m.Format(), rows, cols, n, len(out), len(x), len(scratch)))
	}
	if n > 1 {
		m.DequantizeRows(scratch, 0, rows)
		kernels.MatMul(out, scratch, x, rows, cols, n)
		return
	}
	// A decode step reads each weight once: dequantize a block of rows (a
	// multiple of the float kernel's 8-row block) and use it while it is hot.
	br := max(8, decodeBlock/cols/8*8)
	for r0 := 0; r0 < rows; r0 += br {
		r1 := min(rows, r0+br)
		m.DequantizeRows(scratch, r0, r1)
		kernels.MatVec(out[r0:r1], scratch, x, r1-r0, cols)
	}
}

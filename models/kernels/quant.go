package kernels

import (
	"fmt"
	"math"
)

// Int8 kernels. Weights and activations are both int8 and multiplied in
// integer arithmetic (VPMADDUBSW on amd64), then scaled back to float32:
//
//   - per-row: w[r][c] ≈ scale[r]·q[r][c], the activation quantized once per
//     call with one scale (QuantizeI8). The integer dot is exact, so the asm
//     and Go versions give the same bits.
//   - Q8_0: blocks of Q8Block values with one scale each (GGUF's Q8_0 with
//     the f16 scale widened to float32), for weights and activations alike.
//
// All int8 values must lie in [-127, 127] (the quantizers below ensure it):
// VPMADDUBSW's sign trick cannot represent -128·-1.

// Q8Block is the Q8_0 block length.
const Q8Block = 32

// QuantizeI8 sets q[i] = round(x[i]/s), s = max|x|/127, for i < len(x) and
// returns s (0 when x is all zeros or holds a NaN, and then q is all
// zeros).
func QuantizeI8(q []int8, x []float32) float32 {
	q = q[:len(x)]
	amax, _ := AbsMax(x) // NaN when x holds one; an infinity gives an infinite scale
	if amax == 0 || amax != amax {
		clear(q)
		return 0
	}
	inv := float64(127 / amax)
	for i, v := range x {
		q[i] = int8(max(-127, min(127, math.Round(float64(v)*inv))))
	}
	return amax / 127
}

// MatVecI8 computes out[r] = float32(Σ_c q[r*cols+c]·xq[c]) · (scale[r]·xs)
// for r < rows, where xs is the scale QuantizeI8 returned for xq. The sum is
// exact in int32 (cols up to 2^17).
func MatVecI8(out []float32, q []int8, scale []float32, xq []int8, xs float32, rows, cols int) {
	if rows < 0 || cols < 0 || len(q) < rows*cols || len(scale) < rows || len(xq) < cols || len(out) < rows {
		panic(fmt.Sprintf("kernels.MatVecI8: rows=%d cols=%d with len(out)=%d len(q)=%d len(scale)=%d len(xq)=%d",
			rows, cols, len(out), len(q), len(scale), len(xq)))
	}
	if rows*cols >= 2*parallelMin {
		if j := defaultPool.acquire(); j != nil {
			j.op, j.out, j.qw, j.sw, j.qx, j.sx = opMatVecI8, out, q, scale, xq, xs
			j.rows, j.cols = rows, cols
			defaultPool.exec(4)
			return
		}
	}
	matVecI8Range(out, q, scale, xq, xs, cols, 0, rows)
}

func abs32(v float32) float32 { return math.Float32frombits(math.Float32bits(v) &^ (1 << 31)) }

func dotI8Go(a, b []int8) int32 {
	b = b[:len(a)]
	var s int32
	for i, v := range a {
		s += int32(v) * int32(b[i])
	}
	return s
}

func matVecI8Range(out []float32, q []int8, scale []float32, xq []int8, xs float32, cols, r0, r1 int) {
	if useAsm && cols >= 32 && r1 > r0 {
		// The asm leaves the int32 sums over the first cols&^31 columns in
		// out's memory; the tail and the scaling follow here.
		dots := i8DotsAsm(out[r0:r1], q[r0*cols:r1*cols], xq[:cols], cols)
		c32 := cols &^ 31
		for r := r0; r < r1; r++ {
			s := dots[r-r0] + dotI8Go(q[r*cols+c32:(r+1)*cols], xq[c32:cols])
			out[r] = float32(s) * (scale[r] * xs)
		}
		return
	}
	for r := r0; r < r1; r++ {
		out[r] = float32(dotI8Go(q[r*cols:(r+1)*cols], xq[:cols])) * (scale[r] * xs)
	}
}

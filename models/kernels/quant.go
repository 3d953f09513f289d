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
// returns s (0 when x is all zeros, and then q is all zeros).
func QuantizeI8(q []int8, x []float32) float32 {
	q = q[:len(x)]
	var amax float32
	for _, v := range x {
		amax = max(amax, abs32(v))
	}
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

// QuantizeRowsI8 quantizes each row of the row-major [rows][cols] matrix w
// with its own scale: w[r][c] ≈ scale[r]·q[r*cols+c].
func QuantizeRowsI8(q []int8, scale []float32, w []float32, rows, cols int) {
	_ = q[:rows*cols]
	_ = scale[:rows]
	for r := 0; r < rows; r++ {
		scale[r] = QuantizeI8(q[r*cols:(r+1)*cols], w[r*cols:(r+1)*cols])
	}
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

// QuantizeQ8_0 quantizes x (len(x) a multiple of Q8Block) into Q8_0 blocks:
// x[i] ≈ d[i/Q8Block]·q[i], each block scaled by its own max|x|/127.
func QuantizeQ8_0(q []int8, d []float32, x []float32) {
	if len(x)%Q8Block != 0 {
		panic(fmt.Sprintf("kernels.QuantizeQ8_0: len(x)=%d is not a multiple of %d", len(x), Q8Block))
	}
	q = q[:len(x)]
	d = d[:len(x)/Q8Block]
	for b := range d {
		d[b] = QuantizeI8(q[b*Q8Block:(b+1)*Q8Block], x[b*Q8Block:(b+1)*Q8Block])
	}
}

// MatVecQ8_0 computes out[r] = Σ_b d[r*nb+b]·xd[b]·(Σ_{c in block b} q[r*cols+c]·xq[c])
// for r < rows, nb = cols/Q8Block (cols must be a multiple of Q8Block). w is
// the row-major [rows][cols] matrix quantized row by row with QuantizeQ8_0,
// (q, d); x was quantized with QuantizeQ8_0 into (xq, xd). Block sums are exact;
// the float sum over blocks goes in an implementation-defined order.
func MatVecQ8_0(out []float32, q []int8, d []float32, xq []int8, xd []float32, rows, cols int) {
	if rows < 0 || cols < 0 || cols%Q8Block != 0 || len(q) < rows*cols || len(d) < rows*cols/Q8Block ||
		len(xq) < cols || len(xd) < cols/Q8Block || len(out) < rows {
		panic(fmt.Sprintf("kernels.MatVecQ8_0: rows=%d cols=%d with len(out)=%d len(q)=%d len(d)=%d len(xq)=%d len(xd)=%d",
			rows, cols, len(out), len(q), len(d), len(xq), len(xd)))
	}
	if rows*cols >= 2*parallelMin {
		if j := defaultPool.acquire(); j != nil {
			j.op, j.out, j.qw, j.sw, j.qx, j.dx = opMatVecQ8, out, q, d, xq, xd
			j.rows, j.cols = rows, cols
			defaultPool.exec(4)
			return
		}
	}
	matVecQ8Range(out, q, d, xq, xd, cols, 0, rows)
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

func matVecQ8Range(out []float32, q []int8, d []float32, xq []int8, xd []float32, cols, r0, r1 int) {
	nb := cols / Q8Block
	if useAsm && r1 > r0 {
		q80DotsAsm(out[r0:r1], q[r0*cols:r1*cols], d[r0*nb:r1*nb], xq[:cols], xd[:nb], cols)
		return
	}
	for r := r0; r < r1; r++ {
		var s float32
		for b := 0; b < nb; b++ {
			c := r*cols + b*Q8Block
			i := dotI8Go(q[c:c+Q8Block], xq[b*Q8Block:(b+1)*Q8Block])
			s += float32(i) * (d[r*nb+b] * xd[b])
		}
		out[r] = s
	}
}

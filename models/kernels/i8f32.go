package kernels

import "fmt"

// MatVecI8F32 computes out[r] = Σ_c (float32(q[r*cols+c])·scale[r])·x[c] for
// r < rows: int8 weights with a float32 scale per row against an unquantized
// float32 x. The result is bitwise equal to MatVec on the dequantized matrix
// (w = float32(q)·scale, rounded to float32), on every implementation, but
// the weights are converted in registers, so it reads a quarter of the bytes
// and needs no buffer (exact int8 decode, e.g. models/quant's int8 matrices).
func MatVecI8F32(out []float32, q []int8, scale, x []float32, rows, cols int) {
	if rows < 0 || cols < 0 || len(q) < rows*cols || len(scale) < rows || len(x) < cols || len(out) < rows {
		panic(fmt.Sprintf("kernels.MatVecI8F32: rows=%d cols=%d with len(out)=%d len(q)=%d len(scale)=%d len(x)=%d",
			rows, cols, len(out), len(q), len(scale), len(x)))
	}
	if rows*cols >= 2*parallelMin {
		if j := defaultPool.acquire(); j != nil {
			j.op, j.out, j.qw, j.sw, j.x = opMatVecI8F32, out, q, scale, x
			j.rows, j.cols = rows, cols
			defaultPool.exec(4)
			return
		}
	}
	matVecI8F32Range(out, q, scale, x, cols, 0, rows)
}

func matVecI8F32Range(out []float32, q []int8, scale, x []float32, cols, r0, r1 int) {
	if r1 <= r0 {
		return
	}
	x = x[:cols]
	if useAsm {
		if cols >= 8 {
			i8f32MatVecAsm(out[r0:r1], q[r0*cols:r1*cols], scale[r0:r1], x, cols)
			return
		}
		// Short rows: dequantize each into a stack buffer for matVecAVX2.
		var buf [8]float32
		for r := r0; r < r1; r++ {
			for c, v := range q[r*cols : (r+1)*cols] {
				buf[c] = float32(v) * scale[r]
			}
			matVecAsm(out[r:r+1], buf[:cols], x, cols, 0, 1)
		}
		return
	}
	for r := r0; r < r1; r++ {
		out[r] = dotI8F32Go(q[r*cols:(r+1)*cols], scale[r], x)
	}
}

// dotI8F32Go is dotGo with a = float32(q)·s computed on the fly.
func dotI8F32Go(q []int8, s float32, b []float32) float32 {
	b = b[:len(q)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(q); i += 4 {
		a0, a1, a2, a3 := float32(q[i])*s, float32(q[i+1])*s, float32(q[i+2])*s, float32(q[i+3])*s
		s0 += a0 * b[i]
		s1 += a1 * b[i+1]
		s2 += a2 * b[i+2]
		s3 += a3 * b[i+3]
	}
	for ; i < len(q); i++ {
		a := float32(q[i]) * s
		s0 += a * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

package kernels

import "unsafe"

// MatVecI8F32 computes out[r] = Σ_c (float32(q[r*cols+c])·scale[r])·x[c] for
// r < rows: int8 weights with a float32 scale per row against an unquantized
// float32 x. The result is bitwise equal to MatVec on the dequantized matrix
// (w = float32(q)·scale, rounded to float32), on every implementation, but
// the weights are converted in registers (qf.go), so it reads a quarter of the
// bytes and needs no buffer (exact int8 decode, e.g. models/quant's int8
// matrices).
func MatVecI8F32(out []float32, q []int8, scale, x []float32, rows, cols int) {
	checkQF("MatVecI8F32", out, len(q), scale, x, rows, cols, 1)
	runQF(opMatVecQF, qfProd{fmt: i8Format, w: i8Bytes(q), scale: scale}, out, x, rows, cols, 1)
}

// MatMulI8F32 is MatVecI8F32 for n tokens (out [n][rows], x [n][cols]):
// bitwise equal to n MatVecI8F32 calls, and so to MatMul on the dequantized
// matrix. It is the course's exact Int8Linear over a batch (prefill).
func MatMulI8F32(out []float32, q []int8, scale, x []float32, rows, cols, n int) {
	checkQF("MatMulI8F32", out, len(q), scale, x, rows, cols, n)
	runQF(opMatMulQF, qfProd{fmt: i8Format, w: i8Bytes(q), scale: scale}, out, x, rows, cols, n)
}

func i8Bytes(q []int8) []byte {
	return unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(q))), len(q))
}

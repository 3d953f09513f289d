//go:build !amd64 || purego

package kernels

func attnScoresAsm(scores, q, k []float32, stride, n int, scale float32) {
	attnScoresGo(scores, q, k, stride, n, scale)
}

func attnMixAsm(out, w, v []float32, stride, n int) { attnMixGo(out, w, v, stride, n) }

// No row kernels: the Rows functions decode each row and run the
// reference kernels on it.
var rowsF32, rowsF16, rowsI8, rowsFP8 rowKernels

func rowsI4() rowKernels { return rowKernels{} }

// Package kernels holds the hot loops of the forward pass: matrix-vector and
// matrix-matrix products, dot products and the small vector ops around them.
// Each exported function picks the fastest implementation this CPU supports at
// start-up; the pure-Go versions are the reference every SIMD version is tested
// against.
package kernels

// MatVec computes out[r] = dot(w[r*cols:(r+1)*cols], x) for r < rows.
// w is row-major [rows][cols]; len(x) >= cols, len(out) >= rows.
func MatVec(out, w, x []float32, rows, cols int) {
	matVecGo(out, w, x, rows, cols)
}

// Dot returns the dot product of a and b[:len(a)].
func Dot(a, b []float32) float32 {
	return dotGo(a, b)
}

// Axpy computes y[i] += alpha*x[i] for i < len(x).
func Axpy(alpha float32, x, y []float32) {
	axpyGo(alpha, x, y)
}

func dotGo(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

func matVecGo(out, w, x []float32, rows, cols int) {
	x = x[:cols]
	for r := 0; r < rows; r++ {
		out[r] = dotGo(w[r*cols:(r+1)*cols], x)
	}
}

func axpyGo(alpha float32, x, y []float32) {
	y = y[:len(x)]
	for i, v := range x {
		y[i] += alpha * v
	}
}

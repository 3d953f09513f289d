package nn

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestPassRMSNormRowByRow: the batch's norms (rows four at a time) give
// every row the bits RMSNorm gives it alone, which are ggml's (float64 sum
// of float32 squares, then (x·scale)·w in float32).
func TestPassRMSNormRowByRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	const w = 771
	weight := make([]float32, w)
	for i := range weight {
		weight[i] = rng.Float32()*2 - 1
	}
	for n := 1; n <= 21; n++ {
		x := Rows{N: n, W: w, D: make([]float32, n*w)}
		for i := range x.D {
			x.D[i] = float32(rng.NormFloat64() * math.Pow(10, float64(i%7-3)))
		}
		var p Pass
		y := p.RMSNorm(x, weight, 1e-5)
		for i := range n {
			one := make([]float32, w)
			RMSNorm(one, x.Row(i), weight, 1e-5)
			var sum float64
			for _, v := range x.Row(i) {
				sum += float64(v * v)
			}
			scale := 1 / float32(math.Sqrt(float64(float32(sum/w)+1e-5)))
			for j, v := range x.Row(i) {
				if ref := v * scale * weight[j]; math.Float32bits(ref) != math.Float32bits(one[j]) {
					t.Fatalf("row %d [%d] = %v, ggml's reference %v", i, j, one[j], ref)
				}
			}
			for j, v := range y.Row(i) {
				if math.Float32bits(v) != math.Float32bits(one[j]) {
					t.Fatalf("%d rows: row %d [%d] = %v in the batch, %v alone", n, i, j, v, one[j])
				}
			}
		}
	}
}

// BenchmarkRMSNorm4Rows: four rows' norms side by side against one at a time.
func BenchmarkRMSNorm4Rows(b *testing.B) {
	var x, y [4][]float32
	for r := range x {
		x[r], y[r] = make([]float32, 768), make([]float32, 768)
		for i := range x[r] {
			x[r][i] = float32((i+r)%13) - 6
		}
	}
	weight := make([]float32, 768)
	for i := range weight {
		weight[i] = 1
	}
	b.Run("together", func(b *testing.B) {
		for range b.N {
			rmsNorm4(y, x, weight, 1e-5)
		}
	})
	b.Run("alone", func(b *testing.B) {
		for range b.N {
			for r := range x {
				RMSNorm(y[r], x[r], weight, 1e-5)
			}
		}
	})
}

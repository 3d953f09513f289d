package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

func close32(got float32, want, tol float64) bool {
	return math.Abs(float64(got)-want) <= tol
}

func TestSoftmax(t *testing.T) {
	rng := rand.New(rand.NewPCG(25, 26))
	for _, n := range []int{1, 2, 7, 100, 50257} {
		x := randVec(rng, n)
		for i := range x {
			x[i] *= 30
		}
		x[n/2] = 80 // exp(80) overflows float32 without the max subtraction
		if n > 1 {
			x[0] = float32(math.Inf(-1))
		}
		m := math.Inf(-1)
		for _, v := range x {
			m = math.Max(m, float64(v))
		}
		var s float64
		for _, v := range x {
			s += math.Exp(float64(v) - m)
		}
		want := make([]float64, n)
		for i, v := range x {
			want[i] = math.Exp(float64(v)-m) / s
		}
		Softmax(x)
		var total float64
		for i := range x {
			if !close32(x[i], want[i], 1e-6*math.Max(1, float64(n)/1000)*want[i]+1e-12) {
				t.Fatalf("n=%d i=%d: %v want %v", n, i, x[i], want[i])
			}
			total += float64(x[i])
		}
		if math.Abs(total-1) > 1e-4 {
			t.Fatalf("n=%d: sums to %v", n, total)
		}
	}
	Softmax(nil)
}

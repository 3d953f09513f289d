package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestSoftmax: Softmax against float64 on every implementation, with
// masked (-Inf) entries, odd lengths and a logit whose e^x overflows float32
// without the max subtracted, and asm == Go bitwise.
func TestSoftmax(t *testing.T) {
	rng := rand.New(rand.NewPCG(63, 64))
	for _, n := range []int{1, 2, 3, 7, 8, 9, 15, 16, 17, 31, 100, 1000, 32000, 50257} {
		x := randVec(rng, n)
		for i := range x {
			x[i] *= 20
			if n > 4 && i%5 == 3 {
				x[i] = float32(math.Inf(-1))
			}
		}
		x[n/2] = 80 // e^80 overflows float32
		m := math.Inf(-1)
		for _, v := range x {
			m = math.Max(m, float64(v))
		}
		var s float64
		for _, v := range x {
			s += math.Exp(float64(v) - m)
		}
		var results [][]float32
		for _, asm := range impls() {
			withImpl(asm, func() {
				y := append([]float32(nil), x...)
				Softmax(y)
				var total float64
				for i, v := range y {
					want := math.Exp(float64(x[i])-m) / s
					// e^x to 2e-7, the reciprocal and scaling a few roundings,
					// the float32 sum of n/8 terms per lane at most n/8+3,
					// and the float32 rounding of x-max (inherent: the old
					// float64-exp Softmax had it too).
					tol := (1e-6 + math.Abs(float64(x[i])-m)*u + float64(n/8+3)*u) * want
					if math.Abs(float64(v)-want) > tol+1e-30 {
						t.Fatalf("%s n=%d i=%d: %v want %v", implName(asm), n, i, v, want)
					}
					total += float64(v)
				}
				if math.Abs(total-1) > 1e-5 {
					t.Fatalf("%s n=%d: sums to %v", implName(asm), n, total)
				}
				results = append(results, y)
			})
		}
		for _, r := range results[1:] {
			for i := range r {
				if math.Float32bits(r[i]) != math.Float32bits(results[0][i]) {
					t.Fatalf("n=%d i=%d: asm %v, go %v", n, i, r[i], results[0][i])
				}
			}
		}
	}
}

// TestScaleMul: every length's vector and tail, in place too, gives the Go
// loop's bits.
func TestScaleMul(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for n := 0; n <= 41; n++ {
		x, w := make([]float32, n), make([]float32, n)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(80)-40)))
			w[i] = float32(rng.NormFloat64())
		}
		if n > 3 {
			x[1], x[2] = float32(math.Inf(1)), float32(math.NaN())
		}
		s := float32(rng.NormFloat64() * 1e3)
		got := make([]float32, n+1)
		got[n] = 42
		ScaleMul(got, x, w, s)
		in := append([]float32(nil), x...)
		ScaleMul(in, in, w, s)
		for i, v := range x {
			want := v * s * w[i]
			if math.Float32bits(got[i]) != math.Float32bits(want) || math.Float32bits(in[i]) != math.Float32bits(want) {
				t.Fatalf("n=%d [%d]: %v (in place %v), want %v", n, i, got[i], in[i], want)
			}
		}
		if got[n] != 42 {
			t.Fatalf("n=%d: wrote past the end", n)
		}
	}
}

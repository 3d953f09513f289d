package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

func close32(got float32, want, tol float64) bool {
	return math.Abs(float64(got)-want) <= tol
}

func TestRMSNorm(t *testing.T) {
	rng := rand.New(rand.NewPCG(21, 22))
	for _, n := range []int{1, 2, 3, 5, 8, 63, 768, 2048} {
		x, w := randVec(rng, n), randVec(rng, n)
		const eps = 1e-5
		var ss float64
		for _, v := range x {
			ss += float64(v) * float64(v)
		}
		r := 1 / math.Sqrt(ss/float64(n)+eps)
		out := make([]float32, n)
		RMSNorm(out, x, w, eps)
		inPlace := append([]float32(nil), x...)
		RMSNorm(inPlace, inPlace, w, eps)
		noW := make([]float32, n)
		RMSNorm(noW, x, nil, eps)
		for i := range x {
			want := float64(x[i]) * r * float64(w[i])
			if !close32(out[i], want, 1e-5*math.Abs(want)*math.Max(1, float64(n)/64)+1e-7) {
				t.Fatalf("n=%d i=%d: %v want %v", n, i, out[i], want)
			}
			if inPlace[i] != out[i] {
				t.Fatalf("n=%d: in place differs at %d", n, i)
			}
			if wantNoW := float64(x[i]) * r; !close32(noW[i], wantNoW, 1e-5*math.Abs(wantNoW)*math.Max(1, float64(n)/64)+1e-7) {
				t.Fatalf("n=%d i=%d nil w: %v want %v", n, i, noW[i], wantNoW)
			}
		}
	}
}

func TestLayerNorm(t *testing.T) {
	rng := rand.New(rand.NewPCG(23, 24))
	for _, n := range []int{1, 2, 3, 5, 8, 63, 768, 2048} {
		x, w, b := randVec(rng, n), randVec(rng, n), randVec(rng, n)
		for i := range x {
			x[i] = x[i]*3 + 5 // a mean far from 0 tests the two passes
		}
		const eps = 1e-5
		var s, ss float64
		for _, v := range x {
			s += float64(v)
		}
		mean := s / float64(n)
		for _, v := range x {
			ss += (float64(v) - mean) * (float64(v) - mean)
		}
		r := 1 / math.Sqrt(ss/float64(n)+eps) // biased variance
		out := make([]float32, n)
		LayerNorm(out, x, w, b, eps)
		inPlace := append([]float32(nil), x...)
		LayerNorm(inPlace, inPlace, w, b, eps)
		plain := make([]float32, n)
		LayerNorm(plain, x, nil, nil, eps)
		tol := 2e-5 * math.Max(1, float64(n)/64)
		for i := range x {
			z := (float64(x[i]) - mean) * r
			if want := z*float64(w[i]) + float64(b[i]); !close32(out[i], want, tol) {
				t.Fatalf("n=%d i=%d: %v want %v", n, i, out[i], want)
			}
			if inPlace[i] != out[i] {
				t.Fatalf("n=%d: in place differs at %d", n, i)
			}
			if !close32(plain[i], z, tol) {
				t.Fatalf("n=%d i=%d nil w,b: %v want %v", n, i, plain[i], z)
			}
		}
	}
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

func TestActivations(t *testing.T) {
	xs := []float32{-20, -3, -1, -0.5, 0, 0.25, 1, 2.5, 20}
	silu := append([]float32(nil), xs...)
	SiLU(silu)
	gelu := append([]float32(nil), xs...)
	GELU(gelu)
	for i, v := range xs {
		f := float64(v)
		if want := f / (1 + math.Exp(-f)); !close32(silu[i], want, 1e-6*math.Abs(want)+1e-30) {
			t.Errorf("SiLU(%v) = %v, want %v", v, silu[i], want)
		}
		want := 0.5 * f * (1 + math.Tanh(math.Sqrt(2/math.Pi)*(f+0.044715*f*f*f)))
		if !close32(gelu[i], want, 1e-6*math.Abs(want)+1e-30) {
			t.Errorf("GELU(%v) = %v, want %v", v, gelu[i], want)
		}
	}
	if g1 := gelu[6]; math.Abs(float64(g1)-0.8411920) > 1e-6 {
		t.Errorf("GELU(1) = %v, want 0.8411920 (PyTorch tanh approximation)", g1)
	}
}

func TestAddMulScale(t *testing.T) {
	a := []float32{1, 2, 3, 4}
	Add(a, []float32{10, 20, 30})
	Mul(a, []float32{2, 2, 2, 2})
	Scale(a, 0.5)
	want := []float32{11, 22, 33, 4}
	for i := range a {
		if a[i] != want[i] {
			t.Fatalf("got %v want %v", a, want)
		}
	}
}

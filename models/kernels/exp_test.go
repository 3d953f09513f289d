package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// expInputs: a stride through every float32 bit pattern whose e^x is a
// normal float32, plus random values in the range softmax sees.
func expInputs() []float32 {
	lo, hi := math.Log(0x1p-126), math.Log(math.MaxFloat32)
	var xs []float32
	for b := uint32(0); b < 1<<32-997; b += 997 {
		x := math.Float32frombits(b)
		if f := float64(x); f > lo && f < hi {
			xs = append(xs, x)
		}
	}
	rng := rand.New(rand.NewPCG(61, 62))
	for range 1 << 18 {
		xs = append(xs, -rng.Float32()*30)
	}
	return xs
}

// expVia sets dst = e^x through softmaxExp with max 0 (x - 0 is x exactly),
// the one vector exp the engine runs.
func expVia(dst, x []float32) {
	copy(dst, x)
	softmaxExp(dst[:len(x)], 0)
}

// TestExpAccuracy: relative error against math.Exp below 2e-7 wherever the
// result is a normal float32, and asm == Go bitwise.
func TestExpAccuracy(t *testing.T) {
	xs := expInputs()
	var results [][]float32
	for _, asm := range impls() {
		withImpl(asm, func() {
			got := make([]float32, len(xs))
			expVia(got, xs)
			var worst float64
			var at float32
			for i, x := range xs {
				want := math.Exp(float64(x))
				if e := math.Abs(float64(got[i])-want) / want; e > worst {
					worst, at = e, x
				}
			}
			t.Logf("%s: max relative error %.3g at x=%v (%d inputs)", implName(asm), worst, at, len(xs))
			if worst >= 2e-7 {
				t.Errorf("%s: max relative error %.3g at x=%v", implName(asm), worst, at)
			}
			results = append(results, got)
		})
	}
	for _, r := range results[1:] {
		for i := range r {
			if math.Float32bits(r[i]) != math.Float32bits(results[0][i]) {
				t.Fatalf("e^%v: asm %v, go %v", xs[i], r[i], results[0][i])
			}
		}
	}
}

func TestExpSpecial(t *testing.T) {
	inf := float32(math.Inf(1))
	cases := []struct{ x, want float32 }{
		{0, 1}, {float32(math.Copysign(0, -1)), 1}, {inf, inf}, {-inf, 0}, {89, inf}, {1e30, inf},
		{-104, 0}, {-1e30, 0}, {88.72, float32(math.Exp(float64(float32(88.72))))},
	}
	for _, asm := range impls() {
		withImpl(asm, func() {
			for n := 1; n <= 17; n++ { // every lane position and the masked tail
				for _, c := range cases {
					x := make([]float32, n)
					for i := range x {
						x[i] = c.x
					}
					expVia(x, x)
					for i, v := range x {
						if d := math.Abs(float64(v) - float64(c.want)); !(v == c.want || d <= 2e-7*float64(c.want)) {
							t.Fatalf("%s n=%d lane %d: e^%v = %v, want %v", implName(asm), n, i, c.x, v, c.want)
						}
					}
				}
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(math.NaN())
				}
				expVia(x, x)
				for _, v := range x {
					if v == v {
						t.Fatalf("%s: e^NaN = %v", implName(asm), v)
					}
				}
			}
			// Subnormal results: within one subnormal step of the truth.
			for x := float32(-103.9); x < -87.4; x += 0.37 {
				var got [1]float32
				expVia(got[:], []float32{x})
				if d := math.Abs(float64(got[0]) - math.Exp(float64(x))); d > 0x1p-149 {
					t.Fatalf("%s: e^%v = %v, want %v", implName(asm), x, got[0], math.Exp(float64(x)))
				}
			}
		})
	}
}

// BenchmarkSoftmax: attention rows (512 positions) and a 32000-token vocabulary.
func BenchmarkSoftmax(b *testing.B) {
	for _, n := range []int{512, 32000} {
		rng := rand.New(rand.NewPCG(9, 9))
		x := randVec(rng, n)
		y := make([]float32, n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			benchImpls(b, func(b *testing.B) {
				b.SetBytes(int64(4 * n))
				for b.Loop() {
					copy(y, x)
					Softmax(y)
				}
			})
		})
	}
}

// TestSwiGLU: against float64 within 3e-7 relative, asm == Go bitwise, odd
// lengths and extreme gates.
func TestSwiGLU(t *testing.T) {
	rng := rand.New(rand.NewPCG(65, 66))
	for _, n := range []int{1, 3, 7, 8, 9, 17, 100, 11008} {
		g, up := randVec(rng, n), randVec(rng, n)
		for i := range g {
			g[i] *= 12
		}
		g[0] = -200 // e^200 overflows: the result is -0
		if n > 1 {
			g[1] = 100
		}
		var results [][]float32
		for _, asm := range impls() {
			withImpl(asm, func() {
				y := append([]float32(nil), g...)
				SwiGLU(y, up)
				for i, v := range y {
					f := float64(g[i])
					want := f / (1 + math.Exp(-f)) * float64(up[i])
					if math.Abs(float64(v)-want) > 3e-7*math.Abs(want)+1e-37 {
						t.Fatalf("%s n=%d i=%d: SwiGLU(%v, %v) = %v, want %v", implName(asm), n, i, g[i], up[i], v, want)
					}
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

func BenchmarkSwiGLU(b *testing.B) {
	const n = 11008
	rng := rand.New(rand.NewPCG(12, 12))
	g, up, y := randVec(rng, n), randVec(rng, n), make([]float32, n)
	benchImpls(b, func(b *testing.B) {
		b.SetBytes(4 * n)
		for b.Loop() {
			copy(y, g)
			SwiGLU(y, up)
		}
	})
}

// TestSoftmaxNegative: all-negative rows (the max must ignore the masked-off
// tail lanes) give the Go loop's bits on every implementation.
func TestSoftmaxNegative(t *testing.T) {
	rng := rand.New(rand.NewPCG(67, 68))
	for n := 1; n <= 33; n++ {
		x := randVec(rng, n)
		for i := range x {
			x[i] = x[i]*20 - 40
		}
		var results [][]float32
		for _, asm := range impls() {
			withImpl(asm, func() {
				y := append([]float32(nil), x...)
				Softmax(y)
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

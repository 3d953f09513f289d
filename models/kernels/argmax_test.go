package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestArgmaxMatchesGo holds Argmax (the assembly where the CPU has it) to
// the one-pass Go loop: lengths around the 8- and 16-value steps, ties,
// NaNs, infinities and signed zeros.
func TestArgmaxMatchesGo(t *testing.T) {
	if !useAsm {
		t.Log("no AVX2 on this CPU: Argmax runs its Go loop, compared with itself")
	}
	rng := rand.New(rand.NewPCG(3, 4))
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	special := []float32{nan, inf, -inf, 0, float32(math.Copysign(0, -1)), 1, 1, -1}
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 100, 32000} {
		for trial := range 200 {
			x := make([]float32, n)
			for i := range x {
				switch trial % 4 {
				case 0:
					x[i] = rng.Float32()
				case 1: // few values: ties
					x[i] = float32(rng.IntN(3))
				case 2:
					x[i] = special[rng.IntN(len(special))]
				default: // mostly -Inf or NaN
					x[i] = special[rng.IntN(3)]
				}
			}
			if got, want := Argmax(x), argmaxGo(x); got != want {
				t.Fatalf("n=%d trial %d: Argmax %d, Go %d", n, trial, got, want)
			}
		}
	}
	if got := Argmax([]float32{nan, nan, nan, nan, nan, nan, nan, nan, -inf}); got != -1 {
		t.Fatalf("only NaN and -Inf: %d, want -1", got)
	}
}

func BenchmarkArgmax(b *testing.B) {
	x := randVec(rand.New(rand.NewPCG(1, 2)), 32000)
	b.Run(ISA(), func(b *testing.B) {
		for range b.N {
			Argmax(x)
		}
	})
	b.Run("go", func(b *testing.B) {
		for range b.N {
			argmaxGo(x)
		}
	})
}

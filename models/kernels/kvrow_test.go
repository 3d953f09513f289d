package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// refQuantizeScaledI8 is QuantizeScaledI8 written plainly, in float64 where
// that is exact: the quotient is rounded to float32 once, as v/s is.
func refQuantizeScaledI8(x []float32) ([]int8, float32) {
	q := make([]int8, len(x))
	var amax float32
	for _, v := range x {
		if v != v || math.IsInf(float64(v), 0) {
			return q, 0
		}
		amax = max(amax, float32(math.Abs(float64(v))))
	}
	s := amax / 127
	if s == 0 {
		return q, 0
	}
	for i, v := range x {
		q[i] = int8(max(-127, min(127, math.RoundToEven(float64(v/s)))))
	}
	return q, s
}

// TestQuantizeScaledI8: on every kernel set, the codes and scale of the
// plain reference, for lengths around the assembly's 16 and rows holding a
// NaN, an infinity, zeros, ties and subnormals, in the vectors or the tail;
// nothing past len(x) is written.
func TestQuantizeScaledI8(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	special := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), 1e-45, 127, -127, 63.5, 0.5}
	for _, l := range impls() {
		withImpl(l, func() {
			for _, n := range []int{0, 1, 15, 16, 17, 31, 32, 33, 64, 100, 768} {
				for trial := range 40 {
					x := make([]float32, n)
					for i := range x {
						x[i] = float32(rng.NormFloat64()) * []float32{1, 1e-3, 1e30, 1e-40}[trial%4]
					}
					if n > 0 && trial >= 4 {
						x[rng.IntN(n)] = special[trial%len(special)]
					}
					if trial%7 == 6 { // ties: quotients k + 0.5
						for i := range x {
							x[i] = float32(rng.IntN(254)-127) + 0.5
						}
						if n > 0 {
							x[0] = 127
						}
					}
					got := make([]int8, n+3)
					for i := range got {
						got[i] = 99
					}
					s := QuantizeScaledI8(got[:n:n], x)
					want, ws := refQuantizeScaledI8(x)
					if math.Float32bits(s) != math.Float32bits(ws) {
						t.Fatalf("%s n=%d trial %d: scale %v, want %v", implName(l), n, trial, s, ws)
					}
					for i := range want {
						if got[i] != want[i] {
							t.Fatalf("%s n=%d trial %d: q[%d] = %d, want %d (x %v)", implName(l), n, trial, i, got[i], want[i], x[i])
						}
					}
					for i := n; i < len(got); i++ {
						if got[i] != 99 {
							t.Fatalf("%s n=%d: wrote past the end at %d", implName(l), n, i)
						}
					}
				}
			}
		})
	}
}

// BenchmarkQuantizeScaledI8: one 64-value head of a KV row.
func BenchmarkQuantizeScaledI8(b *testing.B) {
	x, q := make([]float32, 64), make([]int8, 64)
	for i := range x {
		x[i] = float32(i%13) - 6
	}
	for b.Loop() {
		QuantizeScaledI8(q, x)
	}
}

package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestRope: both layouts' rotations, every length and tail, give the Go
// loops' bits (each product rounded before the sum).
func TestRope(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	vec := func(n int, scale float64) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(rng.NormFloat64() * scale)
		}
		return v
	}
	same := func(a, b []float32) bool {
		for i := range a {
			if math.Float32bits(a[i]) != math.Float32bits(b[i]) {
				return false
			}
		}
		return true
	}
	for n := 0; n <= 37; n++ {
		c, s := vec(n, 1), vec(n, 1)
		x := vec(2*n+3, 100) // a head's tail past the rotated values stays
		got, want := append([]float32(nil), x...), append([]float32(nil), x...)
		RopePairs(got, c, s)
		for i := range c {
			a, b := want[2*i], want[2*i+1]
			want[2*i] = float32(a*c[i]) - float32(b*s[i])
			want[2*i+1] = float32(a*s[i]) + float32(b*c[i])
		}
		if !same(got, want) {
			t.Fatalf("pairs, n=%d: %v, want %v", n, got, want)
		}
		got, want = append([]float32(nil), x...), append([]float32(nil), x...)
		RopeHalves(got[:n], got[n:2*n], c, s)
		for i := range c {
			a, b := want[i], want[n+i]
			want[i] = float32(a*c[i]) - float32(b*s[i])
			want[n+i] = float32(a*s[i]) + float32(b*c[i])
		}
		if !same(got, want) {
			t.Fatalf("halves, n=%d: %v, want %v", n, got, want)
		}
	}
}

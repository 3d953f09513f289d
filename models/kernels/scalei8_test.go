package kernels

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestScaleI8(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 7, 8, 9, 15, 16, 17, 31, 64, 100, 2051} {
		for _, off := range []int{0, 1, 3} {
			q := make([]int8, n+off)[off:]
			for i := range q {
				q[i] = int8(rng.IntN(255) - 127)
			}
			s := rng.Float32() * 0.01
			got := make([]float32, n+5)
			for i := range got {
				got[i] = -1
			}
			want := make([]float32, n)
			ScaleI8(got, q, s)
			scaleI8Go(want, q, s)
			for i := range want {
				if got[i] != want[i] || want[i] != float32(q[i])*s {
					t.Fatalf("n=%d off=%d i=%d: got %v want %v", n, off, i, got[i], want[i])
				}
			}
			for i := n; i < len(got); i++ {
				if got[i] != -1 {
					t.Fatalf("n=%d: wrote past the end at %d", n, i)
				}
			}
		}
	}
}

func TestScaleI8NoAlloc(t *testing.T) {
	q, dst := make([]int8, 512), make([]float32, 512)
	if a := testing.AllocsPerRun(10, func() { ScaleI8(dst, q, 0.5) }); a != 0 {
		t.Errorf("%v allocations", a)
	}
}

func BenchmarkScaleI8(b *testing.B) {
	q, dst := make([]int8, 1<<16), make([]float32, 1<<16)
	b.SetBytes(1 << 16)
	for b.Loop() {
		ScaleI8(dst, q, 0.5)
	}
}

// TestScaleI8Rows: on every kernel set, runs of d values each with its
// scale give ScaleI8's bits run by run (d a multiple of 8 and not, one run
// and many), and nothing past the last run is written.
func TestScaleI8Rows(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, l := range impls() {
		withImpl(l, func() {
			for _, d := range []int{0, 1, 8, 12, 16, 64, 72} {
				for _, runs := range []int{0, 1, 3, 48} {
					q := make([]int8, d*runs)
					for i := range q {
						q[i] = int8(rng.IntN(256) - 128)
					}
					sc := make([]float32, runs)
					for i := range sc {
						sc[i] = rng.Float32() * 0.01
					}
					got := make([]float32, d*runs+5)
					for i := range got {
						got[i] = -1
					}
					ScaleI8Rows(got, q, sc, d)
					want := make([]float32, d)
					for r := range runs {
						ScaleI8(want, q[r*d:(r+1)*d], sc[r])
						for i := range want {
							if got[r*d+i] != want[i] {
								t.Fatalf("%s d=%d runs=%d run %d value %d: %v, ScaleI8 %v", implName(l), d, runs, r, i, got[r*d+i], want[i])
							}
						}
					}
					for i := d * runs; i < len(got); i++ {
						if got[i] != -1 {
							t.Fatalf("%s d=%d runs=%d: wrote past the end at %d", implName(l), d, runs, i)
						}
					}
				}
			}
		})
	}
}

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

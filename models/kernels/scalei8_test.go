package kernels

import (
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

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestMatVecI8F32: bitwise MatVec of the dequantized matrix, on every
// implementation, odd shapes and 1 or 2 threads.
func TestMatVecI8F32(t *testing.T) {
	rng := rand.New(rand.NewPCG(71, 72))
	cases := i8Cases()
	cases = append(cases, [2]int{301, 1000}, [2]int{1029, 777})
	for _, rc := range cases {
		rows, cols := rc[0], rc[1]
		q, scale := randI8(rng, rows*cols, rows%4), randScales(rng, rows)
		scale[0] = -scale[0] // a negative scale makes -0 weights
		x := unaligned(rng, cols, cols%5)
		w := make([]float32, rows*cols)
		for i := range w {
			w[i] = float32(q[i]) * scale[i/max(cols, 1)]
		}
		for _, asm := range impls() {
			withImpl(asm, func() {
				for _, th := range []int{1, 2} {
					if th == 2 && rows*cols < 2*parallelMin {
						continue
					}
					withThreads(th, func() {
						want, got := make([]float32, rows), unaligned(rng, rows, 1)
						MatVec(want, w, x, rows, cols)
						MatVecI8F32(got, q, scale, x, rows, cols)
						checkSentinels(t, "MatVecI8F32", got)
						for r := range want {
							if math.Float32bits(got[r]) != math.Float32bits(want[r]) {
								t.Fatalf("%s threads=%d rows=%d cols=%d row %d: %v, MatVec %v", implName(asm), th, rows, cols, r, got[r], want[r])
							}
						}
					})
				}
			})
		}
	}
	defer func() {
		if recover() == nil {
			t.Error("no panic for a short scale slice")
		}
	}()
	MatVecI8F32(make([]float32, 2), make([]int8, 4), make([]float32, 1), make([]float32, 2), 2, 2)
}

func TestMatVecI8F32Allocs(t *testing.T) {
	rows, cols := 2048, 768
	q, scale, x, out := make([]int8, rows*cols), make([]float32, rows), make([]float32, cols), make([]float32, rows)
	withThreads(2, func() {
		f := func() { MatVecI8F32(out, q, scale, x, rows, cols) }
		f()
		if a := testing.AllocsPerRun(20, f); a != 0 {
			t.Errorf("MatVecI8F32 allocates %v times per call", a)
		}
	})
}

func BenchmarkMatVecI8F32(b *testing.B) {
	for _, sz := range [][2]int{{768, 2048}, {4096, 4096}} {
		rows, cols := sz[0], sz[1]
		rng := rand.New(rand.NewPCG(11, 11))
		q, scale, x, out := randI8(rng, rows*cols, 0), randScales(rng, rows), randVec(rng, cols), make([]float32, rows)
		b.Run(fmt.Sprintf("%dx%d", rows, cols), func(b *testing.B) {
			benchImpls(b, func(b *testing.B) {
				benchThreads(b, func(b *testing.B) {
					b.SetBytes(int64(rows * cols))
					for b.Loop() {
						MatVecI8F32(out, q, scale, x, rows, cols)
					}
					reportFlops(b, 2*float64(rows*cols))
				})
			})
		})
	}
}

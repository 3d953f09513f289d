package kernels

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"
)

// TestMinTime prints the fastest of many calls of each kernel: on a machine
// shared with other work, the minimum approximates the undisturbed speed much
// better than a benchmark's mean. Run with
//
//	CHAT_KERNELS_MINTIME=1 go test -run MinTime -v ./models/kernels/
func TestMinTime(t *testing.T) {
	if os.Getenv("CHAT_KERNELS_MINTIME") == "" {
		t.Skip("set CHAT_KERNELS_MINTIME=1 to run")
	}
	rng := rand.New(rand.NewPCG(1, 1))
	minOf := func(reps int, f func()) time.Duration {
		best := time.Duration(1 << 62)
		for range reps {
			t0 := time.Now()
			f()
			best = min(best, time.Since(t0))
		}
		return best
	}
	line := func(name string, d time.Duration, bytes, flops float64) {
		fmt.Printf("%-40s %10v %8.1f GB/s %8.1f GFLOP/s\n", name, d, bytes/d.Seconds()/1e9, flops/d.Seconds()/1e9)
	}
	for _, asm := range impls() {
		withImpl(asm, func() {
			for _, th := range []int{1, 2} {
				withThreads(th, func() {
					for _, sz := range [][2]int{{768, 2048}, {2048, 768}, {4096, 4096}} {
						rows, cols := sz[0], sz[1]
						w, x, out := randVec(rng, rows*cols), randVec(rng, 64*cols), make([]float32, 64*rows)
						reps := 300
						if rows*cols > 1<<22 {
							reps = 30
						}
						d := minOf(reps, func() { MatVec(out, w, x, rows, cols) })
						line(fmt.Sprintf("%s t%d MatVec %dx%d", implName(asm), th, rows, cols), d, float64(rows*cols*4), float64(2*rows*cols))
						q, xq := randI8(rng, rows*cols, 0), randI8(rng, cols, 0)
						sc := randScales(rng, rows)
						d = minOf(reps, func() { MatVecI8(out, q, sc, xq, 1, rows, cols) })
						line(fmt.Sprintf("%s t%d MatVecI8 %dx%d", implName(asm), th, rows, cols), d, float64(rows*cols), float64(2*rows*cols))
						d = minOf(reps, func() { MatVecI8F32(out, q, sc, x, rows, cols) })
						line(fmt.Sprintf("%s t%d MatVecI8F32 %dx%d", implName(asm), th, rows, cols), d, float64(rows*cols), float64(2*rows*cols))
						if rows*cols <= 1<<22 {
							d = minOf(reps/10, func() { MatMul(out, w, x, rows, cols, 64) })
							line(fmt.Sprintf("%s t%d MatMul %dx%dx64", implName(asm), th, rows, cols), d, float64(rows*cols*4), float64(2*rows*cols*64))
						}
					}
					for _, k := range blockKinds {
						rows, cols := 4096, 4096
						w := randBlocks(rng, k, rows*cols/k.bs, false)
						x := randVec(rng, 64*cols)
						xq, xd, xs := quantAct(k, x)
						out := make([]float32, rows)
						d := minOf(30, func() { k.matVec(out, w, xq, xd, xs, rows, cols) })
						line(fmt.Sprintf("%s t%d MatVec%s %dx%d", implName(asm), th, k.name, rows, cols), d, float64(len(w)), float64(2*rows*cols))
					}
					const br, bc, bn = 2048, 2048, 64
					bout := make([]float32, bn*br)
					for _, c := range batchCases(rng, br, bc, bn) {
						d := minOf(5, func() { c.matMul(bout, bn) })
						line(fmt.Sprintf("%s t%d MatMul%s %dx%dx%d", implName(asm), th, c.name, br, bc, bn), d, 0, float64(2*br*bc*bn))
					}
				})
			}
		})
	}
}

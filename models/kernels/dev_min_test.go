package kernels

import (
	"fmt"
	"math/rand/v2"
	"os"
	"testing"
	"time"
)

func minTime(reps int, f func()) time.Duration {
	best := time.Duration(1 << 62)
	for range reps {
		t0 := time.Now()
		f()
		best = min(best, time.Since(t0))
	}
	return best
}

func TestDevQF(t *testing.T) {
	if os.Getenv("DEV") == "" {
		t.Skip()
	}
	rng := rand.New(rand.NewPCG(1, 1))
	rows, cols := 768, 2048
	x, out := randVec(rng, 64*cols), make([]float32, 64*rows)
	w := randVec(rng, rows*cols)
	withThreads(1, func() {
		for _, c := range qfCases(rng, rows, cols) {
			for _, l := range isaLevels(nil)[1:] {
				withISA(l, func() {
					d := minTime(300, func() { c.matVec(out, x) })
					d2 := minTime(30, func() { c.matMul(out, x, 64) })
					fmt.Printf("%-6s %-10s matvec %8v %6.1f Gw/s   matmul64 %8v %6.1f GFLOP/s\n", c.name, isaNames[l], d, float64(rows*cols)/d.Seconds()/1e9, d2, 2*64*float64(rows*cols)/d2.Seconds()/1e9)
				})
			}
		}
		for _, c := range []l4Case{newL4Case(rng, &Int4Levels, "int4", rows, cols, 32), newL4Case(rng, &NF4Levels, "NF4", rows, cols, 64)} {
			for _, l := range isaLevels(nil)[1:] {
				withISA(l, func() {
					d := minTime(300, func() { c.matVec(out, x) })
					d2 := minTime(30, func() { c.matMul(out, x, 64) })
					fmt.Printf("%-6s %-10s matvec %8v %6.1f Gw/s   matmul64 %8v %6.1f GFLOP/s\n", c.name, isaNames[l], d, float64(rows*cols)/d.Seconds()/1e9, d2, 2*64*float64(rows*cols)/d2.Seconds()/1e9)
				})
			}
		}
		for _, k := range blockKinds[:1] {
			wq := randBlocks(rng, k, rows*cols/k.bs, false)
			xq, xd, xs := quantAct(k, x[:cols])
			for _, l := range isaLevels(nil)[1:] {
				withISA(l, func() {
					d := minTime(300, func() { k.matVec(out, wq, xq, xd, xs, rows, cols) })
					fmt.Printf("%-6s %-10s matvec %8v %6.1f Gw/s\n", k.name, isaNames[l], d, float64(rows*cols)/d.Seconds()/1e9)
				})
			}
		}
		d := minTime(300, func() { MatVec(out, w, x, rows, cols) })
		d2 := minTime(30, func() { MatMul(out, w, x, rows, cols, 64) })
		fmt.Printf("%-6s %-10s matvec %8v %6.1f Gw/s   matmul64 %8v %6.1f GFLOP/s\n", "F32", "avx2", d, float64(rows*cols)/d.Seconds()/1e9, d2, 2*64*float64(rows*cols)/d2.Seconds()/1e9)
	})
}

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

func TestDevBlocks(t *testing.T) {
	if os.Getenv("DEV") == "" {
		t.Skip()
	}
	rng := rand.New(rand.NewPCG(1, 1))
	for _, sz := range [][2]int{{768, 2048}, {4096, 4096}} {
		rows, cols := sz[0], sz[1]
		reps := 300
		if rows > 1000 {
			reps = 30
		}
		x, out := randVec(rng, cols), make([]float32, rows)
		withThreads(1, func() {
			for _, k := range blockKinds {
				wq := randBlocks(rng, k, rows*cols/k.bs, false)
				xq, xd, xs := quantAct(k, x[:cols])
				for _, l := range isaLevels(nil)[1:] {
					withISA(l, func() {
						d := minTime(reps, func() { k.matVec(out, wq, xq, xd, xs, rows, cols) })
						fmt.Printf("%dx%d %-6s %-10s matvec %8v %6.1f Gw/s\n", rows, cols, k.name, isaNames[l], d, float64(rows*cols)/d.Seconds()/1e9)
					})
				}
			}
			c := newL4Case(rng, &Int4Levels, "int4", rows, cols, 32)
			xq, xd := make([]int8, cols), make([]float32, cols/32)
			QuantizeQ8_0(xq, xd, x)
			for _, l := range isaLevels(nil)[1:] {
				withISA(l, func() {
					d := minTime(reps, func() { MatVecInt4Q8(out, c.packed, c.scale, 32, xq, xd, rows, cols) })
					d2 := minTime(reps, func() { c.matVec(out, x) })
					fmt.Printf("%dx%d %-6s %-10s matvec %8v %6.1f Gw/s   LUT4 (float act) %8v %6.1f Gw/s\n", rows, cols, "I4Q8", isaNames[l], d, float64(rows*cols)/d.Seconds()/1e9, d2, float64(rows*cols)/d2.Seconds()/1e9)
				})
			}
		})
	}
}

func TestDevBatch(t *testing.T) {
	if os.Getenv("DEV") == "" {
		t.Skip()
	}
	rng := rand.New(rand.NewPCG(2, 2))
	const rows, cols, n = 2048, 2048, 64
	out := make([]float32, n*rows)
	withThreads(1, func() {
		for _, c := range batchCases(rng, rows, cols, n) {
			for _, l := range isaLevels(nil)[1:] {
				withISA(l, func() {
					d := minTime(15, func() { c.matMul(out, n) })
					fmt.Printf("%-6s %-10s matmul %dx%dx%d %8v %6.1f GMAC/s\n", c.name, isaNames[l], rows, cols, n, d, float64(rows*cols*n)/d.Seconds()/1e9)
				})
			}
		}
		w, x := randVec(rng, rows*cols), randVec(rng, n*cols)
		d := minTime(5, func() { MatMul(out, w, x, rows, cols, n) })
		fmt.Printf("F32 MatMul %8v %6.1f GMAC/s\n", d, float64(rows*cols*n)/d.Seconds()/1e9)
		gemmEnabled = true
		d = minTime(5, func() { MatMul(out, w, x, rows, cols, n) })
		gemmEnabled = false
		fmt.Printf("F32 GEMM %8v %6.1f GMAC/s\n", d, float64(rows*cols*n)/d.Seconds()/1e9)
	})
}

func TestDevTiles(t *testing.T) {
	if os.Getenv("DEV") == "" {
		t.Skip()
	}
	rng := rand.New(rand.NewPCG(2, 2))
	const rows, cols, n = 512, 1024, 48
	out := make([]float32, n*rows)
	withThreads(1, func() {
		for _, c := range batchCases(rng, rows, cols, n) {
			for _, l := range []isaLevel{isaAVX2, isaAVX512VNNI} {
				withISA(l, func() {
					noTiles = true
					d0 := minTime(40, func() { c.matMul(out, n) })
					noTiles = false
					d1 := minTime(40, func() { c.matMul(out, n) })
					fmt.Printf("%-6s %-10s matmul %dx%dx%d  rows of matvecs %8v %6.1f GMAC/s  tiles %8v %6.1f GMAC/s  %.2fx\n", c.name, isaNames[l], rows, cols, n, d0, float64(rows*cols*n)/d0.Seconds()/1e9, d1, float64(rows*cols*n)/d1.Seconds()/1e9, d0.Seconds()/d1.Seconds())
				})
			}
		}
	})
}

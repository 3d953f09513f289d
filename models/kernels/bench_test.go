package kernels

import (
	"chat/models/hugepage"
	"fmt"
	"math/rand/v2"
	"sync"
	"testing"
)

// Benchmarks report GB/s of weight bytes read (b.SetBytes) and GFLOP/s.
// Compare them with BenchmarkStream, the machine's read bandwidth: a matvec
// whose weights come from DRAM cannot beat it.
//
//	go test -run - -bench . ./models/kernels/

func benchImpls(b *testing.B, f func(b *testing.B)) {
	ls := []isaLevel{isaGo}
	if startISA > isaGo {
		ls = append(ls, startISA)
	}
	for _, l := range ls {
		b.Run(isaNames[l], func(b *testing.B) { withISA(l, func() { f(b) }) })
	}
}

// benchISAs runs f once per kernel set this CPU runs, named by it (ISA()),
// on one thread: the ratios between one run's sub-benchmarks are the speedups
// of the kernel sets, and each line names the ISA it ran on.
func benchISAs(b *testing.B, f func(b *testing.B)) {
	for _, l := range isaLevels(nil) {
		b.Run(isaNames[l], func(b *testing.B) {
			withISA(l, func() { withThreads(1, func() { f(b) }) })
		})
	}
}

func benchThreads(b *testing.B, f func(b *testing.B)) {
	for _, th := range []int{1, 2} {
		b.Run(fmt.Sprintf("t%d", th), func(b *testing.B) { withThreads(th, func() { f(b) }) })
	}
}

func reportFlops(b *testing.B, flopsPerOp float64) {
	b.ReportMetric(flopsPerOp*float64(b.N)/b.Elapsed().Seconds()/1e9, "GFLOP/s")
}

// BenchmarkMatVec: 768x2048 (6 MiB) stays in L3 between calls ("hot");
// 4096x4096 (64 MiB) is twice the L3 and streams from DRAM.
func BenchmarkMatVec(b *testing.B) {
	for _, sz := range [][2]int{{768, 2048}, {4096, 4096}} {
		rows, cols := sz[0], sz[1]
		rng := rand.New(rand.NewPCG(1, 1))
		w, x, out := randVec(rng, rows*cols), randVec(rng, cols), make([]float32, rows)
		b.Run(fmt.Sprintf("%dx%d", rows, cols), func(b *testing.B) {
			benchImpls(b, func(b *testing.B) {
				benchThreads(b, func(b *testing.B) {
					b.SetBytes(int64(rows * cols * 4))
					for b.Loop() {
						MatVec(out, w, x, rows, cols)
					}
					reportFlops(b, 2*float64(rows*cols))
				})
			})
		})
	}
}

// BenchmarkMatMul: a batch-8 decode step and a 64-token prefill through a
// 2048x768 and a 768x2048 weight. Bytes are weight bytes, so GB/s above
// BenchmarkStream's is the reuse the tiles buy.
func BenchmarkMatMul(b *testing.B) {
	for _, sz := range [][3]int{{2048, 768, 8}, {768, 2048, 8}, {2048, 768, 64}, {768, 2048, 64}} {
		rows, cols, n := sz[0], sz[1], sz[2]
		rng := rand.New(rand.NewPCG(2, 2))
		w, x, out := randVec(rng, rows*cols), randVec(rng, n*cols), make([]float32, n*rows)
		b.Run(fmt.Sprintf("%dx%dx%d", rows, cols, n), func(b *testing.B) {
			benchImpls(b, func(b *testing.B) {
				benchThreads(b, func(b *testing.B) {
					b.SetBytes(int64(rows * cols * 4))
					for b.Loop() {
						MatMul(out, w, x, rows, cols, n)
					}
					reportFlops(b, 2*float64(rows*cols*n))
				})
			})
		})
	}
}

func BenchmarkDot(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 3))
	for _, n := range []int{64, 2048} {
		x, y := randVec(rng, n), randVec(rng, n)
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			benchImpls(b, func(b *testing.B) {
				b.SetBytes(int64(n * 8))
				for b.Loop() {
					Dot(x, y)
				}
			})
		})
	}
}

func BenchmarkAxpy(b *testing.B) {
	rng := rand.New(rand.NewPCG(4, 4))
	x, y := randVec(rng, 2048), randVec(rng, 2048)
	benchImpls(b, func(b *testing.B) {
		b.SetBytes(2048 * 12)
		for b.Loop() {
			Axpy(1e-9, x, y)
		}
	})
}

// BenchmarkStream sums a 1 GiB float32 slice per op: the read-bandwidth
// figure the other benchmarks are divided by. t2 gives each of 2 goroutines
// half the slice.
func BenchmarkStream(b *testing.B) {
	if testing.Short() {
		b.Skip("allocates 1 GiB")
	}
	a := hugepage.Floats(1 << 28) // the one allocation, in the memory weights get; pages touched once here
	for i := range a {
		a[i] = 1
	}
	benchImpls(b, func(b *testing.B) {
		for _, th := range []int{1, 2} {
			b.Run(fmt.Sprintf("t%d", th), func(b *testing.B) {
				b.SetBytes(int64(len(a) * 4))
				var wg sync.WaitGroup
				for b.Loop() {
					if th == 1 {
						Dot(a, a)
						continue
					}
					h := len(a) / 2
					wg.Add(1)
					go func() { Dot(a[h:], a[h:]); wg.Done() }()
					Dot(a[:h], a[:h])
					wg.Wait()
				}
			})
		}
	})
}

// BenchmarkMatMulIL: a 64-token prefill through a 1024x2048 interleaved
// Q8_0 and Q4_0 weight (ilblock.go), per kernel set, one thread.
func BenchmarkMatMulIL(b *testing.B) {
	const rows, cols, n = 1024, 2048, 64
	rng := rand.New(rand.NewPCG(3, 3))
	for _, name := range []string{"q8_0", "q4_0"} {
		c := newILCase(b, rng, name, rows, cols)
		var a ILAct
		a.Quantize(randVec(rng, n*cols), n, cols, c.k)
		out := make([]float32, n*rows)
		b.Run(fmt.Sprintf("%s-%dx%dx%d", name, rows, cols, n), func(b *testing.B) {
			benchISAs(b, func(b *testing.B) {
				for b.Loop() {
					MatMulIL(c.k, out, c.w, nil, 0, &a, rows, cols, Cached)
				}
				reportFlops(b, 2*float64(rows*cols*n))
			})
		})
	}
}

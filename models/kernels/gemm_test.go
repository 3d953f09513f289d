package kernels

import (
	"chat/models/testmodels"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// gemmTol bounds the error of a float32 sum of cols products added in
// sequence (one FMA per term, so at most cols roundings of partial sums no
// larger than Σ|terms|): (cols+2)·u·Σ|w·x|, doubled for slack.
func gemmTol(cols int, absSum float64) float64 {
	return 2*float64(cols+2)*u*absSum + 1e-37
}

// gemmImpls lists the tile sets to test: AVX-512 (when the CPU has it) and
// AVX2, via gemmAVX512.
func gemmImpls() []bool {
	if !gemmHasAsm || !useAsm {
		return nil
	}
	if gemmAVX512 {
		return []bool{true, false}
	}
	return []bool{false}
}

func gemmName(avx512 bool) string {
	if avx512 {
		return "avx512"
	}
	return "avx2"
}

// withGEMM runs f with MatMulPrefill on the GEMM path and the AVX-512 tiles on or off.
func withGEMM(avx512 bool, f func()) {
	old, oldOn := gemmAVX512, gemmEnabled
	gemmAVX512, gemmEnabled = avx512, true
	defer func() { gemmAVX512, gemmEnabled = old, oldOn }()
	f()
}

// checkMatMulRef checks out = X·Wᵀ against a float64 reference within the
// sequential-sum bound.
func checkMatMulRef(t *testing.T, what string, out, w, x []float32, rows, cols, n int) {
	t.Helper()
	for tok := 0; tok < n; tok++ {
		for r := 0; r < rows; r++ {
			want, abs := ref(w[r*cols:(r+1)*cols], x[tok*cols:(tok+1)*cols])
			if d := math.Abs(float64(out[tok*rows+r]) - want); !(d <= gemmTol(cols, abs)) {
				t.Fatalf("%s: token %d row %d: got %v want %v (err %g, tol %g)",
					what, tok, r, out[tok*rows+r], want, d, gemmTol(cols, abs))
			}
		}
	}
}

func TestGEMM(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	type tc struct{ rows, cols, n int }
	var cases []tc
	for _, rows := range []int{1, 5, 11, 12, 13, 18, 23, 24, 25, 36, 47, 70} {
		for _, cols := range []int{1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 64, 100, 255, 300} {
			for _, n := range []int{1, 4, 7, 8, 9, 15, 16, 17, 24, 31, 32, 33, 40} {
				cases = append(cases, tc{rows, cols, n})
			}
		}
	}
	cases = append(cases, tc{97, 768, 70}, tc{36, 2051, 48})
	for _, avx512 := range gemmImpls() {
		withGEMM(avx512, func() {
			for i, c := range cases {
				off := i % 8
				w := unaligned(rng, c.rows*c.cols, off)
				x := unaligned(rng, c.n*c.cols, 7-off)
				out := unaligned(rng, c.n*c.rows, (off+3)%8)
				what := fmt.Sprintf("%s rows=%d cols=%d n=%d", gemmName(avx512), c.rows, c.cols, c.n)
				MatMulPrefill(out, w, x, c.rows, c.cols, c.n)
				checkSentinels(t, what, out)
				checkMatMulRef(t, what, out, w, x, c.rows, c.cols, c.n)
				// The pure-Go MatMul agrees within the sum of both bounds.
				goOut := make([]float32, len(out))
				withImpl(isaGo, func() { MatMul(goOut, w, x, c.rows, c.cols, c.n) })
				for k := range goOut {
					tok, r := k/c.rows, k%c.rows
					_, abs := ref(w[r*c.cols:(r+1)*c.cols], x[tok*c.cols:(tok+1)*c.cols])
					if d := math.Abs(float64(out[k] - goOut[k])); !(d <= gemmTol(c.cols, abs)+dotTol(c.cols, abs)) {
						t.Fatalf("%s: out[%d] asm %v go %v", what, k, out[k], goOut[k])
					}
				}
			}
		})
	}
}

// TestGEMMRowBitsAnyN: a token's row gets the same bits whatever the
// number of tokens beside it and where its panel starts, so a sequence's
// prefill computes the same in any batch (nn.Runner relies on it).
func TestGEMMRowBitsAnyN(t *testing.T) {
	rng := rand.New(rand.NewPCG(47, 48))
	for _, avx512 := range gemmImpls() {
		withGEMM(avx512, func() {
			rows, cols, n := 37, 200, 50
			w, x := randVec(rng, rows*cols), randVec(rng, n*cols)
			all := make([]float32, n*rows)
			MatMulPrefill(all, w, x, rows, cols, n)
			for _, c := range [][2]int{{0, 1}, {5, 6}, {3, 20}, {17, 50}, {40, 49}} {
				t0, t1 := c[0], c[1]
				part := make([]float32, (t1-t0)*rows)
				MatMulPrefill(part, w, x[t0*cols:t1*cols], rows, cols, t1-t0)
				checkBits(t, fmt.Sprintf("%s tokens [%d,%d)", gemmName(avx512), t0, t1), part, all[t0*rows:t1*rows])
			}
		})
	}
}

// TestPackPanels checks the packed layout (asm 8×8 transposes plus Go edges)
// against its definition, padding included.
func TestPackPanels(t *testing.T) {
	rng := rand.New(rand.NewPCG(49, 50))
	for _, nr := range []int{16, 32} {
		for cols := 1; cols <= 70; cols += 3 {
			for n := 1; n <= 40; n++ {
				x := randVec(rng, n*cols)
				xp := randVec(rng, (n+nr-1)/nr*nr*cols)
				packPanels(xp, x, cols, n, nr)
				for t0 := 0; t0 < n; t0 += nr {
					pw := panelWidth(n, t0, nr)
					for k := 0; k < cols; k++ {
						for j := 0; j < pw; j++ {
							want := float32(0)
							if t0+j < n {
								want = x[(t0+j)*cols+k]
							}
							if got := xp[t0*cols+k*pw+j]; got != want {
								t.Fatalf("nr=%d cols=%d n=%d: panel %d k=%d j=%d: %v want %v", nr, cols, n, t0, k, j, got, want)
							}
						}
					}
				}
			}
		}
	}
}

// TestGEMMThreads: 1, 2 and 3 threads give the same bits (each output is one
// tile lane whichever thread computes it), and -race sees the shared packed
// panels only read.
func TestGEMMThreads(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	for _, avx512 := range gemmImpls() {
		withGEMM(avx512, func() {
			for _, c := range [][3]int{{301, 257, 19}, {768, 512, 40}, {100, 1000, 8}} {
				rows, cols, n := c[0], c[1], c[2]
				w, x := randVec(rng, rows*cols), randVec(rng, n*cols)
				want := make([]float32, rows*n)
				withThreads(1, func() { MatMulPrefill(want, w, x, rows, cols, n) })
				checkMatMulRef(t, gemmName(avx512), want, w, x, rows, cols, n)
				for _, th := range []int{2, 3} {
					withThreads(th, func() {
						got := make([]float32, rows*n)
						MatMulPrefill(got, w, x, rows, cols, n)
						for i := range got {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Fatalf("%s %v threads=%d: out[%d] = %v, 1 thread %v", gemmName(avx512), c, th, i, got[i], want[i])
							}
						}
					})
				}
			}
		})
	}
}

func TestGEMMStaysInBounds(t *testing.T) {
	for _, avx512 := range gemmImpls() {
		withGEMM(avx512, func() {
			for _, cols := range []int{1, 7, 16, 33} {
				for _, rows := range []int{12, 13, 24, 30} {
					for _, n := range []int{8, 17, 33} {
						w, x, out := guarded(t, rows*cols), guarded(t, n*cols), guarded(t, n*rows)
						MatMulPrefill(out, w, x, rows, cols, n)
						checkMatMulRef(t, "guarded", out, w, x, rows, cols, n)
						MatMulF16ILPrefill(out, guardedF16(t, HalfILLen(rows, cols)), x, rows, cols, n)
					}
				}
			}
		})
	}
}

func TestGEMMAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	rows, cols, n := 768, 512, 40 // two full panels and a half one (AVX2)
	w, x, out := randVec(rng, rows*cols), randVec(rng, n*cols), make([]float32, n*rows)
	wh := halfIL(randF16(rng, rows*cols), rows, cols)
	for _, avx512 := range gemmImpls() {
		for _, th := range []int{1, 2} {
			withThreads(th, func() {
				withGEMM(avx512, func() {
					MatMulPrefill(out, w, x, rows, cols, n)
					if a := testing.AllocsPerRun(20, func() { MatMulPrefill(out, w, x, rows, cols, n) }); a != 0 && !testmodels.Race {
						t.Errorf("%s threads=%d: GEMM MatMul allocates %v times per call", gemmName(avx512), th, a)
					}
					MatMulF16ILPrefill(out, wh, x, rows, cols, n)
					if a := testing.AllocsPerRun(20, func() { MatMulF16ILPrefill(out, wh, x, rows, cols, n) }); a != 0 && !testmodels.Race {
						t.Errorf("%s threads=%d: GEMM MatMulF16IL allocates %v times per call", gemmName(avx512), th, a)
					}
				})
			})
		}
	}
}

// BenchmarkMatMulGEMM: a 128-token prefill through the two shapes of a
// 110M-class layer; "old" is the MatVec-equal 4×3 tile.
var gemmBenchSizes = [][2]int{{768, 2048}, {2048, 768}}

func BenchmarkMatMulGEMM(b *testing.B) {
	const n = 128
	for _, sz := range gemmBenchSizes {
		rows, cols := sz[0], sz[1]
		rng := rand.New(rand.NewPCG(47, 48))
		w, x, out := randVec(rng, rows*cols), randVec(rng, n*cols), make([]float32, n*rows)
		run := func(b *testing.B, f func()) {
			benchThreads(b, func(b *testing.B) {
				for b.Loop() {
					f()
				}
				reportFlops(b, 2*float64(rows*cols*n))
			})
		}
		name := fmt.Sprintf("%dx%dx%d", rows, cols, n)
		for _, avx512 := range gemmImpls() {
			b.Run(name+"/"+gemmName(avx512), func(b *testing.B) {
				withGEMM(avx512, func() { run(b, func() { MatMulPrefill(out, w, x, rows, cols, n) }) })
			})
		}
		if useAsm {
			b.Run(name+"/old", func(b *testing.B) {
				run(b, func() {
					if rows*cols*n < parallelMin || !defaultPool.run(opMatMul, out, w, x, rows, cols, n) {
						matMulRange(out, w, x, rows, cols, n, 0, rows)
					}
				})
			})
		}
	}
}

func BenchmarkPackPanels(b *testing.B) {
	const n, cols = 128, 2048
	x := randVec(rand.New(rand.NewPCG(1, 2)), n*cols)
	xp := make([]float32, n*cols)
	for b.Loop() {
		packPanels(xp, x, cols, n, 16)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(n*cols), "ns/elem")
}

package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// TestPackHalfIL: every row comes back out of the interleaved layout, and
// the padding (columns past the row, rows past the last) is +0.
func TestPackHalfIL(t *testing.T) {
	rng := rand.New(rand.NewPCG(121, 122))
	for _, rc := range [][2]int{{1, 1}, {3, 0}, {3, 7}, {16, 8}, {17, 9}, {33, 100}, {40, 768}} {
		rows, cols := rc[0], rc[1]
		w := randF16(rng, rows*cols)
		il := make([]uint16, HalfILLen(rows, cols))
		for i := range il {
			il[i] = 0xffff // PackHalfIL must clear the padding
		}
		PackHalfIL(il, w, rows, cols)
		nz := 0
		for _, h := range il {
			if h != 0 {
				nz++
			}
		}
		want := 0
		for _, h := range w {
			if h != 0 {
				want++
			}
		}
		if nz != want {
			t.Fatalf("rows=%d cols=%d: %d nonzero halves interleaved, %d row-major", rows, cols, nz, want)
		}
		row := make([]uint16, cols)
		for r := 0; r < rows; r++ {
			halfILRows(row, il, cols, r, r+1)
			for c, h := range row {
				if h != w[r*cols+c] || il[HalfILIndex(r, c, cols)] != h {
					t.Fatalf("rows=%d cols=%d: row %d col %d is %#04x, want %#04x", rows, cols, r, c, h, w[r*cols+c])
				}
			}
		}
	}
}

// halfIL returns the row-major [rows][cols] halves w interleaved.
func halfIL(w []uint16, rows, cols int) []uint16 {
	il := make([]uint16, HalfILLen(rows, cols))
	PackHalfIL(il, w, rows, cols)
	return il
}

// halfILRef is what a product of interleaved 2-byte weights must give:
// MatMul on the widened weights wf, or for a prefill where the GEMM runs
// (AVX-512 CPUs) MatMulPrefill on them.
func halfILRef(prefill bool, out, wf, x []float32, rows, cols, n int) {
	if prefill && gemmAVX512 && gemmHasAsm {
		MatMulPrefill(out, wf, x, rows, cols, n)
		return
	}
	MatMul(out, wf, x, rows, cols, n)
}

// TestMatMulHalfIL: the interleaved products give bitwise MatMul (the
// Prefill twins where the GEMM runs: MatMulPrefill) on the widened weights,
// for one token and batches, on every implementation (with and without the
// pair tiles and the GEMM) and 1 or 2 threads, odd shapes and unaligned
// outputs included.
func TestMatMulHalfIL(t *testing.T) {
	rng := rand.New(rand.NewPCG(123, 124))
	shapes := [][2]int{{1, 0}, {17, 0}, {1, 1}, {5, 7}, {16, 8}, {17, 9}, {15, 33}, {33, 64}, {40, 100}, {48, 768}, {301, 1000}, {1030, 1024}}
	type prod struct {
		name    string
		il      func(out []float32, w []uint16, x []float32, rows, cols, n int)
		bf16    bool
		prefill bool
	}
	prods := []prod{
		{"MatMulF16IL", MatMulF16IL, false, false},
		{"MatMulF16ILPrefill", MatMulF16ILPrefill, false, true},
		{"MatMulBF16IL", MatMulBF16IL, true, false},
		{"MatMulBF16ILPrefill", MatMulBF16ILPrefill, true, true},
	}
	for _, sh := range shapes {
		rows, cols := sh[0], sh[1]
		for _, p := range prods {
			w, wf := randF16(rng, rows*cols), []float32(nil)
			if p.bf16 {
				w = randBF16(rng, rows*cols)
				wf = widenBF16(w)
			} else {
				wf = widenF16(w)
			}
			il := halfIL(w, rows, cols)
			for _, n := range []int{1, 2, 3, 5, 9, 17} {
				if rows*cols*n > 1<<21 && n > 3 {
					continue
				}
				x := randVec(rng, n*cols)
				for _, l := range impls() {
					for _, tiles := range []bool{true, false} {
						if !tiles && (n == 1 || l < isaAVX512) {
							continue
						}
						withImpl(l, func() {
							noTiles = !tiles
							defer func() { noTiles = false }()
							for _, th := range []int{1, 2} {
								if th == 2 && rows*cols*n < parallelMin {
									continue
								}
								withThreads(th, func() {
									what := fmt.Sprintf("%s %s tiles=%v threads=%d rows=%d cols=%d n=%d", p.name, implName(l), tiles, th, rows, cols, n)
									want, got := make([]float32, n*rows), unaligned(rng, n*rows, 1)
									halfILRef(p.prefill, want, wf, x, rows, cols, n)
									p.il(got, il, x, rows, cols, n)
									checkSentinels(t, what, got)
									checkBits(t, what, got, want)
								})
							}
						})
					}
				}
			}
		}
	}
}

// HalfILLen is whole groups of whole chunks: it multiplied the groups by
// cols+7 before dividing by 8, which over-allocated large matrices (a
// 128,256-row embedding of 2,048 columns by 1.8 MB).
func TestHalfILLen(t *testing.T) {
	for _, c := range []struct{ rows, cols, want int }{
		{1, 1, 128}, {16, 8, 128}, {17, 9, 4 * 128}, {128256, 2048, 8016 * 256 * 128}, {2048, 8191, 128 * 1024 * 128},
	} {
		if got := HalfILLen(c.rows, c.cols); got != c.want {
			t.Errorf("HalfILLen(%d, %d) = %d, want %d", c.rows, c.cols, got, c.want)
		}
	}
}

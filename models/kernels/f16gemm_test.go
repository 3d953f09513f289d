package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestWidenF16Into: every half widens to f16ToF32's value.
func TestWidenF16Into(t *testing.T) {
	src := make([]uint16, 1<<16+5)
	for i := range src {
		src[i] = uint16(i)
	}
	for _, l := range impls() {
		withImpl(l, func() {
			dst := make([]float32, len(src))
			WidenF16(dst, src)
			for i, h := range src {
				want := f16ToF32(h)
				if math.Float32bits(dst[i]) != math.Float32bits(want) && !(want != want && dst[i] != dst[i]) {
					t.Fatalf("%s: half %#04x widens to %v, want %v", implName(l), h, dst[i], want)
				}
			}
		})
	}
}

// TestMatMulF16GEMM: on the GEMM path (AVX-512 CPUs) MatMulF16ILPrefill
// gives bitwise MatMulPrefill's results on the widened weights, on 1 or 2
// threads.
func TestMatMulF16GEMM(t *testing.T) {
	if !runnable(isaAVX512) || !gemmHasAsm {
		t.Skip("this CPU has no AVX-512: MatMulF16ILPrefill keeps MatMulF16IL's tiles")
	}
	rng := rand.New(rand.NewPCG(111, 112))
	for _, sh := range [][3]int{{12, 8, 16}, {13, 33, 17}, {37, 64, 40}, {300, 200, 33}} {
		rows, cols, n := sh[0], sh[1], sh[2]
		w := randF16(rng, rows*cols)
		il, wf := halfIL(w, rows, cols), widenF16(w)
		x := randVec(rng, n*cols)
		for _, avx512 := range gemmImpls() {
			if !avx512 {
				continue // AVX2 CPUs keep MatMulF16IL's tiles
			}
			withGEMM(avx512, func() {
				for _, th := range []int{1, 2} {
					withThreads(th, func() {
						what := fmt.Sprintf("%s threads=%d rows=%d cols=%d n=%d", gemmName(avx512), th, rows, cols, n)
						want, got := make([]float32, n*rows), unaligned(rng, n*rows, 1)
						MatMulPrefill(want, wf, x, rows, cols, n)
						MatMulF16ILPrefill(got, il, x, rows, cols, n)
						checkSentinels(t, what, got)
						checkBits(t, what, got, want)
					})
				}
			})
		}
	}
}

// BenchmarkMatMulF16GEMM: a 64-token prefill through interleaved f16
// weights, with MatMulF16IL's tiles and with the GEMM path.
func BenchmarkMatMulF16GEMM(b *testing.B) {
	const n = 64
	for _, sz := range [][2]int{{2048, 768}, {768, 2048}} {
		rows, cols := sz[0], sz[1]
		rng := rand.New(rand.NewPCG(17, 17))
		w, x, out := halfIL(randF16(rng, rows*cols), rows, cols), randVec(rng, n*cols), make([]float32, n*rows)
		for _, gemm := range []bool{false, true} {
			b.Run(fmt.Sprintf("%dx%dx%d/gemm=%v/%s", rows, cols, n, gemm, ISA()), func(b *testing.B) {
				mul := MatMulF16IL
				if gemm {
					mul = MatMulF16ILPrefill
				}
				withThreads(1, func() {
					b.SetBytes(int64(rows * cols * 2))
					for b.Loop() {
						mul(out, w, x, rows, cols, n)
					}
					reportFlops(b, 2*float64(rows*cols*n))
				})
			})
		}
	}
}

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"chat/models/gguf"
)

// randBF16 returns n bf16 weights of magnitude up to 4: mostly normals, some
// subnormals and signed zeros.
func randBF16(rng *rand.Rand, n int) []uint16 {
	w := make([]uint16, n)
	for i := range w {
		exp := uint16(120 + rng.IntN(9)) // 2^-7 .. 2^1
		switch rng.IntN(16) {
		case 0:
			exp = 0 // subnormal or zero
		case 1:
			exp = uint16(1 + rng.IntN(119))
		}
		man := uint16(rng.IntN(128))
		if rng.IntN(32) == 0 {
			man = 0
		}
		w[i] = uint16(rng.IntN(2))<<15 | exp<<7 | man
	}
	return w
}

func widenBF16(w []uint16) []float32 {
	f := make([]float32, len(w))
	for i, h := range w {
		f[i] = gguf.BF16ToF32(h)
	}
	return f
}

// TestMatVecBF16: one token of the interleaved bf16 product is bitwise
// MatVec on the widened weights (the float32 kernels of the same level; the
// levels agree to float32 rounding of a float64 reference), on every
// implementation, odd shapes, unaligned activations and outputs and 1 or 2
// threads; a row alone gives the bits of the row in a block.
func TestMatVecBF16(t *testing.T) {
	rng := rand.New(rand.NewPCG(181, 182))
	for _, rc := range f16Cases() {
		rows, cols := rc[0], rc[1]
		off := (rows + cols) % 4
		w := randBF16(rng, rows*cols)
		il, wf := halfIL(w, rows, cols), widenBF16(w)
		x := unaligned(rng, cols, 3-off)
		for _, asm := range impls() {
			withImpl(asm, func() {
				for _, th := range []int{1, 2} {
					if th == 2 && rows*cols < parallelMin {
						continue
					}
					withThreads(th, func() {
						what := fmt.Sprintf("%s threads=%d MatMulBF16IL rows=%d cols=%d n=1", implName(asm), th, rows, cols)
						want, got := make([]float32, rows), unaligned(rng, rows, 1)
						MatVec(want, wf, x, rows, cols)
						MatMulBF16IL(got, il, x, rows, cols, 1)
						checkSentinels(t, what, got)
						checkBits(t, what, got, want)
						checkMatVec(t, what, got, wf, x, rows, cols)
						if th == 1 && rows <= 17 {
							for r := 0; r < rows; r++ {
								one := []float32{0}
								MatMulBF16IL(one, halfIL(w[r*cols:], 1, cols), x, 1, cols, 1)
								if math.Float32bits(one[0]) != math.Float32bits(got[r]) {
									t.Fatalf("%s: row %d alone %v, in block %v", what, r, one[0], got[r])
								}
							}
						}
					})
				}
			})
		}
	}
}

// TestMatMulBF16: the interleaved bf16 product is bitwise MatMul on the
// widened weights and n one-token products, on every implementation (the
// AVX-512 pair tiles for n >= 2).
func TestMatMulBF16(t *testing.T) {
	rng := rand.New(rand.NewPCG(183, 184))
	type tc struct{ rows, cols, n int }
	var cases []tc
	for _, rows := range []int{1, 3, 4, 5, 7, 9, 13, 16} {
		for _, cols := range []int{0, 1, 2, 3, 7, 8, 9, 15, 17, 31, 67} {
			for _, n := range []int{0, 1, 2, 3, 4, 5, 8, 9, 13} {
				cases = append(cases, tc{rows, cols, n})
			}
		}
	}
	cases = append(cases, tc{13, 768, 70}, tc{9, 2048, 30}, tc{301, 257, 7}, tc{768, 512, 16})
	for _, c := range cases {
		w := randBF16(rng, c.rows*c.cols)
		il, wf := halfIL(w, c.rows, c.cols), widenBF16(w)
		x := unaligned(rng, c.n*c.cols, 2)
		for _, asm := range impls() {
			withImpl(asm, func() {
				for _, th := range []int{1, 2} {
					if th == 2 && c.rows*c.cols*c.n < parallelMin {
						continue
					}
					withThreads(th, func() {
						what := fmt.Sprintf("%s threads=%d MatMulBF16IL rows=%d cols=%d n=%d", implName(asm), th, c.rows, c.cols, c.n)
						want, got := make([]float32, c.n*c.rows), unaligned(rng, c.n*c.rows, 3)
						MatMul(want, wf, x, c.rows, c.cols, c.n)
						MatMulBF16IL(got, il, x, c.rows, c.cols, c.n)
						checkSentinels(t, what, got)
						checkBits(t, what, got, want)
						one := make([]float32, c.rows)
						for tok := 0; tok < c.n; tok++ {
							MatMulBF16IL(one, il, x[tok*c.cols:(tok+1)*c.cols], c.rows, c.cols, 1)
							checkBits(t, fmt.Sprintf("%s token %d vs n=1", what, tok), got[tok*c.rows:(tok+1)*c.rows], one)
						}
					})
				}
			})
		}
	}
}

// TestMatMulBF16Prefill: MatMulPrefill's bits on the widened weights where
// the GEMM runs (AVX-512), MatMul's elsewhere; 1 or 2 threads.
func TestMatMulBF16Prefill(t *testing.T) {
	rng := rand.New(rand.NewPCG(185, 186))
	for _, sh := range [][3]int{{12, 8, 16}, {13, 33, 17}, {37, 64, 40}, {300, 200, 33}} {
		rows, cols, n := sh[0], sh[1], sh[2]
		w := randBF16(rng, rows*cols)
		il, wf := halfIL(w, rows, cols), widenBF16(w)
		x := randVec(rng, n*cols)
		for _, asm := range impls() {
			withImpl(asm, func() {
				for _, th := range []int{1, 2} {
					withThreads(th, func() {
						what := fmt.Sprintf("%s threads=%d rows=%d cols=%d n=%d", implName(asm), th, rows, cols, n)
						want, got := make([]float32, n*rows), unaligned(rng, n*rows, 1)
						halfILRef(true, want, wf, x, rows, cols, n)
						MatMulBF16ILPrefill(got, il, x, rows, cols, n)
						checkSentinels(t, what, got)
						checkBits(t, what, got, want)
					})
				}
			})
		}
	}
}

// TestBF16Special: infinities and signed zeros in the weights give MatVec's
// bits on the widened weights.
func TestBF16Special(t *testing.T) {
	rng := rand.New(rand.NewPCG(187, 188))
	rows, cols := 9, 29
	w := randBF16(rng, rows*cols)
	w[3], w[cols+5], w[2*cols+28] = 0x7f80, 0xff80, 0x8000 // +inf, -inf, -0
	for i := 3 * cols; i < 4*cols; i++ {
		w[i] = 0x8000 // a row of -0
	}
	il, wf := halfIL(w, rows, cols), widenBF16(w)
	x := randVec(rng, cols)
	for _, asm := range impls() {
		withImpl(asm, func() {
			want, got := make([]float32, rows), make([]float32, rows)
			MatVec(want, wf, x, rows, cols)
			MatMulBF16IL(got, il, x, rows, cols, 1)
			checkBits(t, implName(asm), got, want)
		})
	}
}

// TestBF16Allocs: the products the models run do not allocate in assembly.
func TestBF16Allocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(189, 190))
	rows, cols, n := 768, 2048, 4
	w, x, out := halfIL(randBF16(rng, rows*cols), rows, cols), randVec(rng, n*cols), make([]float32, n*rows)
	for _, asm := range impls() {
		if asm == isaGo {
			// The Go kernels copy interleaved rows out into sync.Pool
			// buffers, one per range: a range can miss and allocate one.
			continue
		}
		withImpl(asm, func() {
			withThreads(2, func() {
				MatMulBF16IL(out, w, x, rows, cols, 1) // start the workers
				if a := testing.AllocsPerRun(20, func() { MatMulBF16IL(out, w, x, rows, cols, 1) }); a != 0 {
					t.Errorf("%s MatMulBF16IL n=1 allocates %v times per call", implName(asm), a)
				}
				if a := testing.AllocsPerRun(5, func() { MatMulBF16IL(out, w, x, rows, cols, n) }); a != 0 {
					t.Errorf("%s MatMulBF16IL allocates %v times per call", implName(asm), a)
				}
			})
		})
	}
}

// TestRoundBF16: every kernel set rounds through bf16 as gguf.F32ToBF16
// does (ties, overflow, subnormals, a NaN kept quiet with its payload's top
// bits).
func TestRoundBF16(t *testing.T) {
	rng := rand.New(rand.NewPCG(191, 192))
	src := make([]float32, 4099)
	for i := range src {
		src[i] = math.Float32frombits(rng.Uint32()) // every class, NaNs included
		if i%2 == 0 {
			src[i] = float32(math.Ldexp(rng.NormFloat64(), rng.IntN(80)-40))
		}
	}
	src[0], src[1], src[2] = 3.4e38, -1e-40, float32(math.Inf(-1))
	src[3] = math.Float32frombits(0x3f808000) // a tie: to even (down)
	src[4] = math.Float32frombits(0x3f818000) // a tie: to even (up)
	src[5] = math.Float32frombits(0x7f800001) // a signalling NaN
	for _, l := range impls() {
		withImpl(l, func() {
			dst := make([]float32, len(src))
			RoundBF16(dst, src)
			for i, v := range src {
				if want := gguf.BF16ToF32(gguf.F32ToBF16(v)); math.Float32bits(dst[i]) != math.Float32bits(want) {
					t.Fatalf("%s: %#x rounds to %#x, want %#x", implName(l), math.Float32bits(v), math.Float32bits(dst[i]), math.Float32bits(want))
				}
			}
		})
	}
}

// BenchmarkMatVecBF16: as BenchmarkMatVecF16, bytes are the bf16 weight
// bytes read per product.
func BenchmarkMatVecBF16(b *testing.B) {
	for _, sz := range [][2]int{{768, 768}, {2048, 768}, {768, 2048}, {32000, 768}} {
		rows, cols := sz[0], sz[1]
		rng := rand.New(rand.NewPCG(7, 7))
		w, x, out := halfIL(randBF16(rng, rows*cols), rows, cols), randVec(rng, cols), make([]float32, rows)
		b.Run(fmt.Sprintf("%dx%d/%s", rows, cols, ISA()), func(b *testing.B) {
			withThreads(1, func() {
				b.SetBytes(int64(rows * cols * 2))
				for b.Loop() {
					MatMulBF16IL(out, w, x, rows, cols, 1)
				}
			})
		})
	}
}

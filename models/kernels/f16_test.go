package kernels

import (
	"chat/models/gguf"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
	"time"
)

// randF16 returns n f16 weights of magnitude up to 4: mostly normals, some
// subnormals and signed zeros.
func randF16(rng *rand.Rand, n int) []uint16 {
	w := make([]uint16, n)
	for i := range w {
		exp := uint16(8 + rng.IntN(9)) // 2^-7 .. 2^1
		switch rng.IntN(16) {
		case 0:
			exp = 0 // subnormal or zero
		case 1:
			exp = uint16(1 + rng.IntN(7))
		}
		man := uint16(rng.IntN(1024))
		if rng.IntN(32) == 0 {
			man = 0
		}
		w[i] = uint16(rng.IntN(2))<<15 | exp<<10 | man
	}
	return w
}

func widenF16(w []uint16) []float32 {
	f := make([]float32, len(w))
	for i, h := range w {
		f[i] = f16ToF32(h)
	}
	return f
}

// TestF16ToF32: every half converts to its exact value, and the Go
// kernels' table holds the same bits.
func TestF16ToF32(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		sign, exp, man := h>>15, h>>10&0x1f, h&0x3ff
		got := f16ToF32(uint16(h))
		if tab := f16Table()[h]; math.Float32bits(tab) != math.Float32bits(got) {
			t.Fatalf("%#04x: table %#x, f16ToF32 %#x", h, math.Float32bits(tab), math.Float32bits(got))
		}
		var want float64
		switch {
		case exp == 0x1f && man == 0:
			want = math.Inf(1)
		case exp == 0x1f:
			if !math.IsNaN(float64(got)) || math.Float32bits(got)&0x7fffff != uint32(man)<<13 {
				t.Fatalf("%#04x: %v (%#x), want NaN with its payload", h, got, math.Float32bits(got))
			}
			continue
		case exp == 0:
			want = math.Ldexp(float64(man), -24)
		default:
			want = math.Ldexp(float64(1024+man), exp-25)
		}
		if sign == 1 {
			want = -want
		}
		if float64(got) != want || math.Signbit(float64(got)) != (sign == 1) {
			t.Fatalf("%#04x: %v, want %v", h, got, want)
		}
	}
}

func f16Cases() [][2]int {
	return append(matVecCases(), [2]int{301, 1000}, [2]int{1029, 777}, [2]int{4096, 17}, [2]int{1000, 77}, [2]int{1030, 1024})
}

// TestMatVecF16: one token of the interleaved f16 product is bitwise
// MatVec on the widened weights, on every implementation, odd shapes,
// unaligned activations and outputs and 1 or 2 threads; within float32
// rounding of a float64 reference; a row alone gives the bits of the row in
// a block.
func TestMatVecF16(t *testing.T) {
	rng := rand.New(rand.NewPCG(81, 82))
	for _, rc := range f16Cases() {
		rows, cols := rc[0], rc[1]
		off := (rows + cols) % 4
		w := randF16(rng, rows*cols)
		il, wf := halfIL(w, rows, cols), widenF16(w)
		x := unaligned(rng, cols, 3-off)
		for _, asm := range impls() {
			withImpl(asm, func() {
				for _, th := range []int{1, 2} {
					if th == 2 && rows*cols < parallelMin {
						continue
					}
					withThreads(th, func() {
						what := fmt.Sprintf("%s threads=%d MatMulF16IL rows=%d cols=%d n=1", implName(asm), th, rows, cols)
						want, got := make([]float32, rows), unaligned(rng, rows, 1)
						MatVec(want, wf, x, rows, cols)
						MatMulF16IL(got, il, x, rows, cols, 1)
						checkSentinels(t, what, got)
						checkBits(t, what, got, want)
						checkMatVec(t, what, got, wf, x, rows, cols)
						if th == 1 && rows <= 17 {
							for r := 0; r < rows; r++ {
								one := []float32{0}
								MatMulF16IL(one, halfIL(w[r*cols:], 1, cols), x, 1, cols, 1)
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

// TestMatMulF16: the interleaved f16 product is bitwise MatMul on the
// widened weights and n one-token products.
func TestMatMulF16(t *testing.T) {
	rng := rand.New(rand.NewPCG(83, 84))
	type tc struct{ rows, cols, n int }
	var cases []tc
	for _, rows := range []int{1, 2, 3, 4, 5, 7, 8, 9, 13, 16} {
		for _, cols := range []int{0, 1, 2, 3, 5, 6, 7, 8, 9, 15, 16, 17, 31, 64, 67} {
			for _, n := range []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 13} {
				cases = append(cases, tc{rows, cols, n})
			}
		}
	}
	cases = append(cases, tc{13, 768, 70}, tc{9, 2048, 30}, tc{5, 3001, 40}, tc{301, 257, 7}, tc{768, 512, 16}, tc{130, 1001, 5})
	for _, c := range cases {
		w := randF16(rng, c.rows*c.cols)
		il, wf := halfIL(w, c.rows, c.cols), widenF16(w)
		x := unaligned(rng, c.n*c.cols, 2)
		for _, asm := range impls() {
			withImpl(asm, func() {
				for _, th := range []int{1, 2} {
					if th == 2 && c.rows*c.cols*c.n < parallelMin {
						continue
					}
					withThreads(th, func() {
						what := fmt.Sprintf("%s threads=%d MatMulF16IL rows=%d cols=%d n=%d", implName(asm), th, c.rows, c.cols, c.n)
						want, got := make([]float32, c.n*c.rows), unaligned(rng, c.n*c.rows, 3)
						MatMul(want, wf, x, c.rows, c.cols, c.n)
						MatMulF16IL(got, il, x, c.rows, c.cols, c.n)
						checkSentinels(t, what, got)
						checkBits(t, what, got, want)
						one := make([]float32, c.rows)
						for tok := 0; tok < c.n; tok++ {
							xt := x[tok*c.cols : (tok+1)*c.cols]
							checkMatVec(t, what, got[tok*c.rows:], wf, xt, c.rows, c.cols)
							MatMulF16IL(one, il, xt, c.rows, c.cols, 1)
							checkBits(t, fmt.Sprintf("%s token %d vs n=1", what, tok), got[tok*c.rows:(tok+1)*c.rows], one)
						}
					})
				}
			})
		}
	}
}

// TestPoolBitwiseF16: 1, 2 and 3 threads give the same bits, also after the
// workers park.
func TestPoolBitwiseF16(t *testing.T) {
	rng := rand.New(rand.NewPCG(85, 86))
	type tc struct{ rows, cols, n int }
	cases := []tc{{1000, 77, 1}, {777, 300, 1}, {768, 2048, 1}, {4096, 17, 1}, {301, 257, 7}, {768, 512, 16}}
	for _, asm := range impls() {
		withImpl(asm, func() {
			for _, c := range cases {
				w, x := halfIL(randF16(rng, c.rows*c.cols), c.rows, c.cols), randVec(rng, c.n*c.cols)
				want := make([]float32, c.rows*c.n)
				withThreads(1, func() { MatMulF16IL(want, w, x, c.rows, c.cols, c.n) })
				for _, threads := range []int{2, 3} {
					withThreads(threads, func() {
						for iter := 0; iter < 4; iter++ {
							if iter == 2 {
								time.Sleep(2 * spinFor)
							}
							got := make([]float32, c.rows*c.n)
							MatMulF16IL(got, w, x, c.rows, c.cols, c.n)
							for i := range got {
								if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
									t.Fatalf("%s %v threads=%d iter=%d: out[%d] = %v, 1 thread gave %v",
										implName(asm), c, threads, iter, i, got[i], want[i])
								}
							}
						}
					})
				}
			}
		})
	}
}

// TestF16Special: infinities and signed zeros in the weights give MatVec's
// bits on the widened weights.
func TestF16Special(t *testing.T) {
	rng := rand.New(rand.NewPCG(87, 88))
	rows, cols := 9, 29
	w := randF16(rng, rows*cols)
	w[3], w[cols+5], w[2*cols+28] = 0x7c00, 0xfc00, 0x8000 // +inf, -inf, -0
	for i := 3 * cols; i < 4*cols; i++ {
		w[i] = 0x8000 // a row of -0
	}
	il, wf := halfIL(w, rows, cols), widenF16(w)
	x := randVec(rng, cols)
	for _, asm := range impls() {
		withImpl(asm, func() {
			want, got := make([]float32, rows), make([]float32, rows)
			MatVec(want, wf, x, rows, cols)
			MatMulF16IL(got, il, x, rows, cols, 1)
			checkBits(t, implName(asm), got, want)
		})
	}
}

// TestF16Allocs: the products the models run do not allocate in assembly.
func TestF16Allocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(89, 90))
	rows, cols, n := 768, 2048, 4
	w, x, out := halfIL(randF16(rng, rows*cols), rows, cols), randVec(rng, n*cols), make([]float32, n*rows)
	for _, asm := range impls() {
		if asm == isaGo {
			// The Go kernels copy interleaved rows out into sync.Pool
			// buffers, one per range: a range can miss and allocate one.
			continue
		}
		withImpl(asm, func() {
			withThreads(2, func() {
				MatMulF16IL(out, w, x, rows, cols, 1) // start the workers
				if a := testing.AllocsPerRun(50, func() { MatMulF16IL(out, w, x, rows, cols, 1) }); a != 0 {
					t.Errorf("%s MatMulF16IL n=1 allocates %v times per call", implName(asm), a)
				}
				if a := testing.AllocsPerRun(10, func() { MatMulF16IL(out, w, x, rows, cols, n) }); a != 0 {
					t.Errorf("%s MatMulF16IL allocates %v times per call", implName(asm), a)
				}
			})
		})
	}
}

func TestF16ShortSlicesPanic(t *testing.T) {
	wl := HalfILLen(2, 3)
	for _, f := range []func(){
		func() { MatMulF16IL(make([]float32, 2), make([]uint16, wl-1), make([]float32, 3), 2, 3, 1) },
		func() { MatMulF16IL(make([]float32, 1), make([]uint16, wl), make([]float32, 3), 2, 3, 1) },
		func() { MatMulF16IL(make([]float32, 2), make([]uint16, wl), make([]float32, 2), 2, 3, 1) },
		func() { MatMulF16IL(make([]float32, 4), make([]uint16, wl), make([]float32, 5), 2, 3, 2) },
		func() { MatMulF16IL(make([]float32, 3), make([]uint16, wl), make([]float32, 6), 2, 3, 2) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("no panic on short slices")
				}
			}()
			f()
		}()
	}
}

// BenchmarkMatVecF16: as BenchmarkMatVec, bytes are the f16 weight bytes
// (half of MatVec's for the same shape), interleaved as the models keep
// them.
func BenchmarkMatVecF16(b *testing.B) {
	for _, sz := range [][2]int{{768, 2048}, {4096, 4096}} {
		rows, cols := sz[0], sz[1]
		rng := rand.New(rand.NewPCG(1, 1))
		w, x, out := halfIL(randF16(rng, rows*cols), rows, cols), randVec(rng, cols), make([]float32, rows)
		b.Run(fmt.Sprintf("%dx%d", rows, cols), func(b *testing.B) {
			benchImpls(b, func(b *testing.B) {
				benchThreads(b, func(b *testing.B) {
					b.SetBytes(int64(rows * cols * 2))
					for b.Loop() {
						MatMulF16IL(out, w, x, rows, cols, 1)
					}
					reportFlops(b, 2*float64(rows*cols))
				})
			})
		})
	}
}

// BenchmarkMatMulF16: BenchmarkMatMul's 64-token prefill with interleaved
// f16 weights.
func BenchmarkMatMulF16(b *testing.B) {
	const n = 64
	for _, sz := range [][2]int{{2048, 768}, {768, 2048}} {
		rows, cols := sz[0], sz[1]
		rng := rand.New(rand.NewPCG(2, 2))
		w, x, out := halfIL(randF16(rng, rows*cols), rows, cols), randVec(rng, n*cols), make([]float32, n*rows)
		b.Run(fmt.Sprintf("%dx%d", rows, cols), func(b *testing.B) {
			benchImpls(b, func(b *testing.B) {
				benchThreads(b, func(b *testing.B) {
					b.SetBytes(int64(rows * cols * 2))
					for b.Loop() {
						MatMulF16IL(out, w, x, rows, cols, n)
					}
					reportFlops(b, 2*float64(rows*cols*n))
				})
			})
		})
	}
}

// TestRoundF16: every kernel set rounds through f16 as gguf.F32ToF16 does,
// subnormals, ties and overflow included.
func TestRoundF16(t *testing.T) {
	rng := rand.New(rand.NewPCG(85, 86))
	src := make([]float32, 4099)
	for i := range src {
		src[i] = float32(math.Ldexp(rng.NormFloat64(), rng.IntN(50)-30))
	}
	src[0], src[1], src[2] = 70000, -1e-8, float32(math.Inf(-1))
	src[3] = 1 + 1.0/2048 // a tie: to even
	for _, l := range impls() {
		withImpl(l, func() {
			dst := make([]float32, len(src))
			RoundF16(dst, src)
			for i, v := range src {
				if want := f16ToF32(gguf.F32ToF16(v)); math.Float32bits(dst[i]) != math.Float32bits(want) {
					t.Fatalf("%s: %g rounds to %g, want %g", implName(l), v, dst[i], want)
				}
			}
		})
	}
}

// TestNarrowWidenF16: every kernel set stores a float as the half
// gguf.F32ToF16 gives (subnormals, ties, overflow; a NaN as a NaN) and
// widens every half exactly.
func TestNarrowWidenF16(t *testing.T) {
	rng := rand.New(rand.NewPCG(87, 88))
	src := make([]float32, 4099)
	for i := range src {
		src[i] = float32(math.Ldexp(rng.NormFloat64(), rng.IntN(50)-30))
	}
	src[0], src[1], src[2] = 70000, -1e-8, float32(math.Inf(-1))
	src[3], src[4] = 1+1.0/2048, float32(math.NaN())
	all := make([]uint16, 1<<16)
	for h := range all {
		all[h] = uint16(h)
	}
	for _, l := range impls() {
		withImpl(l, func() {
			h := make([]uint16, len(src))
			NarrowF16(h, src)
			for i, v := range src {
				want := gguf.F32ToF16(v)
				if v != v {
					if h[i]&0x7c00 != 0x7c00 || h[i]&0x3ff == 0 {
						t.Fatalf("%s: NaN narrows to %#04x", implName(l), h[i])
					}
					continue
				}
				if h[i] != want {
					t.Fatalf("%s: %g narrows to %#04x, want %#04x", implName(l), v, h[i], want)
				}
			}
			w := make([]float32, len(all))
			WidenF16(w, all)
			for i, v := range w {
				if want := f16ToF32(all[i]); math.Float32bits(v) != math.Float32bits(want) && !(v != v && want != want) {
					t.Fatalf("%s: %#04x widens to %#x, want %#x", implName(l), all[i], math.Float32bits(v), math.Float32bits(want))
				}
			}
		})
	}
}

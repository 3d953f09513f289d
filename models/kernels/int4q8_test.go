package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestInt4Q8: MatVecInt4Q8 on every kernel set gives the Go version's bits,
// is within the float error of the exact product of the dequantized weights
// and the dequantized activation, and MatMulInt4Q8 equals it per token.
func TestInt4Q8(t *testing.T) {
	rng := rand.New(rand.NewPCG(101, 102))
	for _, g := range []int{32, 64, 128} {
		for _, sh := range [][2]int{{1, 32}, {2, 32}, {3, 64}, {4, 96}, {5, 192}, {7, 160}, {9, 256}, {13, 320}, {301, 512}} {
			rows, cols := sh[0], sh[1]
			c := newL4Case(rng, &Int4Levels, "int4", rows, cols, g)
			for _, n := range []int{1, 3, 5, 6, 13} {
				x := randVec(rng, n*cols)
				xq, xd := make([]int8, n*cols), make([]float32, n*cols/32)
				QuantizeQ8_0(xq, xd, x)
				var want []float32
				for _, l := range impls() {
					withImpl(l, func() {
						for _, th := range []int{1, 2} {
							withThreads(th, func() {
								what := fmt.Sprintf("g%d %s threads=%d rows=%d cols=%d n=%d", g, implName(l), th, rows, cols, n)
								out := unaligned(rng, n*rows, 1)
								MatMulInt4Q8(out, c.packed, c.scale, g, xq, xd, rows, cols, n)
								checkSentinels(t, what, out)
								for tok := 0; tok < n; tok++ {
									one := unaligned(rng, rows, 2)
									MatVecInt4Q8(one, c.packed, c.scale, g, xq[tok*cols:], xd[tok*cols/32:], rows, cols)
									checkSentinels(t, what, one)
									checkBits(t, what+" MatMul vs MatVec", out[tok*rows:(tok+1)*rows], one)
								}
								if want == nil {
									want = out
									for tok := 0; tok < n; tok++ {
										for r := 0; r < rows; r++ {
											var ref, abs float64
											for k := 0; k < cols; k++ {
												p := float64(c.w[r*cols+k]) * float64(xq[tok*cols+k]) * float64(xd[tok*cols/32+k/32])
												ref += p
												abs += math.Abs(p)
											}
											if d := math.Abs(float64(out[tok*rows+r]) - ref); d > float64(cols/32+8)*16*u*abs+1e-30 {
												t.Fatalf("%s: token %d row %d: %v, want %v", what, tok, r, out[tok*rows+r], ref)
											}
										}
									}
								}
								checkBits(t, what+" vs go", out, want)
							})
						}
					})
				}
			}
		}
	}
}

func TestInt4Q8Panics(t *testing.T) {
	for name, f := range map[string]func(){
		"cols 48": func() {
			MatVecInt4Q8(make([]float32, 1), make([]byte, 24), make([]float32, 2), 32, make([]int8, 48), make([]float32, 2), 1, 48)
		},
		"group 256": func() {
			MatVecInt4Q8(make([]float32, 1), make([]byte, 16), make([]float32, 1), 256, make([]int8, 32), make([]float32, 1), 1, 32)
		},
		"short xd": func() {
			MatMulInt4Q8(make([]float32, 2), make([]byte, 16), make([]float32, 1), 32, make([]int8, 64), make([]float32, 1), 1, 32, 2)
		},
		"short scale": func() {
			MatVecInt4Q8(make([]float32, 2), make([]byte, 64), make([]float32, 3), 32, make([]int8, 64), make([]float32, 2), 2, 64)
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

func TestInt4Q8Allocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(103, 104))
	rows, cols, n := 1024, 768, 8
	c := newL4Case(rng, &Int4Levels, "int4", rows, cols, 64)
	xq, xd, out := make([]int8, n*cols), make([]float32, n*cols/32), make([]float32, n*rows)
	QuantizeQ8_0(xq, xd, randVec(rng, n*cols))
	withThreads(2, func() {
		for name, f := range map[string]func(){
			"MatVecInt4Q8": func() { MatVecInt4Q8(out, c.packed, c.scale, 64, xq, xd, rows, cols) },
			"MatMulInt4Q8": func() { MatMulInt4Q8(out, c.packed, c.scale, 64, xq, xd, rows, cols, n) },
		} {
			f()
			if a := testing.AllocsPerRun(10, f); a != 0 {
				t.Errorf("%s allocates %v times per call", name, a)
			}
		}
	})
}

// BenchmarkMatVecInt4Q8: the integer-dot int4 product against the
// float-activation one (BenchmarkMatVecLUT4) on the same sizes.
func BenchmarkMatVecInt4Q8(b *testing.B) {
	for _, sz := range [][2]int{{768, 2048}, {4096, 4096}} {
		rows, cols := sz[0], sz[1]
		rng := rand.New(rand.NewPCG(16, 16))
		c := newL4Case(rng, &Int4Levels, "int4-g32", rows, cols, 32)
		xq, xd, out := make([]int8, cols), make([]float32, cols/32), make([]float32, rows)
		QuantizeQ8_0(xq, xd, randVec(rng, cols))
		b.Run(fmt.Sprintf("int4-g32/%dx%d", rows, cols), func(b *testing.B) {
			benchISAs(b, func(b *testing.B) {
				b.SetBytes(int64(len(c.packed) + 4*len(c.scale)))
				for b.Loop() {
					MatVecInt4Q8(out, c.packed, c.scale, 32, xq, xd, rows, cols)
				}
				reportFlops(b, 2*float64(rows*cols))
			})
		})
	}
}

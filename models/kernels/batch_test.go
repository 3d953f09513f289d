package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// batchCase is one batched product and the MatVec it must equal per token.
type batchCase struct {
	name   string
	matMul func(out []float32, n int)
	matVec func(out []float32, t int)
}

// batchCases builds every batched product over rows×cols weights and n
// random tokens (cols a multiple of 256).
func batchCases(rng *rand.Rand, rows, cols, n int) []batchCase {
	q := randI8(rng, rows*cols, 1)
	scale := randScales(rng, rows)
	x := randVec(rng, n*cols)
	xq8, xs := make([]int8, n*cols), make([]float32, n)
	for t := 0; t < n; t++ {
		xs[t] = QuantizeI8(xq8[t*cols:(t+1)*cols], x[t*cols:(t+1)*cols])
	}
	cases := []batchCase{
		{"I8",
			func(out []float32, n int) { MatMulI8(out, q, scale, xq8, xs, rows, cols, n) },
			func(out []float32, t int) { MatVecI8(out, q, scale, xq8[t*cols:], xs[t], rows, cols) }},
	}
	for _, k := range blockKinds {
		w := randBlocks(rng, k, rows*cols/k.bs, false)
		xq, xd, xsum := quantAct(k, x)
		nb := cols / k.bs
		mm := func(out []float32, n int) { k.matMul(out, w, xq, xd, xsum, rows, cols, n) }
		cases = append(cases, batchCase{k.name, mm, func(out []float32, t int) {
			var xs []int16
			if xsum != nil {
				xs = xsum[t*cols/16:]
			}
			k.matVec(out, w, xq[t*cols:], xd[t*nb:], xs, rows, cols)
		}})
	}
	return cases
}

// TestMatMulInt8Bitwise: every batched product equals its MatVec per token,
// bitwise, single-threaded and split over the pool, asm and Go.
func TestMatMulInt8Bitwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(53, 54))
	for _, sz := range [][3]int{{1, 256, 1}, {3, 256, 2}, {5, 512, 3}, {13, 256, 7}, {4, 256, 6}, {37, 768, 5}, {9, 512, 13}, {301, 1024, 9}, {70, 512, 25}} {
		rows, cols, n := sz[0], sz[1], sz[2]
		cases := batchCases(rng, rows, cols, n)
		for _, asm := range impls() {
			withImpl(asm, func() {
				for _, th := range []int{1, 2} {
					withThreads(th, func() {
						for _, c := range cases {
							checkBatch(t, rng, c, rows, n, 3, fmt.Sprintf("%s %s threads=%d rows=%d cols=%d n=%d", c.name, implName(asm), th, rows, cols, n))
						}
					})
				}
			})
		}
	}
}

// TestMatMulKTokens: the K-quant batches for every token count 1-17 (the
// 8-token tiles, the 4-token tiles and the per-token rest in every mix),
// 3 super-blocks and a row count no tile divides, bitwise their MatVec.
func TestMatMulKTokens(t *testing.T) {
	rng := rand.New(rand.NewPCG(55, 56))
	const rows, cols = 7, 768
	for n := 1; n <= 17; n++ {
		cases := batchCases(rng, rows, cols, n)
		// Extreme operands: every scale, min and value at its largest, every
		// activation at -127 (the int16 and int32 sums at their bounds).
		x := make([]float32, n*cols)
		for i := range x {
			x[i] = 1
		}
		for _, k := range blockKinds {
			w := randBlocks(rng, k, rows*cols/k.bs, true)
			xq, xd, xsum := quantAct(k, x)
			mm := k.matMul
			cases = append(cases, batchCase{k.name + " extreme",
				func(out []float32, n int) { mm(out, w, xq, xd, xsum, rows, cols, n) },
				func(out []float32, t int) {
					k.matVec(out, w, xq[t*cols:], xd[t*cols/QK:], xsum[t*cols/16:], rows, cols)
				}})
		}
		for _, c := range cases {
			if c.name == "I8" {
				continue
			}
			for _, th := range []int{1, 2} {
				withThreads(th, func() {
					checkBatch(t, rng, c, rows, n, 1, fmt.Sprintf("%s %s threads=%d n=%d", c.name, ISA(), th, n))
				})
			}
		}
	}
}

func TestMatMulInt8Panics(t *testing.T) {
	for name, f := range map[string]func(){
		"MatMulI8 short xs": func() {
			MatMulI8(make([]float32, 4), make([]int8, 4), make([]float32, 2), make([]int8, 4), make([]float32, 1), 2, 2, 2)
		},
		"MatMulQ4_K short sums": func() {
			MatMulQ4_K(make([]float32, 2), make([]byte, Q4_KBytes), make([]int8, 512), make([]float32, 2), make([]int16, 16), 1, 256, 2)
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

func TestMatMulInt8Allocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(55, 56))
	rows, cols, n := 512, 512, 8
	cases := batchCases(rng, rows, cols, n)
	out := make([]float32, n*rows)
	withThreads(2, func() {
		for _, c := range cases {
			f := func() { c.matMul(out, n) }
			f()
			if a := testing.AllocsPerRun(10, f); a != 0 {
				t.Errorf("%s allocates %v times per call", c.name, a)
			}
		}
	})
}

// BenchmarkMatMulInt8: a 64-token prefill through 2048x2048 weights; bytes are
// weight bytes, so GB/s far above BenchmarkStream's is the tiles' reuse.
func BenchmarkMatMulInt8(b *testing.B) {
	const rows, cols, n = 2048, 2048, 64
	rng := rand.New(rand.NewPCG(7, 7))
	cases := batchCases(rng, rows, cols, n)
	out := make([]float32, n*rows)
	wbytes := map[string]int{"I8": rows * cols, "Q8_0": rows * cols * 34 / 32, "Q4_0": rows * cols / 32 * Q4_0Bytes, "Q8_0B": rows * cols / 32 * Q8_0Bytes, "Q5_0": rows * cols / 32 * Q5_0Bytes,
		"Q4_K": rows * cols / QK * Q4_KBytes, "Q5_K": rows * cols / QK * Q5_KBytes, "Q6_K": rows * cols / QK * Q6_KBytes,
		"Q2_K": rows * cols / QK * Q2_KBytes, "Q3_K": rows * cols / QK * Q3_KBytes}
	for _, c := range cases {
		b.Run(fmt.Sprintf("%s/%dx%dx%d", c.name, rows, cols, n), func(b *testing.B) {
			benchImpls(b, func(b *testing.B) {
				benchThreads(b, func(b *testing.B) {
					b.SetBytes(int64(wbytes[c.name]))
					for b.Loop() {
						c.matMul(out, n)
					}
					reportFlops(b, 2*float64(rows*cols*n))
				})
			})
		})
	}
}

// checkBatch runs c's batched product of n tokens into an output at an
// unaligned offset (off) and fails unless every token's rows are bitwise
// its MatVec's; what names the case.
func checkBatch(t *testing.T, rng *rand.Rand, c batchCase, rows, n, off int, what string) {
	t.Helper()
	out := unaligned(rng, n*rows, off)
	c.matMul(out, n)
	checkSentinels(t, c.name, out)
	one := make([]float32, rows)
	for tok := 0; tok < n; tok++ {
		c.matVec(one, tok)
		for r := range one {
			if math.Float32bits(one[r]) != math.Float32bits(out[tok*rows+r]) {
				t.Fatalf("%s token %d row %d: MatMul %v MatVec %v", what, tok, r, out[tok*rows+r], one[r])
			}
		}
	}
}

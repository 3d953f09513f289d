package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// TestIL4K: the interleaved Q4_K product against dotQ4KGo on the GGUF rows,
// bitwise, for every token count 1-17, row counts no group divides, several
// super-blocks, extreme operands, one and two threads, on every kernel set;
// and PackIL4K / IL4KRow round trips.
func TestIL4K(t *testing.T) {
	rng := rand.New(rand.NewPCG(57, 58))
	k := blockKinds[0]
	for k.name != "Q4_K" {
		t.Fatal("blockKinds[0] is not Q4_K")
	}
	for _, sz := range [][2]int{{1, 256}, {16, 512}, {23, 768}, {40, 256}, {33, 1024}} {
		rows, cols := sz[0], sz[1]
		nb := cols / QK
		for _, extreme := range []bool{false, true} {
			raw := randBlocks(rng, k, rows*nb, extreme)
			w := make([]byte, IL4KBytes(rows, cols))
			PackIL4K(w, raw, rows, cols)
			row := make([]byte, nb*Q4_KBytes)
			for r := 0; r < rows; r++ {
				IL4KRow(row, w, r, cols)
				if string(row) != string(raw[r*nb*Q4_KBytes:(r+1)*nb*Q4_KBytes]) {
					t.Fatalf("rows=%d cols=%d: row %d does not round-trip", rows, cols, r)
				}
			}
			for n := 1; n <= 17; n++ {
				x := randVec(rng, n*cols)
				if extreme {
					for i := range x {
						x[i] = 1
					}
				}
				xq, xd, xs := quantAct(k, x)
				for _, asm := range impls() {
					withImpl(asm, func() {
						for _, th := range []int{1, 2} {
							withThreads(th, func() {
								out := unaligned(rng, n*rows, 2)
								MatMulIL4K(out, w, xq, xd, xs, rows, cols, n)
								checkSentinels(t, "MatMulIL4K", out)
								for tok := 0; tok < n; tok++ {
									for r := 0; r < rows; r++ {
										want := dotQ4KGo(raw[r*nb*Q4_KBytes:(r+1)*nb*Q4_KBytes], xq[tok*cols:(tok+1)*cols], xd[tok*nb:(tok+1)*nb], xs[tok*cols/16:(tok+1)*cols/16])
										if got := out[tok*rows+r]; math.Float32bits(got) != math.Float32bits(want) {
											t.Fatalf("%s threads=%d rows=%d cols=%d n=%d extreme=%v: token %d row %d = %v, want %v",
												implName(asm), th, rows, cols, n, extreme, tok, r, got, want)
										}
									}
								}
							})
						}
					})
				}
			}
		}
	}
}

// BenchmarkIL4K: the interleaved Q4_K product against MatMulQ4_K's row
// tiles on the same weights, at 1 (decode) and 64 tokens; bytes are weight
// bytes.
func BenchmarkIL4K(b *testing.B) {
	const rows, cols = 2048, 2048
	rng := rand.New(rand.NewPCG(7, 7))
	k := blockKinds[0]
	raw := randBlocks(rng, k, rows*cols/QK, false)
	w := make([]byte, IL4KBytes(rows, cols))
	PackIL4K(w, raw, rows, cols)
	for _, n := range []int{1, 8, 64} {
		xq, xd, xs := quantAct(k, randVec(rng, n*cols))
		out := make([]float32, n*rows)
		b.Run(fmt.Sprintf("n%d", n), func(b *testing.B) {
			benchThreads(b, func(b *testing.B) {
				b.Run("il", func(b *testing.B) {
					b.SetBytes(int64(len(raw)))
					for b.Loop() {
						MatMulIL4K(out, w, xq, xd, xs, rows, cols, n)
					}
					reportFlops(b, 2*float64(rows*cols*n))
				})
				b.Run("rows", func(b *testing.B) {
					b.SetBytes(int64(len(raw)))
					for b.Loop() {
						if n == 1 {
							MatVecQ4_K(out, raw, xq, xd, xs, rows, cols)
						} else {
							MatMulQ4_K(out, raw, xq, xd, xs, rows, cols, n)
						}
					}
					reportFlops(b, 2*float64(rows*cols*n))
				})
			})
		})
	}
}

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// ilkFormat is one interleaved K-quant as the tests see it.
type ilkFormat struct {
	name   string
	bytes  func(rows, cols int) int
	pack   func(dst, raw []byte, rows, cols int)
	row    func(dst, w []byte, r, cols int)
	matMul func(out []float32, w []byte, xq []int8, xd []float32, xsums []int16, rows, cols, n int)
	dot    func(row []byte, xq []int8, xd []float32, xsums []int16) float32
}

var ilkFormats = []ilkFormat{
	{"Q4_K", IL4KBytes, PackIL4K, IL4KRow, MatMulIL4K, dotQ4KGo},
	{"Q6_K", IL6KBytes, PackIL6K, IL6KRow, MatMulIL6K, dotQ6KGo},
}

// TestILK: the interleaved Q4_K and Q6_K products against dotQ4KGo and
// dotQ6KGo on the GGUF rows, bitwise, for every token count 1-17, row counts
// no group divides, several super-blocks, extreme operands, one and two
// threads, on every kernel set; and the pack / row round trips.
func TestILK(t *testing.T) {
	if !ilkHasAsm || hostISA < isaAVX512VNNI {
		t.Logf("no AVX-512 VNNI here (%s): only the Go path is tested", isaNames[hostISA])
	}
	for _, f := range ilkFormats {
		t.Run(f.name, func(t *testing.T) { testILK(t, f) })
	}
}

func testILK(t *testing.T, f ilkFormat) {
	rng := rand.New(rand.NewPCG(57, 58))
	var k blockKind
	for _, bk := range blockKinds {
		if bk.name == f.name {
			k = bk
		}
	}
	for _, sz := range [][2]int{{1, 256}, {16, 512}, {23, 768}, {40, 256}, {33, 1024}} {
		rows, cols := sz[0], sz[1]
		nb := cols / QK
		for _, extreme := range []bool{false, true} {
			raw := randBlocks(rng, k, rows*nb, extreme)
			w := make([]byte, f.bytes(rows, cols))
			f.pack(w, raw, rows, cols)
			row := make([]byte, nb*k.bb)
			for r := 0; r < rows; r++ {
				f.row(row, w, r, cols)
				if string(row) != string(raw[r*nb*k.bb:(r+1)*nb*k.bb]) {
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
								f.matMul(out, w, xq, xd, xs, rows, cols, n)
								checkSentinels(t, f.name, out)
								for tok := 0; tok < n; tok++ {
									for r := 0; r < rows; r++ {
										want := f.dot(raw[r*nb*k.bb:(r+1)*nb*k.bb], xq[tok*cols:(tok+1)*cols], xd[tok*nb:(tok+1)*nb], xs[tok*cols/16:(tok+1)*cols/16])
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

// BenchmarkILK: the interleaved K-quant products against the row
// tiles on the same weights, at 1 (decode) and 64 tokens; bytes are weight
// bytes.
func BenchmarkILK(b *testing.B) {
	for _, f := range ilkFormats {
		b.Run(f.name, func(b *testing.B) { benchILK(b, f) })
	}
}

func benchILK(b *testing.B, f ilkFormat) {
	const rows, cols = 2048, 2048
	rng := rand.New(rand.NewPCG(7, 7))
	var k blockKind
	for _, bk := range blockKinds {
		if bk.name == f.name {
			k = bk
		}
	}
	raw := randBlocks(rng, k, rows*cols/QK, false)
	w := make([]byte, f.bytes(rows, cols))
	f.pack(w, raw, rows, cols)
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

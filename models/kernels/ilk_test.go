package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// ilkKinds are the interleaved kinds with their test block kind.
func ilkKinds() (ks []ILKKind, bk []blockKind) {
	for k, f := range ilkFormats {
		for _, b := range blockKinds {
			if b.typ == f.typ {
				ks, bk = append(ks, ILKKind(k)), append(bk, b)
			}
		}
	}
	return
}

// ilkRows: weights for testILK: random, or as large as the format allows
// (extreme > 0; IQ4_XS also with every level at 113, ls-32 at 31).
func ilkRows(rng *rand.Rand, k ILKKind, bk blockKind, n, extreme int) []byte {
	raw := randBlocks(rng, bk, n, extreme > 0)
	if k == IL4XS && extreme == 3 {
		for b := 0; b < n; b++ {
			for i := 2; i < bk.bb; i++ {
				raw[b*bk.bb+i] = 0xff
			}
		}
	}
	return raw
}

// TestILK: the interleaved products against the formats' Go row products
// (dotQ4KGo, ...) on the GGUF rows, bitwise, for every token count 1-17,
// row counts no group divides, several super-blocks, extreme operands (every
// activation at 127 or -127), one and two threads, on every kernel set; and
// the pack / row round trips.
func TestILK(t *testing.T) {
	if !ilkHasAsm || hostISA < isaAVX512VNNI {
		t.Logf("no AVX-512 VNNI here (%s): only the Go path is tested", isaNames[hostISA])
	}
	ks, bk := ilkKinds()
	for i, k := range ks {
		t.Run(bk[i].name, func(t *testing.T) { testILK(t, k, bk[i]) })
	}
}

func testILK(t *testing.T, k ILKKind, bk blockKind) {
	rng := rand.New(rand.NewPCG(57, 58))
	f := &ilkFormats[k]
	for _, sz := range [][2]int{{1, 256}, {16, 512}, {23, 768}, {40, 256}, {33, 1024}} {
		rows, cols := sz[0], sz[1]
		nb := cols / QK
		for extreme := range 4 {
			raw := ilkRows(rng, k, bk, rows*nb, extreme)
			w := make([]byte, ILKBytes(k, rows, cols))
			PackILK(k, w, raw, rows, cols)
			row := make([]byte, nb*f.bb)
			for r := 0; r < rows; r++ {
				ILKRow(k, row, w, r, cols)
				if string(row) != string(raw[r*nb*f.bb:(r+1)*nb*f.bb]) {
					t.Fatalf("rows=%d cols=%d: row %d does not round-trip", rows, cols, r)
				}
			}
			for n := 1; n <= 17; n++ {
				x := randVec(rng, n*cols)
				if extreme > 0 {
					for i := range x {
						x[i] = float32(1 - 2*(extreme&1)) // -1 for 1 and 3
					}
				}
				xq, xd, xs := quantAct(bk, x)
				for _, asm := range impls() {
					withImpl(asm, func() {
						for _, th := range []int{1, 2} {
							withThreads(th, func() {
								out := unaligned(rng, n*rows, 2)
								MatMulILK(k, out, w, xq, xd, xs, rows, cols, n)
								checkSentinels(t, bk.name, out)
								for tok := 0; tok < n; tok++ {
									for r := 0; r < rows; r++ {
										want := f.dot(raw[r*nb*f.bb:(r+1)*nb*f.bb], xq[tok*cols:(tok+1)*cols], xd[tok*nb:(tok+1)*nb], xs[tok*cols/16:(tok+1)*cols/16])
										if got := out[tok*rows+r]; math.Float32bits(got) != math.Float32bits(want) {
											t.Fatalf("%s threads=%d rows=%d cols=%d n=%d extreme=%d: token %d row %d = %v, want %v",
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

// BenchmarkILK: the interleaved products against the row tiles on the same
// weights, at 1 (decode), 8 and 64 tokens; bytes are weight bytes.
func BenchmarkILK(b *testing.B) {
	ks, bk := ilkKinds()
	for i, k := range ks {
		b.Run(bk[i].name, func(b *testing.B) { benchILK(b, k, bk[i]) })
	}
}

// BenchmarkILKMemory: one token through a 65536×2048 matrix of each kind,
// 72-224 MB, past the L3 as a decode step's weights are: the rate at
// which a tile streams its weights from memory.
//
//	go test -run '^$' -bench ILKMemory -benchtime 30x ./models/kernels/
func BenchmarkILKMemory(b *testing.B) {
	const rows, cols = 65536, 2048
	ks, bk := ilkKinds()
	for i, k := range ks {
		rng := rand.New(rand.NewPCG(7, 7))
		raw := randBlocks(rng, bk[i], rows*cols/QK, false)
		w := make([]byte, ILKBytes(k, rows, cols))
		PackILK(k, w, raw, rows, cols)
		xq, xd, xs := quantAct(bk[i], randVec(rng, cols))
		out := make([]float32, rows)
		b.Run(bk[i].name, func(b *testing.B) {
			withThreads(1, func() {
				b.SetBytes(int64(len(raw)))
				for b.Loop() {
					MatMulILK(k, out, w, xq, xd, xs, rows, cols, 1)
				}
			})
		})
	}
}

func benchILK(b *testing.B, k ILKKind, bk blockKind) {
	const rows, cols = 2048, 2048
	rng := rand.New(rand.NewPCG(7, 7))
	raw := randBlocks(rng, bk, rows*cols/QK, false)
	w := make([]byte, ILKBytes(k, rows, cols))
	PackILK(k, w, raw, rows, cols)
	mm := bk.matMul
	for _, n := range []int{1, 8, 64} {
		xq, xd, xs := quantAct(bk, randVec(rng, n*cols))
		out := make([]float32, n*rows)
		b.Run(fmt.Sprintf("n%d", n), func(b *testing.B) {
			benchThreads(b, func(b *testing.B) {
				b.Run("il", func(b *testing.B) {
					b.SetBytes(int64(len(raw)))
					for b.Loop() {
						MatMulILK(k, out, w, xq, xd, xs, rows, cols, n)
					}
					reportFlops(b, 2*float64(rows*cols*n))
				})
				b.Run("rows", func(b *testing.B) {
					b.SetBytes(int64(len(raw)))
					for b.Loop() {
						if n == 1 {
							bk.matVec(out, raw, xq, xd, xs, rows, cols)
						} else {
							mm(out, raw, xq, xd, xs, rows, cols, n)
						}
					}
					reportFlops(b, 2*float64(rows*cols*n))
				})
			})
		})
	}
}

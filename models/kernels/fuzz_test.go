package kernels

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// FuzzMatMul checks shapes and alignments the table tests miss: every
// implementation against float64, MatMul against MatVec bitwise, and the
// int8 product against its exact integer value.
func FuzzMatMul(f *testing.F) {
	f.Add(uint8(3), uint8(9), uint8(4), uint8(1), uint64(1))
	f.Add(uint8(17), uint8(70), uint8(7), uint8(3), uint64(2))
	f.Fuzz(func(t *testing.T, rows8, cols8, n8, off8 uint8, seed uint64) {
		rows, cols, n, off := int(rows8%40), int(cols8), int(n8%12), int(off8%8)
		rng := rand.New(rand.NewPCG(seed, 7))
		w, x := unaligned(rng, rows*cols, off), unaligned(rng, n*cols, 7-off)
		for _, asm := range impls() {
			withImpl(asm, func() {
				out := unaligned(rng, n*rows, off/2)
				MatMul(out, w, x, rows, cols, n)
				checkSentinels(t, "MatMul", out)
				one := make([]float32, rows)
				for tok := 0; tok < n; tok++ {
					xt := x[tok*cols : (tok+1)*cols]
					checkMatVec(t, implName(asm)+" MatMul", out[tok*rows:], w, xt, rows, cols)
					MatVec(one, w, xt, rows, cols)
					for r := range one {
						if math.Float32bits(one[r]) != math.Float32bits(out[tok*rows+r]) {
							t.Fatalf("%s rows=%d cols=%d n=%d token %d row %d: MatMul %v MatVec %v",
								implName(asm), rows, cols, n, tok, r, out[tok*rows+r], one[r])
						}
					}
				}
				q, xq := randI8(rng, rows*cols, off), randI8(rng, cols, 7-off)
				sc := randScales(rng, rows)
				MatVecI8(one, q, sc, xq, 0.5, rows, cols)
				for r := range one {
					var s int64
					for c := 0; c < cols; c++ {
						s += int64(q[r*cols+c]) * int64(xq[c])
					}
					if want := float64(s) * float64(sc[r]*0.5); math.Abs(float64(one[r])-want) > 3*u*math.Abs(want) {
						t.Fatalf("%s MatVecI8 rows=%d cols=%d row %d: %v want %v", implName(asm), rows, cols, r, one[r], want)
					}
				}
			})
		}
	})
}

// FuzzMatMulBF16: on every implementation, MatMulBF16IL gives bitwise
// MatMul and (one token) MatVec on the widened weights, for shapes and
// alignments the table tests miss, with the weight bits a and b (infinities,
// NaNs, subnormals) sprinkled among ordinary ones.
func FuzzMatMulBF16(f *testing.F) {
	f.Add(uint8(3), uint8(9), uint8(4), uint8(1), uint16(0x7f80), uint16(0x8001), uint64(1))
	f.Add(uint8(17), uint8(70), uint8(7), uint8(2), uint16(0xffc1), uint16(0x0000), uint64(2))
	f.Fuzz(func(t *testing.T, rows8, cols8, n8, off8 uint8, a, b uint16, seed uint64) {
		rows, cols, n, off := int(rows8%24), int(cols8), int(n8%10), int(off8%4)
		rng := rand.New(rand.NewPCG(seed, 11))
		w := randBF16(rng, rows*cols+off)[off:]
		for i := range w {
			switch rng.IntN(64) {
			case 0:
				w[i] = a
			case 1:
				w[i] = b
			}
		}
		il, wf := halfIL(w, rows, cols), widenBF16(w)
		x := unaligned(rng, n*cols, 3-off)
		for _, asm := range impls() {
			withImpl(asm, func() {
				want, got := make([]float32, n*rows), unaligned(rng, n*rows, off)
				MatMul(want, wf, x, rows, cols, n)
				MatMulBF16IL(got, il, x, rows, cols, n)
				checkSentinels(t, "MatMulBF16IL", got)
				checkBits(t, implName(asm)+" MatMulBF16IL", got, want)
				if n > 0 {
					MatVec(want[:rows], wf, x, rows, cols)
					MatMulBF16IL(got[:rows], il, x, rows, cols, 1)
					checkBits(t, implName(asm)+" MatMulBF16IL n=1", got[:rows], want[:rows])
				}
			})
		}
	})
}

// FuzzQuantizeQ8_K: the assembly against quantQ8KGo bitwise on blocks of
// arbitrary float bits (NaN, ±Inf and subnormals included), a few bit
// patterns repeated over the block so that ties of |x| happen.
func FuzzQuantizeQ8_K(f *testing.F) {
	f.Add(uint32(0x3f800000), uint32(0xbf800000), uint32(0x7fc00000), uint8(3), uint64(1))
	f.Add(uint32(1), uint32(0x80000002), uint32(0x7f800000), uint8(250), uint64(2))
	f.Fuzz(func(t *testing.T, a, b, c uint32, every uint8, seed uint64) {
		if !useAsm {
			t.Skip("no assembly here")
		}
		rng := rand.New(rand.NewPCG(seed, 9))
		x := make([]float32, 2*QK)
		for i := range x {
			switch k := rng.IntN(int(every) + 3); k {
			case 0, 1, 2:
				x[i] = math.Float32frombits([]uint32{a, b, c}[k])
			default:
				x[i] = float32(rng.NormFloat64()) * math.Float32frombits(a&0x7fffffff)
			}
		}
		q1, d1, s1 := make([]int8, len(x)), make([]float32, 2), make([]int16, len(x)/16)
		q2, d2, s2 := make([]int8, len(x)), make([]float32, 2), make([]int16, len(x)/16)
		quantQ8KGo(q1, d1, s1, x)
		quantQ8KAsm(q2, d2, s2, x)
		for i := range 2 {
			if math.Float32bits(d1[i]) != math.Float32bits(d2[i]) {
				t.Fatalf("d[%d] = %v, Go %v", i, d2[i], d1[i])
			}
		}
		for i := range q1 {
			if q1[i] != q2[i] {
				t.Fatalf("q[%d] = %d, Go %d (x %v)", i, q2[i], q1[i], x[i])
			}
		}
		for i := range s1 {
			if s1[i] != s2[i] {
				t.Fatalf("sums[%d] = %d, Go %d", i, s2[i], s1[i])
			}
		}
	})
}

// FuzzKBlocks: the K-quant block products (raw layouts) at every kernel set
// against the Go dot bitwise, tokens 1-12 (tiles and the rest) as MatMul
// and MatVec, on random blocks (or every field at its bound).
func FuzzKBlocks(f *testing.F) {
	f.Add(uint8(5), uint8(2), uint8(9), false, uint64(1))
	f.Add(uint8(3), uint8(1), uint8(4), true, uint64(2))
	f.Fuzz(func(t *testing.T, rows8, nb8, n8 uint8, extreme bool, seed uint64) {
		rows, nb, n := int(rows8%9)+1, int(nb8%3)+1, int(n8%12)+1
		cols := nb * QK
		rng := rand.New(rand.NewPCG(seed, 13))
		for _, k := range blockKinds {
			w := randBlocks(rng, k, rows*nb, extreme)
			xq, xd, xs := quantAct(k, randVec(rng, n*cols))
			want := make([]float32, n*rows)
			withImpl(isaGo, func() { k.matMul(want, w, xq, xd, xs, rows, cols, n) })
			for _, l := range impls() {
				withImpl(l, func() {
					out, one := make([]float32, n*rows), make([]float32, rows)
					k.matMul(out, w, xq, xd, xs, rows, cols, n)
					for tok := 0; tok < n; tok++ {
						k.matVec(one, w, xq[tok*cols:], xd[tok*nb:], xs[tok*cols/16:], rows, cols)
						for r := range one {
							g, v := math.Float32bits(want[tok*rows+r]), math.Float32bits(out[tok*rows+r])
							if v != g || math.Float32bits(one[r]) != g {
								t.Fatalf("%s %s rows=%d cols=%d n=%d: token %d row %d: MatMul %v MatVec %v, Go %v",
									k.name, implName(l), rows, cols, n, tok, r, out[tok*rows+r], one[r], want[tok*rows+r])
							}
						}
					}
				})
			}
		}
	})
}

// FuzzILK: the interleaved K-quant products on shapes and token counts the
// table tests miss, bitwise the Go row product of each (row, token) on the
// GGUF rows. Up to 40 rows (two groups of ILRows and a part) and 17 tokens
// (two tiles of 8 and one): every remainder, and the pool's split, at
// about 0.7 of the work per input that 50 rows and 20 tokens took (the Go
// row products are most of it).
func FuzzILK(f *testing.F) {
	f.Add(uint8(17), uint8(2), uint8(9), false, uint64(1))
	f.Add(uint8(5), uint8(1), uint8(16), true, uint64(2))
	f.Fuzz(func(t *testing.T, rows8, nb8, n8 uint8, extreme bool, seed uint64) {
		rows, nb, n := int(rows8%40)+1, int(nb8%4)+1, int(n8%17)+1
		cols := nb * QK
		rng := rand.New(rand.NewPCG(seed, 11))
		ks, bks := ilkKinds()
		for i, k := range ks {
			bk, fm := bks[i], &ilkFormats[k]
			raw := randBlocks(rng, bk, rows*nb, extreme)
			w := make([]byte, ILKBytes(k, rows, cols))
			PackILK(k, w, raw, rows, cols)
			xq, xd, xs := quantAct(bk, randVec(rng, n*cols))
			out := make([]float32, n*rows)
			MatMulILK(k, out, w, xq, xd, xs, rows, cols, n)
			for tok := 0; tok < n; tok++ {
				for r := 0; r < rows; r++ {
					want := fm.dot(raw[r*nb*fm.bb:(r+1)*nb*fm.bb], xq[tok*cols:(tok+1)*cols], xd[tok*nb:(tok+1)*nb], xs[tok*cols/16:(tok+1)*cols/16])
					if math.Float32bits(out[tok*rows+r]) != math.Float32bits(want) {
						t.Fatalf("%s rows=%d cols=%d n=%d: token %d row %d = %v, want %v", bk.name, rows, cols, n, tok, r, out[tok*rows+r], want)
					}
				}
			}
		}
	})
}

// FuzzQuantizeScaledI8: any float32 bits (NaNs, infinities, subnormals) at
// any length give the plain reference's codes and scale on every kernel
// set.
func FuzzQuantizeScaledI8(f *testing.F) {
	f.Add([]byte{0, 0, 0x80, 0x7f, 0, 0, 0, 0x3f}, uint8(0))
	f.Add(make([]byte, 4*33), uint8(3))
	f.Fuzz(func(t *testing.T, raw []byte, fill uint8) {
		x := make([]float32, len(raw)/4+int(fill%40))
		for i := range x {
			if 4*i+4 <= len(raw) {
				x[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			} else {
				x[i] = float32(i%9) - 4
			}
		}
		want, ws := refQuantizeScaledI8(x)
		for _, l := range impls() {
			withImpl(l, func() {
				q := make([]int8, len(x))
				s := QuantizeScaledI8(q, x)
				if math.Float32bits(s) != math.Float32bits(ws) || !slices.Equal(q, want) {
					t.Fatalf("%s: scale %v codes %v, want %v %v (x %v)", implName(l), s, q, ws, want, x)
				}
			})
		}
	})
}

package kernels

import (
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"testing"

	"chat/models/gguf"
)

// ilCase is one interleaved matrix and its float weights.
type ilCase struct {
	name       string
	k          ILKind
	w          []byte
	gs         []float32
	g          int
	deq        []float32 // the weights as the source format dequantizes them
	rows, cols int
}

func newILCase(t testing.TB, rng *rand.Rand, name string, rows, cols int) ilCase {
	t.Helper()
	wf := randVec(rng, rows*cols)
	c := ilCase{name: name, rows: rows, cols: cols, deq: make([]float32, rows*cols)}
	fromGGUF := func(typ gguf.Type, k ILKind, pack func(dst, raw []byte, rows, cols int)) {
		raw, err := gguf.Quantize(typ, wf)
		if err != nil {
			t.Fatal(err)
		}
		if err := gguf.Dequantize(typ, raw, c.deq); err != nil {
			t.Fatal(err)
		}
		c.k, c.w = k, make([]byte, ILBytes(k, rows, cols))
		pack(c.w, raw, rows, cols)
	}
	switch name {
	case "q8_0":
		fromGGUF(gguf.TypeQ8_0, IL8, PackILQ8_0)
	case "q5_0":
		fromGGUF(gguf.TypeQ5_0, IL8, PackILQ5_0)
	case "q4_0":
		fromGGUF(gguf.TypeQ4_0, IL4, PackILQ4_0)
	case "iq4_nl":
		fromGGUF(gguf.TypeIQ4_NL, IL4NL, PackILIQ4_NL)
	case "q4_1":
		fromGGUF(gguf.TypeQ4_1, IL4M, PackILQ4_1)
	case "q5_1":
		fromGGUF(gguf.TypeQ5_1, IL8M, PackILQ5_1)
	default: // int4-gG
		var g int
		fmt.Sscanf(name, "int4-g%d", &g)
		l := newL4Case(rng, &Int4Levels, name, rows, cols, g)
		c.k, c.g = IL4G, g
		c.w, c.gs = make([]byte, ILBytes(IL4G, rows, cols)), make([]float32, ILScales(rows, cols, g))
		PackILInt4(c.w, c.gs, l.packed, l.scale, g, rows, cols)
		rb, ng := (cols+1)/2, (cols+g-1)/g
		for r := 0; r < rows; r++ {
			DequantizeLUT4(c.deq[r*cols:], l.packed[r*rb:], l.scale[r*ng:], &Int4Levels, g, cols)
		}
	}
	return c
}

var ilNames = []string{"q8_0", "q5_0", "q4_0", "iq4_nl", "q4_1", "q5_1", "int4-g32", "int4-g64", "int4-g128"}

// TestILRow: the packed weights dequantize to the source format's values.
func TestILRow(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, name := range ilNames {
		for _, rows := range []int{1, 15, 16, 17, 40} {
			c := newILCase(t, rng, name, rows, 224)
			got := make([]float32, c.cols)
			for r := 0; r < rows; r++ {
				ILRow(c.k, got, c.w, c.gs, c.g, r, c.cols)
				for i, v := range got {
					if v != c.deq[r*c.cols+i] {
						t.Fatalf("%s rows=%d: row %d value %d = %v, want %v", name, rows, r, i, v, c.deq[r*c.cols+i])
					}
				}
			}
			for _, sl := range [][2]int{{0, rows}, {rows / 3, rows}, {rows / 2, rows/2 + 1}} {
				w, gs := ILRepack(c.k, c.w, c.gs, c.g, rows, c.cols, sl[0], sl[1])
				for r := sl[0]; r < sl[1]; r++ {
					ILRow(c.k, got, w, gs, c.g, r-sl[0], c.cols)
					for i, v := range got {
						if v != c.deq[r*c.cols+i] {
							t.Fatalf("%s rows [%d, %d) of %d: row %d value %d = %v, want %v", name, sl[0], sl[1], rows, r, i, v, c.deq[r*c.cols+i])
						}
					}
				}
			}
		}
	}
}

// ilRef is the product in float64 on the dequantized weights and
// activations, for a sanity check of the order-defined results.
func ilRef(c ilCase, a *ILAct, r, t int) (float64, float64) {
	var s, abs float64
	for b := 0; b < c.cols/Q8Block; b++ {
		xq, xd, _ := a.token(t, b)
		for j, q := range xq {
			p := float64(c.deq[r*c.cols+32*b+j]) * float64(q) * float64(xd)
			s += p
			abs += math.Abs(p)
		}
	}
	return s, abs
}

// TestMatMulIL: every kernel set, token count and thread count gives the
// Go reference's bits, a batch gives each token what it gets alone, and the
// result is the product of the dequantized operands to rounding.
func TestMatMulIL(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	levels := isaLevels(t)
	type shape struct{ rows, cols int }
	for _, name := range ilNames {
		for _, sh := range []shape{{1, 128}, {16, 96}, {17, 256}, {33, 416}, {100, 768}} {
			c := newILCase(t, rng, name, sh.rows, sh.cols)
			ns := []int{1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 17}
			if hasMin(c.k) { // new tiles: every token count
				ns = ns[:0]
				for n := 1; n <= 17; n++ {
					ns = append(ns, n)
				}
			}
			for _, n := range ns {
				x := randVec(rng, n*c.cols)
				var a ILAct
				a.Quantize(x, n, c.cols, c.k)
				want := make([]float32, n*c.rows)
				p := ilProd{k: c.k, w: c.w, gs: c.gs, g: c.g, a: &a, out: want, rows: c.rows, cols: c.cols}
				p.runGo(0, (c.rows+ILRows-1)/ILRows)
				for r := 0; r < c.rows; r++ {
					for tok := 0; tok < n; tok++ {
						ref, abs := ilRef(c, &a, r, tok)
						if d := math.Abs(float64(want[tok*c.rows+r]) - ref); d > 1e-5*abs+1e-30 {
							t.Fatalf("%s %dx%d n=%d: row %d token %d = %v, float64 %v", name, c.rows, c.cols, n, r, tok, want[tok*c.rows+r], ref)
						}
					}
				}
				for _, l := range levels {
					for _, th := range []int{1, 2} {
						// One thread with Cached's tiles, two with Stream's
						// (its non-temporal 1- and 2-token tiles).
						reuse := Cached
						if th == 2 {
							reuse = Stream
						}
						withImpl(l, func() {
							withThreads(th, func() {
								what := fmt.Sprintf("%s %s threads=%d reuse=%d %dx%d n=%d", implName(l), name, th, reuse, c.rows, c.cols, n)
								got := unaligned(rng, n*c.rows, 1)
								MatMulIL(c.k, got, c.w, c.gs, c.g, &a, c.rows, c.cols, reuse)
								checkSentinels(t, what, got)
								for i := range want {
									if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
										t.Fatalf("%s: out[%d] = %v, Go reference %v", what, i, got[i], want[i])
									}
								}
								// One token alone.
								tok := n - 1
								var one ILAct
								one.Quantize(x[tok*c.cols:], 1, c.cols, c.k)
								o := make([]float32, c.rows)
								MatMulIL(c.k, o, c.w, c.gs, c.g, &one, c.rows, c.cols, reuse)
								for r := range o {
									if math.Float32bits(o[r]) != math.Float32bits(want[tok*c.rows+r]) {
										t.Fatalf("%s: token %d alone row %d = %v, batched %v", what, tok, r, o[r], want[tok*c.rows+r])
									}
								}
							})
						})
					}
				}
			}
		}
	}
}

func TestMatMulILAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	c := newILCase(t, rng, "q8_0", 256, 768)
	x := randVec(rng, 8*c.cols)
	out := make([]float32, 8*c.rows)
	var a ILAct
	withThreads(2, func() {
		a.Quantize(x, 8, c.cols, c.k)
		MatMulIL(c.k, out, c.w, nil, 0, &a, c.rows, c.cols, Cached)
		if n := testing.AllocsPerRun(20, func() {
			a.Quantize(x, 8, c.cols, c.k)
			MatMulIL(c.k, out, c.w, nil, 0, &a, c.rows, c.cols, Cached)
		}); n != 0 {
			t.Errorf("%v allocations per product", n)
		}
	})
}

// TestILActQuantize: the assembly quantizer writes the Go version's bytes,
// for ordinary values, ties, zero blocks and scales that are subnormal in
// f16.
func TestILActQuantize(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const cols = 256
	for _, n := range []int{1, 3, 8, 11} {
		x := randVec(rng, n*cols)
		for i := range x {
			switch rng.IntN(8) {
			case 0:
				x[i] *= 1e-6
			case 1:
				x[i] = float32(rng.IntN(255) - 127) // ties at scale 1
			case 2:
				x[i] *= 1e4
			}
		}
		clear(x[32:64])            // a zero block
		for i := 64; i < 96; i++ { // a block whose f16 scale is subnormal
			x[i] = float32(rng.Float64()-0.5) * 1e-5
		}
		for _, k := range []ILKind{IL8, IL4, IL4G, IL4NL, IL4M, IL8M} {
			var want ILAct
			withImpl(isaGo, func() { want.Quantize(x, n, cols, k) })
			for _, l := range impls()[1:] {
				var got ILAct
				withImpl(l, func() { got.Quantize(x, n, cols, k) })
				for i := range want.b {
					if got.b[i] != want.b[i] {
						t.Fatalf("%s n=%d format %d: byte %d = %#x, Go %#x", implName(l), n, k, i, got.b[i], want.b[i])
					}
				}
			}
		}
	}
}

// TestILExtremes: Q8_0 weights of -128 (a GGUF file may hold them), Q4_0
// nibbles of 0 and 15 (values -8 and 7), IQ4_NL's levels -127 and 113, Q4_1
// and Q5_1's largest q (15, 31) and smallest with a min, and
// activations at ±127 saturate nothing (the AVX2 Q4_0 tile adds a block's
// byte products in int16, IQ4_NL's level+128 would saturate VPMADDUBSW): every
// kernel set gives the Go reference's bits, and those are the exact sums
// scaled.
func TestILExtremes(t *testing.T) {
	const rows, cols = 17, 256
	nb := cols / Q8Block
	levels := isaLevels(t)
	for _, tc := range []struct {
		name  string
		k     ILKind
		bytes int
		fill  byte
		value int64
		pack  func(dst, raw []byte, rows, cols int)
		min   float32 // Q4_1, Q5_1: the blocks' min (value = q + min)
	}{
		{"q8_0 -128", IL8, Q8_0Bytes, 0x80, -128, PackILQ8_0, 0},
		{"q4_0 -8", IL4, Q4_0Bytes, 0x00, -8, PackILQ4_0, 0},
		{"q4_0 7", IL4, Q4_0Bytes, 0xff, 7, PackILQ4_0, 0},
		{"iq4_nl -127", IL4NL, Q4_0Bytes, 0x00, -127, PackILIQ4_NL, 0},
		{"iq4_nl 113", IL4NL, Q4_0Bytes, 0xff, 113, PackILIQ4_NL, 0},
		{"q4_1 15-8", IL4M, Q4_1Bytes, 0xff, 7, PackILQ4_1, -8},
		{"q4_1 0+3", IL4M, Q4_1Bytes, 0x00, 3, PackILQ4_1, 3},
		{"q5_1 31-16", IL8M, Q5_1Bytes, 0xff, 15, PackILQ5_1, -16},
		{"q5_1 31", IL8M, Q5_1Bytes, 0xff, 31, PackILQ5_1, 0},
		{"q5_1 0-16", IL8M, Q5_1Bytes, 0x00, -16, PackILQ5_1, -16},
	} {
		raw := make([]byte, rows*nb*tc.bytes)
		for b := 0; b < rows*nb; b++ {
			blk := raw[b*tc.bytes:]
			putF16(blk, 1)
			for i := 2; i < tc.bytes; i++ {
				blk[i] = tc.fill
			}
			if hasMin(tc.k) {
				putF16(blk[2:], tc.min)
			}
		}
		w := make([]byte, ILBytes(tc.k, rows, cols))
		tc.pack(w, raw, rows, cols)
		// Token 0 mixes signs, tokens 1 and 2 are all 127 and all -127.
		x := make([]float32, 3*cols)
		for i := range x {
			switch {
			case i < cols && i%3 == 0, i >= 2*cols:
				x[i] = -127
			default:
				x[i] = 127
			}
		}
		var a ILAct
		a.Quantize(x, 3, cols, tc.k)
		want := make([]float32, 3*rows)
		p := ilProd{k: tc.k, w: w, a: &a, out: want, rows: rows, cols: cols}
		p.runGo(0, 2)
		for tok := 0; tok < 3; tok++ {
			var s int64
			for _, v := range x[tok*cols : (tok+1)*cols] {
				s += tc.value * int64(v)
			}
			if want[tok*rows] != float32(s) {
				t.Fatalf("%s token %d: %v, want %d", tc.name, tok, want[tok*rows], s)
			}
		}
		for _, l := range levels {
			withImpl(l, func() {
				got := make([]float32, 3*rows)
				MatMulIL(tc.k, got, w, nil, 0, &a, rows, cols, Cached)
				for i := range got {
					if got[i] != want[i] {
						t.Fatalf("%s %s: out[%d] = %v, Go %v", tc.name, implName(l), i, got[i], want[i])
					}
				}
			})
		}
	}
}

// iq4nlAsQ8_0 widens IQ4_NL blocks to Q8_0 blocks of the same values
// (d, then the 32 levels), as IQ4_NL was multiplied before IL4NL.
func iq4nlAsQ8_0(raw []byte) []byte {
	n := len(raw) / Q4_0Bytes
	q := make([]byte, n*Q8_0Bytes)
	for b := 0; b < n; b++ {
		src, dst := raw[b*Q4_0Bytes:], q[b*Q8_0Bytes:]
		dst[0], dst[1] = src[0], src[1]
		for j := 0; j < 16; j++ {
			dst[2+j] = byte(gguf.IQ4NLValues[src[2+j]&15])
			dst[18+j] = byte(gguf.IQ4NLValues[src[2+j]>>4])
		}
	}
	return q
}

// TestILIQ4NLvsIL8: IQ4_NL multiplied as IL4NL gives, on every kernel set,
// the bits of its values widened to IL8 (Q8_0's kernels), for every token
// count to 17, partial row groups, every level and activations at ±127.
func TestILIQ4NLvsIL8(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	levels := isaLevels(t)
	const cols = 288
	nb := cols / Q8Block
	for _, rows := range []int{1, 15, 17, 40} {
		raw := make([]byte, rows*nb*Q4_0Bytes)
		for b := 0; b < rows*nb; b++ {
			blk := raw[b*Q4_0Bytes : (b+1)*Q4_0Bytes]
			putF16(blk, float32(math.Ldexp(rng.Float64()+0.5, rng.IntN(12)-10)))
			for i := 2; i < Q4_0Bytes; i++ {
				switch b % 5 {
				case 0:
					blk[i] = 0x00 // -127
				case 1:
					blk[i] = 0xff // 113
				case 2:
					blk[i] = 0x0f
				default:
					blk[i] = byte(rng.IntN(256))
				}
			}
		}
		nl := make([]byte, ILBytes(IL4NL, rows, cols))
		PackILIQ4_NL(nl, raw, rows, cols)
		w8 := make([]byte, ILBytes(IL8, rows, cols))
		PackILQ8_0(w8, iq4nlAsQ8_0(raw), rows, cols)
		for n := 1; n <= 17; n++ {
			x := randVec(rng, n*cols)
			for blk := 0; blk < n*nb; blk++ {
				switch blk % 4 {
				case 0, 1: // ±127 at scale 1
					for i := 32 * blk; i < 32*blk+32; i++ {
						x[i] = float32(127 * (1 - 2*((i+blk/4)%2)))
						if blk%4 == 1 {
							x[i] = -127
						}
					}
				}
			}
			var a8, anl ILAct
			a8.Quantize(x, n, cols, IL8)
			anl.Quantize(x, n, cols, IL4NL)
			want := make([]float32, n*rows)
			withImpl(isaGo, func() { MatMulIL(IL8, want, w8, nil, 0, &a8, rows, cols, Cached) })
			for _, l := range levels {
				withImpl(l, func() {
					got, il8 := make([]float32, n*rows), make([]float32, n*rows)
					MatMulIL(IL4NL, got, nl, nil, 0, &anl, rows, cols, Cached)
					MatMulIL(IL8, il8, w8, nil, 0, &a8, rows, cols, Cached)
					for i := range want {
						if math.Float32bits(got[i]) != math.Float32bits(want[i]) || math.Float32bits(il8[i]) != math.Float32bits(want[i]) {
							t.Fatalf("%s rows=%d n=%d: out[%d] IL4NL %v, IL8 %v, IL8 Go %v", implName(l), rows, n, i, got[i], il8[i], want[i])
						}
					}
				})
			}
		}
	}
}

// TestFMA32: fma32 rounds a·b+c once, as VFMADD231PS does: against the
// exact sum (math/big) rounded to float32, on random operands and on sums
// whose float64 rounding lands on a float32 tie.
func TestFMA32(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	check := func(a, b, c float32) {
		exact := new(big.Float).SetPrec(200).SetFloat64(float64(a))
		exact.Mul(exact, new(big.Float).SetFloat64(float64(b)))
		exact.Add(exact, new(big.Float).SetFloat64(float64(c)))
		want, _ := exact.Float32()
		if got := fma32(a, b, c); got != want {
			t.Fatalf("fma32(%g, %g, %g) = %g, want %g", a, b, c, got, want)
		}
	}
	for i := 0; i < 200000; i++ {
		a := float32(rng.IntN(1<<20) - 1<<19)
		b := float32(math.Ldexp(rng.Float64()-0.5, rng.IntN(40)-20))
		c := float32(math.Ldexp(rng.Float64()-0.5, rng.IntN(40)-20))
		check(a, b, c)
	}
	// a·b = 2^-24 + 2^-41 + 2^-60-ish products next to 1: the float64 sum
	// is a float32 tie only when the tail is lost.
	for i := 0; i < 1000; i++ {
		e := float32(math.Ldexp(1, -12))
		a := e * (1 + float32(rng.IntN(64))*0x1p-23)
		b := e * (1 + float32(rng.IntN(64))*0x1p-23)
		check(a, b, 1)
		check(-a, b, 1)
		check(a, b, -1)
	}
}

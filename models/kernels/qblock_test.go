package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"chat/models/gguf"
)

// blockKind describes one GGUF block format for the tests.
type blockKind struct {
	name   string
	typ    gguf.Type
	bs, bb int
	matVec func(out []float32, w []byte, xq []int8, xd []float32, xs []int16, rows, cols int)
	matMul func(out []float32, w []byte, xq []int8, xd []float32, xs []int16, rows, cols, n int)
}

var blockKinds = []blockKind{
	{"Q4_K", gguf.TypeQ4_K, QK, Q4_KBytes, MatVecQ4_K, MatMulQ4_K},
	{"Q5_K", gguf.TypeQ5_K, QK, Q5_KBytes, MatVecQ5_K, MatMulQ5_K},
	{"Q6_K", gguf.TypeQ6_K, QK, Q6_KBytes, MatVecQ6_K, MatMulQ6_K},
	{"IQ4_XS", gguf.TypeIQ4_XS, QK, IQ4_XSBytes, MatVecIQ4_XS, MatMulIQ4_XS},
	{"Q2_K", gguf.TypeQ2_K, QK, Q2_KBytes, MatVecQ2_K, MatMulQ2_K},
	{"Q3_K", gguf.TypeQ3_K, QK, Q3_KBytes, MatVecQ3_K, MatMulQ3_K},
}

func putF16(b []byte, f float32) { binary.LittleEndian.PutUint16(b, gguf.F32ToF16(f)) }

// randBlocks returns n random blocks of kind k: random payload bytes, sane
// half-precision scales. extreme makes every value and scale as large as the
// format allows (checks for int16 saturation and int32 overflow).
func randBlocks(rng *rand.Rand, k blockKind, n int, extreme bool) []byte {
	b := make([]byte, n*k.bb)
	for i := range b {
		b[i] = byte(rng.IntN(256))
		if extreme {
			b[i] = 0xff
		}
	}
	for i := 0; i < n; i++ {
		blk := b[i*k.bb : (i+1)*k.bb]
		d := (rng.Float32() + 0.05) * 0.01
		if rng.IntN(2) == 0 && !extreme {
			d = -d
		}
		switch k.typ {
		case gguf.TypeQ4_K, gguf.TypeQ5_K:
			putF16(blk, d)
			putF16(blk[2:], (rng.Float32()+0.05)*0.01)
		case gguf.TypeQ6_K:
			putF16(blk[208:], d)
			if extreme {
				for g := 192; g < 208; g++ {
					blk[g] = 0x80 // scale -128
				}
			}
		case gguf.TypeIQ4_XS:
			putF16(blk, d)
			if extreme { // every value -127, every scale ls-32 = -32
				clear(blk[2:])
			}
		case gguf.TypeQ2_K:
			putF16(blk[80:], d)
			putF16(blk[82:], (rng.Float32()+0.05)*0.01)
		case gguf.TypeQ3_K:
			putF16(blk[108:], d)
			if extreme { // every value -4, every scale -32
				clear(blk[:108])
			}
		}
	}
	return b
}

// quantAct quantizes x the way kind k's product wants it.
func quantAct(k blockKind, x []float32) (xq []int8, xd []float32, xs []int16) {
	xq = make([]int8, len(x))
	xd = make([]float32, len(x)/k.bs)
	xs = make([]int16, len(x)/16)
	QuantizeQ8_K(xq, xd, xs, x)
	return
}

// dequantRows returns the float64 weights of rows·cols values.
func dequantRows(t testing.TB, k blockKind, w []byte, rows, cols int) []float32 {
	f := make([]float32, rows*cols)
	if err := gguf.Dequantize(k.typ, w[:rows*cols/k.bs*k.bb], f); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestQuantizeQ8_K(t *testing.T) {
	rng := rand.New(rand.NewPCG(41, 42))
	x := randVec(rng, 3*QK)
	x[5] = -2 // the largest magnitude, negative
	clear(x[2*QK:])
	q, d, s := make([]int8, len(x)), make([]float32, 3), make([]int16, len(x)/16)
	QuantizeQ8_K(q, d, s, x)
	if q[5] != -127 && q[5] != 127 || d[2] != 0 {
		t.Fatalf("q[5]=%d d=%v", q[5], d)
	}
	for i := range x {
		if e := math.Abs(float64(x[i]) - float64(d[i/QK])*float64(q[i])); e > math.Abs(float64(d[i/QK]))*0.5001 {
			t.Fatalf("x[%d]=%v q=%d d=%v", i, x[i], q[i], d[i/QK])
		}
	}
	for g := range s {
		var want int16
		for _, v := range q[16*g : 16*g+16] {
			want += int16(v)
		}
		if s[g] != want {
			t.Fatalf("sums[%d] = %d, want %d", g, s[g], want)
		}
	}
}

// TestBlockMatVec: every block product against the dequantized weights times
// the dequantized activation in float64 (only float rounding separates them),
// and asm against Go bitwise, on odd row counts and several block counts.
func TestBlockMatVec(t *testing.T) {
	rng := rand.New(rand.NewPCG(43, 44))
	for _, k := range blockKinds {
		for _, extreme := range []bool{false, true} {
			for _, rows := range []int{1, 2, 3, 4, 5, 7, 9, 13} {
				for _, nb := range []int{0, 1, 2, 3, 7} {
					cols := nb * k.bs
					w := randBlocks(rng, k, rows*nb, extreme)
					x := randVec(rng, cols)
					if extreme {
						for i := range x {
							x[i] = 1
							if i%3 == 0 {
								x[i] = -1
							}
						}
					}
					xq, xd, xs := quantAct(k, x)
					wf := dequantRows(t, k, w, rows, cols)
					var results [][]float32
					for _, asm := range impls() {
						withImpl(asm, func() {
							out := unaligned(rng, rows, 1)
							k.matVec(out, w, xq, xd, xs, rows, cols)
							checkSentinels(t, k.name, out)
							for r := 0; r < rows; r++ {
								var want, abs float64
								for c := 0; c < cols; c++ {
									p := float64(wf[r*cols+c]) * float64(xq[c]) * float64(xd[c/k.bs])
									want += p
									abs += math.Abs(p)
								}
								// Q4_K/Q5_K values are d·sc·q - dmin·m: the two
								// parts may cancel, so allow for their size.
								tol := float64(nb+8)*16*u*abs + 1e-30
								if math.Abs(float64(out[r])-want) > tol {
									t.Fatalf("%s %s extreme=%v rows=%d nb=%d row %d: %v want %v (tol %g)",
										k.name, implName(asm), extreme, rows, nb, r, out[r], want, tol)
								}
							}
							results = append(results, out)
						})
					}
					for _, o := range results[1:] {
						for r := range o {
							if math.Float32bits(o[r]) != math.Float32bits(results[0][r]) {
								t.Fatalf("%s rows=%d nb=%d row %d: asm %v, go %v", k.name, rows, nb, r, o[r], results[0][r])
							}
						}
					}
				}
			}
		}
	}
}

// TestBlockAccuracy: against the float weights times the unquantized x, the
// only error is the activation's quantization (about 1% of the result's size).
func TestBlockAccuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(45, 46))
	rows, cols := 32, 2048
	for _, k := range blockKinds {
		w := randBlocks(rng, k, rows*cols/k.bs, false)
		wf := dequantRows(t, k, w, rows, cols)
		x := randVec(rng, cols)
		xq, xd, xs := quantAct(k, x)
		got := make([]float32, rows)
		k.matVec(got, w, xq, xd, xs, rows, cols)
		var e, n float64
		for r := 0; r < rows; r++ {
			var want float64
			for c := 0; c < cols; c++ {
				want += float64(wf[r*cols+c]) * float64(x[c])
			}
			e += math.Pow(float64(got[r])-want, 2)
			n += want * want
		}
		if rel := math.Sqrt(e / n); rel > 0.02 {
			t.Errorf("%s: relative error %.4f", k.name, rel)
		}
	}
}

func TestBlockPanics(t *testing.T) {
	for _, k := range blockKinds {
		for _, c := range []struct {
			name                string
			rows, cols, wb, xqn int
		}{
			{"cols not a block multiple", 2, k.bs + 1, 2 * k.bb * 2, 2 * k.bs},
			{"short weights", 2, k.bs, 2*k.bb - 1, k.bs},
			{"short activation", 2, 2 * k.bs, 4 * k.bb, k.bs},
			{"negative rows", -1, k.bs, k.bb, k.bs},
		} {
			func() {
				defer func() {
					if recover() == nil {
						t.Errorf("%s: no panic for %s", k.name, c.name)
					}
				}()
				xq := make([]int8, c.xqn)
				k.matVec(make([]float32, 4), make([]byte, c.wb), xq, make([]float32, 4), make([]int16, c.xqn/16), c.rows, c.cols)
			}()
		}
	}
}

// TestPoolBitwiseBlocks: split over threads, the same bits as one thread.
func TestPoolBitwiseBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(47, 48))
	rows, cols := 1029, 512
	for _, k := range blockKinds {
		w := randBlocks(rng, k, rows*cols/k.bs, false)
		xq, xd, xs := quantAct(k, randVec(rng, cols))
		for _, asm := range impls() {
			withImpl(asm, func() {
				want := make([]float32, rows)
				withThreads(1, func() { k.matVec(want, w, xq, xd, xs, rows, cols) })
				withThreads(2, func() {
					got := make([]float32, rows)
					k.matVec(got, w, xq, xd, xs, rows, cols)
					for r := range got {
						if math.Float32bits(got[r]) != math.Float32bits(want[r]) {
							t.Fatalf("%s %s row %d: %v, one thread %v", k.name, implName(asm), r, got[r], want[r])
						}
					}
				})
			})
		}
	}
}

func TestBlockAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(49, 50))
	rows, cols := 2048, 1024
	out := make([]float32, rows)
	withThreads(2, func() {
		for _, k := range blockKinds {
			w := randBlocks(rng, k, rows*cols/k.bs, false)
			x := randVec(rng, cols)
			xq, xd, xs := quantAct(k, x)
			f := func() { k.matVec(out, w, xq, xd, xs, rows, cols) }
			f()
			if a := testing.AllocsPerRun(20, f); a != 0 {
				t.Errorf("%s allocates %v times per call", k.name, a)
			}
		}
		x := randVec(rng, cols)
		xq, xd, xs := make([]int8, cols), make([]float32, cols/QK), make([]int16, cols/16)
		if a := testing.AllocsPerRun(20, func() { QuantizeQ8_K(xq, xd, xs, x) }); a != 0 {
			t.Errorf("QuantizeQ8_K allocates %v times per call", a)
		}
	})
}

func BenchmarkMatVecBlocks(b *testing.B) {
	for _, sz := range [][2]int{{2048, 2048}, {4096, 4096}} {
		rows, cols := sz[0], sz[1]
		rng := rand.New(rand.NewPCG(6, 6))
		out := make([]float32, rows)
		for _, k := range blockKinds {
			w := randBlocks(rng, k, rows*cols/k.bs, false)
			xq, xd, xs := quantAct(k, randVec(rng, cols))
			b.Run(fmt.Sprintf("%s/%dx%d", k.name, rows, cols), func(b *testing.B) {
				benchImpls(b, func(b *testing.B) {
					benchThreads(b, func(b *testing.B) {
						b.SetBytes(int64(len(w)))
						for b.Loop() {
							k.matVec(out, w, xq, xd, xs, rows, cols)
						}
						reportFlops(b, 2*float64(rows*cols))
					})
				})
			})
		}
	}
}

// BenchmarkQuantizeAct: the once-per-vector activation quantization the
// products need (bytes are the float32 input).
func BenchmarkQuantizeAct(b *testing.B) {
	const n = 4096
	x := randVec(rand.New(rand.NewPCG(10, 10)), n)
	q, d, s := make([]int8, n), make([]float32, n/Q8Block), make([]int16, n/16)
	var a ILAct
	b.Run("Q8_0", func(b *testing.B) {
		b.SetBytes(4 * n)
		for b.Loop() {
			a.Quantize(x, 1, n, IL8)
		}
	})
	b.Run("Q8_K", func(b *testing.B) {
		b.SetBytes(4 * n)
		for b.Loop() {
			QuantizeQ8_K(q, d, s, x)
		}
	})
	b.Run("I8", func(b *testing.B) { // int8-a8's per-row activation scale
		b.SetBytes(4 * n)
		for b.Loop() {
			QuantizeI8(q, x)
		}
	})
}

// TestNearestInt: ggml's rounding trick is round half to even on the range
// QuantizeQ8_K uses it for (|v| <= 127.5), ties included.
func TestNearestInt(t *testing.T) {
	for v := float32(-130); v <= 130; v += 1.0 / 64 {
		for _, w := range []float32{v, math.Nextafter32(v, 200), math.Nextafter32(v, -200)} {
			if got, want := nearestInt(w), int32(math.RoundToEven(float64(w))); got != want {
				t.Fatalf("nearestInt(%v) = %d, want %d", w, got, want)
			}
		}
	}
}

// TestQuantizeQ8_KAsm: the assembly against quantQ8KGo bitwise (q, d and
// sums) on random blocks and on ties, equal magnitudes of both signs, zeros,
// subnormals, tiny blocks (iscale ±Inf), NaN and ±Inf.
func TestQuantizeQ8_KAsm(t *testing.T) {
	if !useAsm {
		t.Skipf("no assembly here (%s)", isaNames[isa])
	}
	rng := rand.New(rand.NewPCG(45, 46))
	inf, nan := float32(math.Inf(1)), float32(math.NaN())
	blocks := [][]float32{}
	for range 40 {
		blocks = append(blocks, randVec(rng, QK))
	}
	special := func(f func(i int) float32) {
		b := make([]float32, QK)
		for i := range b {
			b[i] = f(i)
		}
		blocks = append(blocks, b)
	}
	special(func(i int) float32 { return 0 })
	special(func(i int) float32 { return float32(i%9-4) * 0.5 }) // ties at ±0.5 steps
	special(func(i int) float32 { return float32(i%255-127) / 127 * 3 })
	special(func(i int) float32 { // -2 then 2: the first gives the sign
		if i == 7 {
			return -2
		}
		if i == 200 {
			return 2
		}
		return float32(i%5) * 0.1
	})
	special(func(i int) float32 { return math.Float32frombits(uint32(i + 1)) }) // subnormal
	special(func(i int) float32 { return float32(i-128) * 1e-38 })
	special(func(i int) float32 { return []float32{nan, 1, -3, 0}[i%4] })
	special(func(i int) float32 { return []float32{math.Float32frombits(0x7fa12345), 1, -3}[i%3] })
	special(func(i int) float32 { return []float32{inf, 1, -inf, 0}[i%4] })
	special(func(i int) float32 { return nan })
	special(func(i int) float32 { return -math.MaxFloat32 * float32(i%3) })
	for _, n := range []int{1, 2, 3} {
		for i := range blocks {
			x := make([]float32, 0, n*QK)
			for k := range n {
				x = append(x, blocks[(i+k)%len(blocks)]...)
			}
			q1, d1, s1 := make([]int8, len(x)), make([]float32, n), make([]int16, len(x)/16)
			q2, d2, s2 := make([]int8, len(x)), make([]float32, n), make([]int16, len(x)/16)
			quantQ8KGo(q1, d1, s1, x)
			quantQ8KAsm(q2, d2, s2, x)
			for b := range n {
				if math.Float32bits(d1[b]) != math.Float32bits(d2[b]) {
					t.Fatalf("blocks %d+%d: d[%d] = %v, Go %v", i, n, b, d2[b], d1[b])
				}
			}
			for j := range q1 {
				if q1[j] != q2[j] {
					t.Fatalf("blocks %d+%d: q[%d] = %d, Go %d (x %v)", i, n, j, q2[j], q1[j], x[j])
				}
			}
			for g := range s1 {
				if s1[g] != s2[g] {
					t.Fatalf("blocks %d+%d: sums[%d] = %d, Go %d", i, n, g, s2[g], s1[g])
				}
			}
		}
	}
}

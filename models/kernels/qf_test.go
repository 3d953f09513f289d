package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// fp8Ref is a code's value from its bit fields, in float64 (NaN for the
// E4M3 NaN codes and E5M2's NaNs).
func fp8Ref(c uint8, f FP8) float64 {
	sign := 1.0
	if c&0x80 != 0 {
		sign = -1
	}
	if f == E4M3 {
		e, m := int(c>>3&15), float64(c&7)
		switch {
		case e == 15 && m == 7:
			return math.NaN()
		case e == 0:
			return sign * m / 8 * math.Ldexp(1, -6)
		}
		return sign * (1 + m/8) * math.Ldexp(1, e-7)
	}
	e, m := int(c>>2&31), float64(c&3)
	switch {
	case e == 31 && m == 0:
		return sign * math.Inf(1)
	case e == 31:
		return math.NaN()
	case e == 0:
		return sign * m / 4 * math.Ldexp(1, -14)
	}
	return sign * (1 + m/4) * math.Ldexp(1, e-15)
}

func TestFP8Values(t *testing.T) {
	for _, f := range []FP8{E4M3, E5M2} {
		for c := 0; c < 256; c++ {
			got, want := float64(FP8Value(uint8(c), f)), fp8Ref(uint8(c), f)
			if f == E4M3 && math.IsNaN(want) {
				want = math.Copysign(480, want) // documented: NaN codes read as ±480
				if c == 0xff {
					want = -480
				}
			}
			if got != want && !(math.IsNaN(got) && math.IsNaN(want)) {
				t.Fatalf("%v code %#02x: %v, want %v", f, c, got, want)
			}
			// One rounding of the exact product, for a scale that is not a power of two.
			s := float32(0.0123)
			var d [1]float32
			DequantizeFP8(d[:], []uint8{uint8(c)}, s, f)
			if w := float32(want * float64(s)); math.Float32bits(d[0]) != math.Float32bits(w) && !math.IsNaN(want) {
				t.Fatalf("%v code %#02x: dequantized %v, want %v", f, c, d[0], w)
			}
		}
	}
}

// qfCase is one float-activation product under test with its dequantized
// weights.
type qfCase struct {
	name   string
	w      []float32 // dequantized, [rows][cols]
	matVec func(out, x []float32)
	matMul func(out, x []float32, n int)
}

func qfCases(rng *rand.Rand, rows, cols int) []qfCase {
	var cs []qfCase
	codes := make([]uint8, rows*cols)
	for i := range codes {
		codes[i] = uint8(rng.IntN(256))
		if codes[i]&0x7c == 0x7c {
			codes[i] ^= 0x40 // no E4M3 NaN, E5M2 infinity or NaN: the sums would be NaN
		}
	}
	scale := randScales(rng, rows)
	if rows > 0 {
		scale[0] = -scale[0]
	}
	for _, f := range []FP8{E4M3, E5M2} {
		w := make([]float32, rows*cols)
		for r := 0; r < rows; r++ {
			DequantizeFP8(w[r*cols:(r+1)*cols], codes[r*cols:(r+1)*cols], scale[r], f)
		}
		cs = append(cs, qfCase{f.String(), w,
			func(out, x []float32) { MatVecFP8(out, codes, scale, x, rows, cols, f) },
			func(out, x []float32, n int) { MatMulFP8(out, codes, scale, x, rows, cols, n, f) }})
	}
	q := randI8(rng, rows*cols, 0)
	w := make([]float32, rows*cols)
	for i := range w {
		w[i] = float32(q[i]) * scale[i/cols]
	}
	cs = append(cs, qfCase{"I8F32", w,
		func(out, x []float32) { MatVecI8F32(out, q, scale, x, rows, cols) },
		func(out, x []float32, n int) { MatMulI8F32(out, q, scale, x, rows, cols, n) }})
	return cs
}

// TestQFBitwise: MatVec and MatMul of every float-activation format give
// the bits of MatVec on the dequantized weights, on every kernel set, odd
// shapes, 1 and 2 threads.
func TestQFBitwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(81, 82))
	shapes := [][2]int{{1, 1}, {1, 7}, {2, 8}, {3, 9}, {4, 15}, {5, 16}, {7, 17}, {9, 24}, {13, 33}, {6, 64}, {11, 100}, {301, 256}, {130, 1000}}
	for _, sh := range shapes {
		rows, cols := sh[0], sh[1]
		for _, c := range qfCases(rng, rows, cols) {
			for _, n := range []int{1, 3, 4, 9} {
				x := unaligned(rng, n*cols, 1)
				for _, l := range isaLevels(t) {
					withISA(l, func() {
						want := make([]float32, n*rows)
						for tok := 0; tok < n; tok++ {
							MatVec(want[tok*rows:], c.w, x[tok*cols:], rows, cols)
						}
						for _, th := range []int{1, 2} {
							withThreads(th, func() {
								what := fmt.Sprintf("%s %s threads=%d rows=%d cols=%d n=%d", c.name, isaNames[l], th, rows, cols, n)
								got := unaligned(rng, n*rows, 2)
								c.matMul(got, x, n)
								checkSentinels(t, what, got)
								checkBits(t, what+" MatMul", got, want)
								got = unaligned(rng, rows, 3)
								c.matVec(got, x)
								checkSentinels(t, what, got)
								checkBits(t, what+" MatVec", got, want[:rows])
							})
						}
					})
				}
			}
		}
	}
}

func checkBits(t *testing.T, what string, got, want []float32) {
	t.Helper()
	for i := range want {
		if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
			t.Fatalf("%s: element %d is %v, want %v", what, i, got[i], want[i])
		}
	}
}

func TestQFPanics(t *testing.T) {
	for name, f := range map[string]func(){
		"MatVecFP8 short codes": func() {
			MatVecFP8(make([]float32, 2), make([]uint8, 3), make([]float32, 2), make([]float32, 2), 2, 2, E4M3)
		},
		"MatMulFP8 short x": func() {
			MatMulFP8(make([]float32, 4), make([]uint8, 4), make([]float32, 2), make([]float32, 3), 2, 2, 2, E5M2)
		},
		"MatMulI8F32 short out": func() {
			MatMulI8F32(make([]float32, 3), make([]int8, 4), make([]float32, 2), make([]float32, 4), 2, 2, 2)
		},
		"MatMulI8F32 short scale": func() {
			MatMulI8F32(make([]float32, 4), make([]int8, 4), make([]float32, 1), make([]float32, 4), 2, 2, 2)
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

func TestQFAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(83, 84))
	rows, cols, n := 512, 768, 8
	x, out := randVec(rng, n*cols), make([]float32, n*rows)
	for _, c := range qfCases(rng, rows, cols) {
		withThreads(2, func() {
			for name, f := range map[string]func(){
				"MatVec": func() { c.matVec(out, x) },
				"MatMul": func() { c.matMul(out, x, n) },
			} {
				f()
				if a := testing.AllocsPerRun(10, f); a != 0 {
					t.Errorf("%s %s allocates %v times per call", c.name, name, a)
				}
			}
		})
	}
}

// BenchmarkMatVecQF: decode-sized products; bytes are weight bytes. Compare
// with BenchmarkMatVec (float32) and BenchmarkMatVecF16 at the same size.
func BenchmarkMatVecQF(b *testing.B) {
	for _, sz := range [][2]int{{768, 2048}, {4096, 4096}} {
		rows, cols := sz[0], sz[1]
		rng := rand.New(rand.NewPCG(12, 12))
		x, out := randVec(rng, cols), make([]float32, rows)
		for _, c := range qfCases(rng, rows, cols) {
			b.Run(fmt.Sprintf("%s/%dx%d", c.name, rows, cols), func(b *testing.B) {
				benchISAs(b, func(b *testing.B) {
					b.SetBytes(int64(rows * cols))
					for b.Loop() {
						c.matVec(out, x)
					}
					reportFlops(b, 2*float64(rows*cols))
				})
			})
		}
	}
}

// BenchmarkMatMulQF: a 64-token prefill; bytes are weight bytes.
func BenchmarkMatMulQF(b *testing.B) {
	const n = 64
	for _, sz := range [][2]int{{2048, 768}, {768, 2048}} {
		rows, cols := sz[0], sz[1]
		rng := rand.New(rand.NewPCG(13, 13))
		x, out := randVec(rng, n*cols), make([]float32, n*rows)
		for _, c := range qfCases(rng, rows, cols) {
			b.Run(fmt.Sprintf("%s/%dx%dx%d", c.name, rows, cols, n), func(b *testing.B) {
				benchISAs(b, func(b *testing.B) {
					b.SetBytes(int64(rows * cols))
					for b.Loop() {
						c.matMul(out, x, n)
					}
					reportFlops(b, 2*float64(rows*cols*n))
				})
			})
		}
	}
}

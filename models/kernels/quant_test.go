package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestQuantizeI8(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 32))
	for _, n := range []int{1, 5, 32, 100} {
		x := randVec(rng, n)
		x[n/2] = -3 // the extreme value maps to -127 exactly
		q := make([]int8, n)
		s := QuantizeI8(q, x)
		if s != 3.0/127 || q[n/2] != -127 {
			t.Fatalf("n=%d: scale %v q=%d", n, s, q[n/2])
		}
		for i := range x {
			if q[i] < -127 {
				t.Fatalf("q[%d] = -128", i)
			}
			if d := math.Abs(float64(x[i]) - float64(s)*float64(q[i])); d > float64(s)/2*(1+1e-5) {
				t.Fatalf("n=%d i=%d: x=%v q=%d s=%v", n, i, x[i], q[i], s)
			}
		}
	}
	q := []int8{1, 2, 3}
	if s := QuantizeI8(q, make([]float32, 3)); s != 0 || q[0] != 0 || q[2] != 0 {
		t.Fatalf("zeros: scale %v q %v", s, q)
	}
}

// TestQuantizeI8Definition: on every kernel set QuantizeI8 (its max now
// AbsMax's) gives the bits of its plain definition, a max loop, also with a
// NaN, an infinity or zeros in the vectors or the tail.
func TestQuantizeI8Definition(t *testing.T) {
	ref := func(q []int8, x []float32) float32 {
		var amax float32
		for _, v := range x {
			amax = max(amax, abs32(v))
		}
		if amax == 0 || amax != amax {
			clear(q)
			return 0
		}
		inv := float64(127 / amax)
		for i, v := range x {
			q[i] = int8(max(-127, min(127, math.Round(float64(v)*inv))))
		}
		return amax / 127
	}
	rng := rand.New(rand.NewPCG(33, 34))
	special := []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1)), 0, float32(math.Copysign(0, -1)), 1e-45, 3e38}
	for _, l := range impls() {
		withImpl(l, func() {
			for _, n := range []int{1, 15, 16, 17, 33, 100, 768} {
				for trial := range 30 {
					x := randVec(rng, n)
					if trial%5 == 4 {
						clear(x)
					}
					if trial > 0 {
						x[rng.IntN(n)] = special[trial%len(special)]
					}
					got, want := make([]int8, n), make([]int8, n)
					s, ws := QuantizeI8(got, x), ref(want, x)
					if math.Float32bits(s) != math.Float32bits(ws) || !slices.Equal(got, want) {
						t.Fatalf("%s n=%d trial %d: scale %v, want %v; q %v, want %v", implName(l), n, trial, s, ws, got, want)
					}
				}
			}
		})
	}
}

// randI8 returns quantized random data with an unaligned start.
func randI8(rng *rand.Rand, n, off int) []int8 {
	b := make([]int8, n+off)
	for i := range b {
		b[i] = int8(rng.IntN(255) - 127)
	}
	return b[off:]
}

func randScales(rng *rand.Rand, n int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = (rng.Float32() + 0.01) / 127
	}
	return s
}

func i8Cases() [][2]int {
	var c [][2]int
	for rows := 1; rows <= 9; rows++ {
		for cols := 0; cols <= 70; cols++ {
			c = append(c, [2]int{rows, cols})
		}
	}
	for _, rows := range []int{1, 4, 5, 13} {
		c = append(c, [2]int{rows, 127}, [2]int{rows, 768}, [2]int{rows, 2048}, [2]int{rows, 2051})
	}
	return c
}

func TestMatVecI8(t *testing.T) {
	rng := rand.New(rand.NewPCG(33, 34))
	for _, rc := range i8Cases() {
		rows, cols := rc[0], rc[1]
		q, xq := randI8(rng, rows*cols, rows%4), randI8(rng, cols, cols%3)
		scale, xs := randScales(rng, rows), float32(0.02)
		var results [][]float32
		for _, asm := range impls() {
			withImpl(asm, func() {
				out := unaligned(rng, rows, 1)
				MatVecI8(out, q, scale, xq, xs, rows, cols)
				checkSentinels(t, "MatVecI8", out)
				for r := 0; r < rows; r++ {
					var s int64
					for c := 0; c < cols; c++ {
						s += int64(q[r*cols+c]) * int64(xq[c])
					}
					want := float64(s) * float64(scale[r]*xs)
					if math.Abs(float64(out[r])-want) > 3*u*math.Abs(want) {
						t.Fatalf("%s rows=%d cols=%d row %d: %v want %v", implName(asm), rows, cols, r, out[r], want)
					}
				}
				results = append(results, out)
			})
		}
		// Integer sums are exact: asm and Go agree bitwise.
		for _, o := range results[1:] {
			for r := range o {
				if math.Float32bits(o[r]) != math.Float32bits(results[0][r]) {
					t.Fatalf("rows=%d cols=%d row %d: asm %v, go %v", rows, cols, r, o[r], results[0][r])
				}
			}
		}
	}
}

// TestI8Accuracy: quantizing a float product's operands changes the result
// by about 1% of its magnitude, not more.
func TestI8Accuracy(t *testing.T) {
	rng := rand.New(rand.NewPCG(35, 36))
	rows, cols := 64, 768
	w, x := randVec(rng, rows*cols), randVec(rng, cols)
	want := make([]float32, rows)
	MatVec(want, w, x, rows, cols)
	q, scale, xq := make([]int8, rows*cols), make([]float32, rows), make([]int8, cols)
	for r := 0; r < rows; r++ {
		scale[r] = QuantizeI8(q[r*cols:(r+1)*cols], w[r*cols:(r+1)*cols])
	}
	xs := QuantizeI8(xq, x)
	got := make([]float32, rows)
	MatVecI8(got, q, scale, xq, xs, rows, cols)
	var e, n float64
	for r := range want {
		e += math.Pow(float64(got[r]-want[r]), 2)
		n += math.Pow(float64(want[r]), 2)
	}
	if rel := math.Sqrt(e / n); rel > 0.02 {
		t.Errorf("per-row int8 relative error %.4f", rel)
	}
}

// TestPoolBitwiseInt8: the int8 products split over threads give the same
// bits as one thread.
func TestPoolBitwiseInt8(t *testing.T) {
	rng := rand.New(rand.NewPCG(39, 40))
	rows, cols := 1029, 768
	q, xq := randI8(rng, rows*cols, 0), randI8(rng, cols, 0)
	scale := randScales(rng, rows)
	for _, asm := range impls() {
		withImpl(asm, func() {
			want := make([]float32, rows)
			withThreads(1, func() {
				MatVecI8(want, q, scale, xq, 0.01, rows, cols)
			})
			for _, th := range []int{2, 3} {
				withThreads(th, func() {
					for iter := 0; iter < 3; iter++ {
						got := make([]float32, rows)
						MatVecI8(got, q, scale, xq, 0.01, rows, cols)
						for r := range got {
							if math.Float32bits(got[r]) != math.Float32bits(want[r]) {
								t.Fatalf("%s threads=%d row %d: %v, one thread %v", implName(asm), th, r, got[r], want[r])
							}
						}
					}
				})
			}
		})
	}
}

func TestInt8Allocs(t *testing.T) {
	rows, cols := 2048, 768
	q, xq := make([]int8, rows*cols), make([]int8, cols)
	scale := make([]float32, rows)
	out := make([]float32, rows)
	withThreads(2, func() {
		for name, f := range map[string]func(){
			"MatVecI8": func() { MatVecI8(out, q, scale, xq, 1, rows, cols) },
		} {
			f()
			if a := testing.AllocsPerRun(50, f); a != 0 {
				t.Errorf("%s allocates %v times per call", name, a)
			}
		}
	})
}

func BenchmarkMatVecInt8(b *testing.B) {
	for _, sz := range [][2]int{{768, 2048}, {4096, 4096}} {
		rows, cols := sz[0], sz[1]
		rng := rand.New(rand.NewPCG(5, 5))
		q, xq := randI8(rng, rows*cols, 0), randI8(rng, cols, 0)
		scale := randScales(rng, rows)
		out := make([]float32, rows)
		b.Run(fmt.Sprintf("i8/%dx%d", rows, cols), func(b *testing.B) {
			benchImpls(b, func(b *testing.B) {
				benchThreads(b, func(b *testing.B) {
					b.SetBytes(int64(rows * cols)) // int8 weight bytes
					for b.Loop() {
						MatVecI8(out, q, scale, xq, 1, rows, cols)
					}
					reportFlops(b, 2*float64(rows*cols))
				})
			})
		})
	}
}

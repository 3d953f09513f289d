package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"testing"
	"time"
)

// u is float32's unit roundoff. A float32 sum of m terms is off from the exact
// sum by at most about m·u·Σ|terms|; the kernels add at most len/4+3 terms in
// sequence (Go: 4 partial sums; asm: 8 lanes then a 3-step reduction).
const u = 1.0 / (1 << 24)

func dotTol(n int, absSum float64) float64 {
	return 2*float64(n/4+8)*u*absSum + 1e-37
}

func randVec(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = rng.Float32()*2 - 1
	}
	return v
}

// unaligned returns an n-element slice that starts off floats into a fresh
// buffer, followed by sentinel elements.
func unaligned(rng *rand.Rand, n, off int) []float32 {
	buf := randVec(rng, off+n+8)
	for i := off + n; i < len(buf); i++ {
		buf[i] = sentinel
	}
	return buf[off : off+n : off+n+8]
}

var sentinel = float32(math.NaN())

// checkSentinels fails if the 8 elements past len(s) were written.
func checkSentinels(t *testing.T, what string, s []float32) {
	t.Helper()
	for _, v := range s[len(s):cap(s)] {
		if !math.IsNaN(float64(v)) {
			t.Fatalf("%s: wrote past the end of the output", what)
		}
	}
}

func ref(a, b []float32) (dot, abs float64) {
	for i := range a {
		p := float64(a[i]) * float64(b[i])
		dot += p
		abs += math.Abs(p)
	}
	return
}

// impls lists the kernel sets to test: Go always, then every assembly level
// this CPU runs (isaLevels).
func impls() []isaLevel { return isaLevels(nil) }

// startISA is the level chosen at start-up.
var startISA = isa

func implName(l isaLevel) string { return isaNames[l] }

// withImpl runs f with kernel set l.
func withImpl(l isaLevel, f func()) { withISA(l, f) }

// isaLevels lists every kernel set this CPU runs, from Go up; t, when not
// nil, logs the levels it cannot run (their tests are skipped).
func isaLevels(t testing.TB) []isaLevel {
	var ls []isaLevel
	for l := isaGo; l <= isaAVX512VNNI; l++ {
		if runnable(l) {
			ls = append(ls, l)
		} else if t != nil {
			t.Logf("skipping %s: this CPU does not have it", isaNames[l])
		}
	}
	return ls
}

// withISA runs f with kernel set l.
func withISA(l isaLevel, f func()) {
	old, oldGEMM := isa, gemmAVX512
	setISA(l)
	defer func() { setISA(old); gemmAVX512 = oldGEMM }()
	f()
}

// withThreads runs f with the pool at n threads (not clamped to NumCPU, so
// 2 and 3 threads exercise the hand-off even on a 1-CPU machine).
func withThreads(n int, f func()) {
	old := Threads()
	defaultPool.setThreads(n)
	defer defaultPool.setThreads(old)
	f()
}

var testSizes = func() []int {
	s := make([]int, 0, 80)
	for n := 0; n <= 70; n++ {
		s = append(s, n)
	}
	return append(s, 127, 128, 129, 255, 768, 2048, 4099)
}()

func TestDot(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, asm := range impls() {
		withImpl(asm, func() {
			for _, n := range testSizes {
				for off := 0; off < 4; off++ {
					a, b := unaligned(rng, n, off), unaligned(rng, n, 3-off)
					want, abs := ref(a, b)
					if got := Dot(a, b); math.Abs(float64(got)-want) > dotTol(n, abs) {
						t.Fatalf("%s Dot n=%d off=%d: got %v want %v", implName(asm), n, off, got, want)
					}
				}
			}
		})
	}
}

func TestDotLongerB(t *testing.T) {
	a := []float32{1, 2, 3}
	b := []float32{4, 5, 6, 1000}
	for _, asm := range impls() {
		withImpl(asm, func() {
			if got := Dot(a, b); got != 32 {
				t.Fatalf("%s: Dot = %v, want 32", implName(asm), got)
			}
		})
	}
}

func TestAxpy(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for _, asm := range impls() {
		withImpl(asm, func() {
			for _, n := range testSizes {
				for off := 0; off < 4; off++ {
					x, y := unaligned(rng, n, off), unaligned(rng, n, (off+1)%4)
					alpha := rng.Float32()*4 - 2
					y0 := append([]float32(nil), y...)
					Axpy(alpha, x, y)
					checkSentinels(t, "Axpy", y)
					for i := range x {
						ax := float64(alpha) * float64(x[i])
						want := float64(y0[i]) + ax
						if d := math.Abs(float64(y[i]) - want); d > 2*u*(math.Abs(float64(y0[i]))+math.Abs(ax))+1e-37 {
							t.Fatalf("%s Axpy n=%d i=%d: got %v want %v", implName(asm), n, i, y[i], want)
						}
					}
				}
			}
		})
	}
}

// checkMatVec compares out (rows values for input x) against float64.
func checkMatVec(t *testing.T, what string, out, w, x []float32, rows, cols int) {
	t.Helper()
	for r := 0; r < rows; r++ {
		want, abs := ref(w[r*cols:(r+1)*cols], x[:cols])
		if d := math.Abs(float64(out[r]) - want); d > dotTol(cols, abs) {
			t.Fatalf("%s rows=%d cols=%d row %d: got %v want %v", what, rows, cols, r, out[r], want)
		}
	}
}

func matVecCases() [][2]int {
	var c [][2]int
	for rows := 1; rows <= 9; rows++ {
		for cols := 0; cols <= 70; cols++ {
			c = append(c, [2]int{rows, cols})
		}
	}
	for _, rows := range []int{1, 7, 8, 12, 13, 16, 17, 31} {
		c = append(c, [2]int{rows, 768}, [2]int{rows, 2048}, [2]int{rows, 2051})
	}
	// Long rows in ranges of 2 MiB or more take AVX-512's row-pair kernel
	// (rowPairs); the rows alone and the tail take the AVX2 one.
	c = append(c, [2]int{700, 768}, [2]int{261, 2051})
	return c
}

func TestMatVec(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, asm := range impls() {
		withImpl(asm, func() {
			for _, rc := range matVecCases() {
				rows, cols := rc[0], rc[1]
				off := (rows + cols) % 4
				w, x := unaligned(rng, rows*cols, off), unaligned(rng, cols, 3-off)
				out := unaligned(rng, rows, 1)
				what := fmt.Sprintf("%s MatVec", implName(asm))
				MatVec(out, w, x, rows, cols)
				checkSentinels(t, what, out)
				checkMatVec(t, what, out, w, x, rows, cols)
				// Every row gives the same bits whether it is computed in a
				// block of 8, of 4, or alone: the pool relies on it.
				for r := 0; r < rows; r++ {
					one := []float32{0}
					MatVec(one, w[r*cols:], x, 1, cols)
					if math.Float32bits(one[0]) != math.Float32bits(out[r]) {
						t.Fatalf("%s rows=%d cols=%d: row %d alone %v, in block %v", what, rows, cols, r, one[0], out[r])
					}
				}
			}
		})
	}
}

// TestAsmMatchesGo runs both implementations on the same inputs: they sum
// in different orders, so they agree within twice the float64 tolerance.
func TestAsmMatchesGo(t *testing.T) {
	if !hasAsm {
		t.Skip("no asm on this CPU")
	}
	rng := rand.New(rand.NewPCG(7, 8))
	for _, rc := range matVecCases() {
		rows, cols := rc[0], rc[1]
		w, x := randVec(rng, rows*cols), randVec(rng, cols)
		a, g := make([]float32, rows), make([]float32, rows)
		matVecAsm(a, w, x, cols, 0, rows)
		matVecGo(g, w, x, rows, cols)
		for r := range a {
			_, abs := ref(w[r*cols:(r+1)*cols], x)
			if d := math.Abs(float64(a[r] - g[r])); d > 2*dotTol(cols, abs) {
				t.Fatalf("rows=%d cols=%d row %d: asm %v go %v", rows, cols, r, a[r], g[r])
			}
		}
		if da, dg := dotAsm(w[:cols], x), dotGo(w[:cols], x); math.Abs(float64(da-dg)) > 2*dotTol(cols, 0)+1e-3*math.Abs(float64(dg)) {
			t.Fatalf("cols=%d: dot asm %v go %v", cols, da, dg)
		}
	}
}

func TestMatMul(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	type tc struct{ rows, cols, n int }
	var cases []tc
	for _, rows := range []int{1, 2, 3, 4, 5, 7, 8, 9, 13, 16} {
		for _, cols := range []int{0, 1, 2, 5, 7, 8, 9, 16, 17, 31, 64, 67} {
			for _, n := range []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 13} {
				cases = append(cases, tc{rows, cols, n})
			}
		}
	}
	// Token counts past one activation chunk (tokenChunk).
	cases = append(cases, tc{13, 768, 70}, tc{9, 2048, 30}, tc{5, 3001, 40})
	for _, asm := range impls() {
		withImpl(asm, func() {
			for _, c := range cases {
				w := unaligned(rng, c.rows*c.cols, 1)
				x := unaligned(rng, c.n*c.cols, 2)
				out := unaligned(rng, c.n*c.rows, 3)
				what := fmt.Sprintf("%s MatMul rows=%d cols=%d n=%d", implName(asm), c.rows, c.cols, c.n)
				MatMul(out, w, x, c.rows, c.cols, c.n)
				checkSentinels(t, what, out)
				one := make([]float32, c.rows)
				for tok := 0; tok < c.n; tok++ {
					xt := x[tok*c.cols : (tok+1)*c.cols]
					checkMatVec(t, what, out[tok*c.rows:], w, xt, c.rows, c.cols)
					MatVec(one, w, xt, c.rows, c.cols)
					for r := range one {
						if math.Float32bits(one[r]) != math.Float32bits(out[tok*c.rows+r]) {
							t.Fatalf("%s: token %d row %d: MatMul %v, MatVec %v", what, tok, r, out[tok*c.rows+r], one[r])
						}
					}
				}
			}
		})
	}
}

// TestPoolBitwise checks that 1, 2 and 3 threads give bitwise the same
// results, including after the worker has parked.
func TestPoolBitwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	type tc struct{ rows, cols, n int }
	cases := []tc{{1000, 77, 1}, {777, 300, 1}, {768, 2048, 1}, {4096, 17, 1}, {301, 257, 7}, {768, 512, 16}}
	for _, asm := range impls() {
		withImpl(asm, func() {
			for _, c := range cases {
				w, x := randVec(rng, c.rows*c.cols), randVec(rng, c.n*c.cols)
				want := make([]float32, c.rows*c.n)
				withThreads(1, func() { MatMul(want, w, x, c.rows, c.cols, c.n) })
				for _, threads := range []int{2, 3} {
					withThreads(threads, func() {
						for iter := 0; iter < 6; iter++ {
							if iter == 3 {
								time.Sleep(2 * spinFor) // let the workers park
							}
							got := make([]float32, c.rows*c.n)
							MatMul(got, w, x, c.rows, c.cols, c.n)
							for i := range got {
								if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
									t.Fatalf("%s %v threads=%d iter=%d: out[%d] = %v, 1 thread gave %v",
										implName(asm), c, threads, iter, i, got[i], want[i])
								}
							}
						}
					})
				}
			}
		})
	}
}

// TestConcurrentCallers: callers that find the pool busy compute alone; all
// must get correct results (run with -race).
func TestConcurrentCallers(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	rows, cols := 512, 300
	w, x := randVec(rng, rows*cols), randVec(rng, cols)
	want := make([]float32, rows)
	withThreads(1, func() { MatVec(want, w, x, rows, cols) })
	withThreads(2, func() {
		var wg sync.WaitGroup
		errs := make(chan string, 4)
		for g := 0; g < 4; g++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				out := make([]float32, rows)
				for i := 0; i < 50; i++ {
					MatVec(out, w, x, rows, cols)
					for r := range out {
						if out[r] != want[r] {
							errs <- fmt.Sprintf("row %d: %v want %v", r, out[r], want[r])
							return
						}
					}
				}
			}()
		}
		wg.Wait()
		close(errs)
		for e := range errs {
			t.Fatal(e)
		}
	})
}

func TestSetThreads(t *testing.T) {
	old := Threads()
	defer SetThreads(old)
	SetThreads(0)
	if Threads() != 1 {
		t.Fatalf("SetThreads(0): Threads() = %d, want 1", Threads())
	}
	SetThreads(1 << 20)
	if Threads() < 1 || Threads() > 1<<10 {
		t.Fatalf("SetThreads(huge): Threads() = %d", Threads())
	}
}

func TestMatVecAllocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	rows, cols, n := 768, 2048, 4
	w, x, out := randVec(rng, rows*cols), randVec(rng, n*cols), make([]float32, n*rows)
	withThreads(2, func() {
		MatVec(out, w, x, rows, cols) // start the workers
		if a := testing.AllocsPerRun(100, func() { MatVec(out, w, x, rows, cols) }); a != 0 {
			t.Errorf("MatVec allocates %v times per call", a)
		}
		if a := testing.AllocsPerRun(20, func() { MatMul(out, w, x, rows, cols, n) }); a != 0 {
			t.Errorf("MatMul allocates %v times per call", a)
		}
	})
}

func TestShortSlicesPanic(t *testing.T) {
	for _, f := range []func(){
		func() { MatVec(make([]float32, 2), make([]float32, 5), make([]float32, 3), 2, 3) },
		func() { MatVec(make([]float32, 1), make([]float32, 6), make([]float32, 3), 2, 3) },
		func() { MatVec(make([]float32, 2), make([]float32, 6), make([]float32, 2), 2, 3) },
		func() { MatMul(make([]float32, 4), make([]float32, 6), make([]float32, 5), 2, 3, 2) },
		func() { Dot(make([]float32, 3), make([]float32, 2)) },
		func() { Axpy(1, make([]float32, 3), make([]float32, 2)) },
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Error("no panic on short slices")
				}
			}()
			f()
		}()
	}
}

package nn

import (
	"math"
	"sync"
	"testing"
)

// TestRopeLayouts rotates one head of 4 values at position 1, base 10000:
// the pairs turn by 1 and 0.01 radians. Normal rope (llama) pairs adjacent
// values, NeoX (qwen, the course) pairs i with i+2; rope past Dim leaves
// values alone.
func TestRopeLayouts(t *testing.T) {
	rot := func(a, b, th float64) (float64, float64) {
		return a*math.Cos(th) - b*math.Sin(th), a*math.Sin(th) + b*math.Cos(th)
	}
	check := func(name string, got []float32, want [4]float64) {
		t.Helper()
		for i := range want {
			if math.Abs(float64(got[i])-want[i]) > 1e-6 {
				t.Errorf("%s: got %v, want %v", name, got, want)
				return
			}
		}
	}
	var want [4]float64
	r := GGMLRope(4, 2, false, RopeScaling{Base: 10000, Scale: 1})
	v := []float32{1, 2, 3, 4}
	r.Apply(v, 1)
	want[0], want[1] = rot(1, 2, 1)
	want[2], want[3] = rot(3, 4, 0.01)
	check("normal", v, want)

	r = GGMLRope(4, 2, true, RopeScaling{Base: 10000, Scale: 1})
	v = []float32{1, 2, 3, 4}
	r.Apply(v, 1)
	want[0], want[2] = rot(1, 3, 1)
	want[1], want[3] = rot(2, 4, 0.01)
	check("neox", v, want)

	r = TorchRope(4, 2, 10000)
	v = []float32{1, 2, 3, 4}
	r.Apply(v, 1)
	check("torch", v, want)

	r = GGMLRope(2, 2, true, RopeScaling{Base: 10000, Scale: 1})
	v = []float32{1, 2, 3, 4}
	r.Apply(v, 1)
	want[0], want[1] = rot(1, 2, 1)
	want[2], want[3] = 3, 4
	check("partial neox", v, want)
}

// TestYarnTables checks YaRN's split: the fastest pairs keep their unscaled
// angle, the slowest are divided by the factor, and every pair's cos and
// sin are scaled by the same attention factor.
func TestYarnTables(t *testing.T) {
	yarn := GGMLRope(64, 8, false, RopeScaling{Base: 10000, Scale: 0.25, YarnExt: 1, YarnAttn: 1, YarnOrigCtx: 4096})
	plain := GGMLRope(64, 8, false, RopeScaling{Base: 10000, Scale: 1})
	lin := GGMLRope(64, 8, false, RopeScaling{Base: 10000, Scale: 0.25})
	lo, hi := yarnCorrDims(64, 4096, 10000, 32, 1)
	if !(lo > 0 && hi < 31 && lo < hi) {
		t.Fatalf("correction dims %v %v", lo, hi)
	}
	mscale := 1 + 0.1*math.Log(4)
	yc, ys := yarn.At(5)
	pc, ps := plain.At(5)
	lc, ls := lin.At(5)
	for i := 0; i < 32; i++ {
		if r := math.Hypot(float64(yc[i]), float64(ys[i])); math.Abs(r-mscale) > 1e-5 {
			t.Fatalf("pair %d: |cos, sin| = %v, want %v", i, r, mscale)
		}
		rc, rs := lc, ls
		if float32(i) < lo {
			rc, rs = pc, ps
		}
		if float32(i) < lo || float32(i) > hi {
			if math.Abs(float64(yc[i])/mscale-float64(rc[i])) > 1e-5 || math.Abs(float64(ys[i])/mscale-float64(rs[i])) > 1e-5 {
				t.Errorf("pair %d (ramp %v..%v): cos %v sin %v, want %v %v", i, lo, hi, yc[i], ys[i], rc[i], rs[i])
			}
		}
	}
}

// BenchmarkRope: a batch step's rotation of eight tokens' queries (12 heads
// of 64) in each layout.
func BenchmarkRope(b *testing.B) {
	for _, neox := range []bool{false, true} {
		r := GGMLRope(64, 256, neox, RopeScaling{Base: 10000})
		p := Pass{Pos: []int{10, 20, 30, 40, 50, 60, 70, 80}}
		x := Rows{N: 8, W: 768, D: make([]float32, 8*768)}
		for i := range x.D {
			x.D[i] = float32(i%17) - 8
		}
		b.Run(map[bool]string{false: "norm", true: "neox"}[neox], func(b *testing.B) {
			for b.Loop() {
				p.Rope(x, r, 12)
			}
		})
	}
}

// TestRopeChunks: the tables are filled a chunk at a time on first use, in
// any order and from several goroutines, with the values of one pass in order.
func TestRopeChunks(t *testing.T) {
	sc := RopeScaling{Base: 500000, Scale: 1, Factors: []float32{1, 2, 4, 8, 16, 32, 32, 32}}
	ctx := 3*ropeChunkLen + 5
	eager := make([][2][]float32, ctx)
	ref := GGMLRope(16, ctx, false, sc)
	for p := range ctx {
		c, s := ref.At(p)
		eager[p] = [2][]float32{c, s}
	}
	r := GGMLRope(16, ctx, false, sc)
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range ctx {
				p := ctx - 1 - (i*7+g*131)%ctx // backwards, strided, each goroutine its own order
				c, s := r.At(p)
				for j := range c {
					if c[j] != eager[p][0][j] || s[j] != eager[p][1][j] {
						t.Errorf("position %d pair %d: %v %v, want %v %v", p, j, c[j], s[j], eager[p][0][j], eager[p][1][j])
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if r.Context() != ctx {
		t.Errorf("Context() = %d", r.Context())
	}
}

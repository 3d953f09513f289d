package nn

import (
	"math"
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
	p := 5
	for i := 0; i < 32; i++ {
		k := p*32 + i
		if r := math.Hypot(float64(yarn.Cos[k]), float64(yarn.Sin[k])); math.Abs(r-mscale) > 1e-5 {
			t.Fatalf("pair %d: |cos, sin| = %v, want %v", i, r, mscale)
		}
		ref := lin
		if float32(i) < lo {
			ref = plain
		}
		if float32(i) < lo || float32(i) > hi {
			if math.Abs(float64(yarn.Cos[k])/mscale-float64(ref.Cos[k])) > 1e-5 || math.Abs(float64(yarn.Sin[k])/mscale-float64(ref.Sin[k])) > 1e-5 {
				t.Errorf("pair %d (ramp %v..%v): cos %v sin %v, want %v %v", i, lo, hi, yarn.Cos[k], yarn.Sin[k], ref.Cos[k], ref.Sin[k])
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

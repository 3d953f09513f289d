package kernels

import (
	"math"
	"math/rand/v2"
	"os"
	"testing"
)

// torchSiLUInputs: every float32 in [-40, 40] with a stride (where the
// sigmoid is not 0 or 1), random bit patterns, the edges of the asm's range
// (±700) and specials.
func torchSiLUInputs() []float32 {
	var xs []float32
	for b := uint32(0); b < 1<<32-997; b += 997 {
		if x := math.Float32frombits(b); math.Abs(float64(x)) <= 40 {
			xs = append(xs, x)
		}
	}
	rng := rand.New(rand.NewPCG(81, 82))
	for range 1 << 16 {
		xs = append(xs, math.Float32frombits(rng.Uint32()), float32(rng.NormFloat64()*4))
	}
	inf := float32(math.Inf(1))
	for _, x := range []float32{0, float32(math.Copysign(0, -1)), 700, -700, math.Nextafter32(700, 1000),
		math.Nextafter32(-700, -1000), 709, -709, 710, -710, 1e30, -1e30, inf, -inf, float32(math.NaN()),
		math.MaxFloat32, -math.MaxFloat32, math.SmallestNonzeroFloat32, 88.7, -88.7, 103.9, -103.9} {
		xs = append(xs, x, x, x, x)
	}
	return xs
}

// TestTorchSwiGLU: the asm gives torchSwiGLUGo's (TorchSigmoid's) bits for
// every input, at every alignment of the groups of four and a ragged tail.
func TestTorchSwiGLU(t *testing.T) {
	xs := torchSiLUInputs()
	rng := rand.New(rand.NewPCG(83, 84))
	up := make([]float32, len(xs))
	for i := range up {
		up[i] = float32(rng.NormFloat64())
	}
	up[7] = float32(math.NaN())
	up[9] = float32(math.Inf(-1))
	want := append([]float32(nil), xs...)
	torchSwiGLUGo(want, up)
	for _, asm := range impls() {
		withImpl(asm, func() {
			for _, off := range []int{0, 1, 2, 3} {
				n := len(xs) - off - 5
				got := append([]float32(nil), xs[off:off+n]...)
				TorchSwiGLU(got, up[off:off+n])
				for i := range got {
					if math.Float32bits(got[i]) != math.Float32bits(want[off+i]) {
						t.Fatalf("%s off=%d: x=%v (%#x) up=%v: %v, want %v", implName(asm), off, xs[off+i],
							math.Float32bits(xs[off+i]), up[off+i], got[i], want[off+i])
					}
				}
			}
		})
	}
}

// TestTorchSwiGLUExhaustive: every float32 bit pattern (with up = 1, so gate
// = g·sigmoid(g)); CHAT_EXHAUSTIVE=1 runs it (about a minute).
func TestTorchSwiGLUExhaustive(t *testing.T) {
	if os.Getenv("CHAT_EXHAUSTIVE") == "" || !useAsm {
		t.Skip("CHAT_EXHAUSTIVE=1 on an asm host runs it")
	}
	const chunk = 1 << 16
	g, want, up := make([]float32, chunk), make([]float32, chunk), make([]float32, chunk)
	for i := range up {
		up[i] = 1
	}
	for base := uint64(0); base < 1<<32; base += chunk {
		for i := range g {
			g[i] = math.Float32frombits(uint32(base) + uint32(i))
		}
		copy(want, g)
		torchSwiGLUGo(want, up)
		TorchSwiGLU(g, up)
		for i := range g {
			if math.Float32bits(g[i]) != math.Float32bits(want[i]) {
				t.Fatalf("x=%#x: %v, want %v", uint32(base)+uint32(i), g[i], want[i])
			}
		}
	}
}

func TestTorchSwiGLUNoAlloc(t *testing.T) {
	g, u := make([]float32, 512), make([]float32, 512)
	if a := testing.AllocsPerRun(10, func() { TorchSwiGLU(g, u) }); a != 0 {
		t.Errorf("%v allocations", a)
	}
}

func BenchmarkTorchSwiGLU(b *testing.B) {
	rng := rand.New(rand.NewPCG(85, 86))
	g, u, x := make([]float32, 512), make([]float32, 512), make([]float32, 512)
	for i := range x {
		x[i], u[i] = float32(rng.NormFloat64()), float32(rng.NormFloat64())
	}
	benchImpls(b, func(b *testing.B) {
		for b.Loop() {
			copy(g, x)
			TorchSwiGLU(g, u)
		}
	})
}

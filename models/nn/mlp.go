package nn

import (
	"math"
	"sync"

	"chat/models/gguf"
	"chat/models/kernels"
)

// The feed-forward activations. A gated MLP is down(act(gate(x)) ⊙ up(x));
// the gated functions below overwrite gate with act(gate)·up, each with the
// rounding of the code it must match.

// SwiGLU sets gate[i] = SiLU(gate[i])·up[i] with the vectorised exponential
// (kernels.SwiGLU, within 3e-7 of float64), as ggml's swiglu computes it.
func SwiGLU(gate, up Rows) { kernels.SwiGLU(gate.D[:gate.N*gate.W], up.D[:up.N*up.W]) }

// TorchSwiGLU sets gate[i] = silu(gate[i])·up[i] as the course's PyTorch
// does: silu(x) = x·sigmoid(x) with the sigmoid in float64, then the
// products rounded to float32 (kernels.TorchSwiGLU).
func TorchSwiGLU(gate, up Rows) { kernels.TorchSwiGLU(gate.D[:up.N*up.W], up.D[:up.N*up.W]) }

// Sigmoid is 1/(1+e^-x) computed in float64 and rounded once.
func Sigmoid(x float32) float32 { return kernels.TorchSigmoid(x) }

// GeGLU sets gate[i] = GELU(gate[i])·up[i] as ggml_vec_geglu_f32 does with
// GGML_GELU_FP16: the tanh GELU looked up in a table indexed by the f16
// rounding of the input, 0 below -10 and the identity above 10 (Gemma).
func GeGLU(gate, up Rows) {
	geluOnce.Do(initGELU)
	u := up.D[:up.N*up.W]
	for i, g := range gate.D[:len(u)] {
		switch {
		case g <= -10:
			gate.D[i] = 0
		case g >= 10:
			gate.D[i] = g * u[i]
		default:
			gate.D[i] = geluTable[gguf.F32ToF16(g)] * u[i]
		}
	}
}

var (
	geluOnce  sync.Once
	geluTable []float32 // by f16 bits: f16(gelu(x)) widened
)

// initGELU fills the table as ggml_cpu_init does: ggml_gelu_f32 of each f16
// value, rounded to f16.
func initGELU() {
	const a, sqrt2OverPi = float32(0.044715), float32(0.79788456080286535587989211986876)
	geluTable = make([]float32, 1<<16)
	for i := range geluTable {
		x := gguf.F16ToF32(uint16(i))
		y := 0.5 * x * (1 + float32(math.Tanh(float64(sqrt2OverPi*x*(1+a*x*x)))))
		geluTable[i] = gguf.F16ToF32(gguf.F32ToF16(y))
	}
}

// ReLU sets every negative value of x to 0 (the classic course MLP).
func ReLU(x Rows) {
	for i, v := range x.D[:x.N*x.W] {
		if v < 0 {
			x.D[i] = 0
		}
	}
}

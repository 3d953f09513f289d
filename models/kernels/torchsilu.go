package kernels

import "math"

// TorchSigmoid is 1/(1+e^-x) computed in float64 and rounded once to
// float32: the course's PyTorch sigmoid (nn.Sigmoid, nn.TorchSwiGLU).
func TorchSigmoid(x float32) float32 { return float32(1 / (1 + math.Exp(-float64(x)))) }

// TorchSwiGLU sets gate[i] = (gate[i]·TorchSigmoid(gate[i]))·up[i] for
// i < len(up), each product rounded to float32: the course's silu(gate)·up.
//
// The assembly evaluates four sigmoids per step with the operations of Go's
// math.Exp on amd64 with FMA (math/exp_amd64.s, the avxfma path: the same
// reduction, Taylor polynomial, squarings and 2^n scaling, each a float64
// operation rounded the same way), so it gives TorchSigmoid's bits. It
// covers |x| <= 700, where that path needs no overflow or subnormal step;
// a group of four with any other value (or NaN) goes through TorchSigmoid.
// TestTorchSwiGLU compares the two bitwise.
func TorchSwiGLU(gate, up []float32) {
	gate = gate[:len(up)]
	i := 0
	if useAsm {
		n := len(up) &^ 3
		for i < n {
			i += torchSwiGLUAsm(gate[i:n], up[i:n])
			if i < n {
				torchSwiGLUGo(gate[i:i+4], up[i:i+4])
				i += 4
			}
		}
	}
	torchSwiGLUGo(gate[i:], up[i:])
}

func torchSwiGLUGo(gate, up []float32) {
	gate = gate[:len(up)]
	for i, g := range gate {
		gate[i] = g * TorchSigmoid(g) * up[i]
	}
}

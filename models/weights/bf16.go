package weights

import (
	"chat/models/gguf"
	"chat/models/kernels"
)

// BF16 is a matrix of bfloat16 weights (2 bytes each, interleaved as F16's),
// widened in registers by kernels.MatMulBF16IL. As ggml's vec_dot_bf16
// does, the activations are rounded to bf16 first; the kernel then gives
// the bits of MatMul on the widened weights.
type BF16 struct{ halves }

func init() {
	register("bf16", format{fromFloat: func(w []float32, rows, cols int) (Linear, error) {
		h := make([]uint16, len(w))
		for i, v := range w {
			h[i] = gguf.F32ToBF16(v)
		}
		return &BF16{newHalves(h, rows, cols)}, nil
	}})
}

func (m *BF16) Format() string { return "bf16" }

func (m *BF16) Mul(out, x []float32, n int, s *Scratch) {
	checkMul(m, out, x, n)
	xr := s.floats(n * m.cols)
	kernels.RoundBF16(xr, x[:n*m.cols])
	mul := kernels.MatMulBF16IL
	if s.Prefill {
		mul = kernels.MatMulBF16ILPrefill
	}
	mul(out[:n*m.rows], m.h, xr, m.rows, m.cols, n)
}

func (m *BF16) Row(dst []float32, r int) {
	for c := range dst[:m.cols] {
		dst[c] = gguf.BF16ToF32(m.at(r, c))
	}
}

func (m *BF16) Slice(r0, r1 int) Linear {
	checkSlice(m, r0, r1)
	return &BF16{m.slice(r0, r1)}
}

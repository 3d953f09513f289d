package weights

import (
	"chat/models/gguf"
	"chat/models/kernels"
)

// Q2_K: super-blocks of 256 2-bit values in 16 groups with 4-bit scales and
// mins (block_q2_K), multiplied with Q8_K activations as
// ggml_vec_dot_q2_K_q8_K.
var q2_k = &blockKind{typ: gguf.TypeQ2_K,
	mul: func(out []float32, w []byte, a quantAct, rows, cols, n int) {
		if n == 1 {
			kernels.MatVecQ2_K(out, w, a.q, a.d, a.sums, rows, cols)
			return
		}
		kernels.MatMulQ2_K(out, w, a.q, a.d, a.sums, rows, cols, n)
	}}

func init() { registerBlocks("q2_k", q2_k) }

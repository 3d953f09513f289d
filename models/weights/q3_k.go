package weights

import (
	"chat/models/gguf"
	"chat/models/kernels"
)

// Q3_K: super-blocks of 256 3-bit values (q-4) in 16 groups with 6-bit
// scales (block_q3_K), multiplied with Q8_K activations as
// ggml_vec_dot_q3_K_q8_K.
var q3_k = &blockKind{typ: gguf.TypeQ3_K,
	mul: func(out []float32, w []byte, a quantAct, rows, cols, n int) {
		if n == 1 {
			kernels.MatVecQ3_K(out, w, a.q, a.d, a.sums, rows, cols)
			return
		}
		kernels.MatMulQ3_K(out, w, a.q, a.d, a.sums, rows, cols, n)
	}}

func init() { registerBlocks("q3_k", q3_k) }

package weights

import (
	"chat/models/gguf"
	"chat/models/kernels"
)

// Q4_0: blocks of 32 4-bit values (q-8) with an f16 scale (block_q4_0),
// multiplied with Q8_0 activations as ggml_vec_dot_q4_0_q8_0.
var q4_0 = &blockKind{typ: gguf.TypeQ4_0, act: actQ8_0,
	mul: func(out []float32, w []byte, a quantAct, rows, cols, n int) {
		if n == 1 {
			kernels.MatVecQ4_0(out, w, a.q, a.d, rows, cols)
			return
		}
		kernels.MatMulQ4_0(out, w, a.q, a.d, rows, cols, n)
	}}

func init() { registerBlocks("q4_0", q4_0) }

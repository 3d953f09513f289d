package weights

import (
	"chat/models/gguf"
	"chat/models/kernels"
)

// Q6_K: super-blocks of 256 6-bit values (q-32) in 16 groups with int8
// scales (block_q6_K).
var q6_k = &blockKind{typ: gguf.TypeQ6_K,
	mul: func(out []float32, w []byte, a quantAct, rows, cols, n int) {
		if n == 1 {
			kernels.MatVecQ6_K(out, w, a.q, a.d, a.sums, rows, cols)
			return
		}
		kernels.MatMulQ6_K(out, w, a.q, a.d, a.sums, rows, cols, n)
	}}

func init() { registerBlocks("q6_k", q6_k) }

package weights

import (
	"chat/models/gguf"
	"chat/models/kernels"
)

// Q5_K: Q4_K with a fifth bit per value (block_q5_K).
var q5_k = &blockKind{typ: gguf.TypeQ5_K,
	mul: func(out []float32, w []byte, a quantAct, rows, cols, n int) {
		if n == 1 {
			kernels.MatVecQ5_K(out, w, a.q, a.d, a.sums, rows, cols)
			return
		}
		kernels.MatMulQ5_K(out, w, a.q, a.d, a.sums, rows, cols, n)
	}}

func init() { registerBlocks("q5_k", q5_k) }

package weights

import (
	"chat/models/gguf"
	"chat/models/kernels"
)

// Q5_0: blocks of 32 5-bit values (q-16) with an f16 scale (block_q5_0),
// multiplied with Q8_0 activations as ggml_vec_dot_q5_0_q8_0. llama.cpp's
// K-quant mixes use it for rows whose length is not a multiple of 256.
var q5_0 = &blockKind{typ: gguf.TypeQ5_0, act: actQ8_0,
	mul: func(out []float32, w []byte, a quantAct, rows, cols, n int) {
		if n == 1 {
			kernels.MatVecQ5_0(out, w, a.q, a.d, rows, cols)
			return
		}
		kernels.MatMulQ5_0(out, w, a.q, a.d, rows, cols, n)
	}}

func init() { registerBlocks("q5_0", q5_0, nil) }

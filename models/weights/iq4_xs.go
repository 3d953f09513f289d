package weights

import (
	"chat/models/gguf"
	"chat/models/kernels"
)

// IQ4_XS: super-blocks of 256 4-bit indices into ggml's 16 non-linear levels
// in 8 groups of 32 with 6-bit scales (block_iq4_xs), multiplied in place
// with Q8_K activations as ggml_vec_dot_iq4_xs_q8_K, at the file's 4.25 bits
// a weight.
var iq4_xs = &blockKind{typ: gguf.TypeIQ4_XS,
	mul: func(out []float32, w []byte, a quantAct, rows, cols, n int) {
		if n == 1 {
			kernels.MatVecIQ4_XS(out, w, a.q, a.d, a.sums, rows, cols)
			return
		}
		kernels.MatMulIQ4_XS(out, w, a.q, a.d, a.sums, rows, cols, n)
	}}

func init() { registerBlocks("iq4_xs", iq4_xs) }

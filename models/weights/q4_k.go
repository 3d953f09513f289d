package weights

import (
	"chat/models/gguf"
	"chat/models/kernels"
)

// Q4_K: super-blocks of 256 4-bit values in 8 groups with 6-bit scales and
// mins (block_q4_K), multiplied with Q8_K activations as
// ggml_vec_dot_q4_K_q8_K.
var q4_k = &blockKind{typ: gguf.TypeQ4_K,
	mul: func(out []float32, w []byte, a quantAct, rows, cols, n int) {
		if n == 1 {
			kernels.MatVecQ4_K(out, w, a.q, a.d, a.sums, rows, cols)
			return
		}
		kernels.MatMulQ4_K(out, w, a.q, a.d, a.sums, rows, cols, n)
	}}

func init() { registerBlocks("q4_k", q4_k) }

// quantizeQ8_K quantises n activation rows to Q8_K super-blocks
// (quantize_row_q8_K_ref) for the K-quant kernels.
func quantizeQ8_K(x []float32, n, cols int, s *Scratch) quantAct {
	nb, ns := cols/kernels.QK, cols/16
	a := quantAct{q: s.int8s(n * cols), d: s.scales(n * nb), sums: s.int16s(n * ns)}
	for t := 0; t < n; t++ {
		kernels.QuantizeQ8_K(a.q[t*cols:(t+1)*cols], a.d[t*nb:(t+1)*nb], a.sums[t*ns:(t+1)*ns], x[t*cols:(t+1)*cols])
	}
	return a
}

package weights

import (
	"math"

	"chat/models/gguf"
	"chat/models/kernels"
)

// Q8_0: blocks of 32 int8 values with an f16 scale (block_q8_0).
var q8_0 = &blockKind{typ: gguf.TypeQ8_0, act: actQ8_0,
	mul: func(out []float32, w []byte, a quantAct, rows, cols, n int) {
		if n == 1 {
			kernels.MatVecQ8_0Bytes(out, w, a.q, a.d, rows, cols)
			return
		}
		kernels.MatMulQ8_0Bytes(out, w, a.q, a.d, rows, cols, n)
	}}

func init() { registerBlocks("q8_0", q8_0) }

// quantizeQ8_0 quantises n activation rows to Q8_0 the way ggml's x86 CPU
// backend does before a Q8_0, Q4_0 or Q5_0 product (quantize_row_q8_0 in
// ggml-cpu/arch/x86/quants.c): per block of 32, q = round-half-even(x ·
// 127/max|x|), and the scale max|x|/127 goes through f16 as block_q8_0
// stores it.
func quantizeQ8_0(x []float32, n, cols int, s *Scratch) quantAct {
	nb := cols / kernels.Q8Block
	q, d := s.int8s(n*cols), s.scales(n*nb)
	for b := range d {
		blk := x[b*kernels.Q8Block : (b+1)*kernels.Q8Block]
		qb := q[b*kernels.Q8Block : (b+1)*kernels.Q8Block]
		var amax float32
		for _, v := range blk {
			amax = max(amax, float32(math.Abs(float64(v))))
		}
		var id float32
		if amax != 0 {
			id = 127 / amax
		}
		d[b] = gguf.F16ToF32(gguf.F32ToF16(amax / 127))
		for j, v := range blk {
			qb[j] = int8(math.RoundToEven(float64(float32(v * id))))
		}
	}
	return quantAct{q: q, d: d}
}

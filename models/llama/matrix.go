package llama

import (
	"encoding/binary"
	"math"

	"chat/models/gguf"
	"chat/models/kernels"
)

// matrix is a [rows][cols] weight, row-major, either float32 (a view of an
// F32 tensor or dequantised at load) or kept as Q8_0 blocks: int8 values and
// one float32 scale per 32. A Q8_0 product quantizes the activations to
// Q8_0 as well and multiplies in integers, as ggml's CPU backend does
// (vec_dot_q8_0_q8_0), reading a quarter of the float32 bytes.
type matrix struct {
	rows, cols int
	f          []float32
	q          []int8
	d          []float32
}

// bytes is the size of the weights a product reads.
func (m *matrix) bytes() int64 {
	if m.q != nil {
		return int64(len(m.q)) + 4*int64(len(m.d))
	}
	return 4 * int64(len(m.f))
}

// rowRange is a view of rows r0..r1-1 (a fused projection split up).
func (m *matrix) rowRange(r0, r1 int) *matrix {
	v := &matrix{rows: r1 - r0, cols: m.cols}
	if m.q != nil {
		nb := m.cols / kernels.Q8Block
		v.q, v.d = m.q[r0*m.cols:r1*m.cols], m.d[r0*nb:r1*nb]
	} else {
		v.f = m.f[r0*m.cols : r1*m.cols]
	}
	return v
}

// mul computes out[t] = W·x[t] for n tokens; xq and xd are scratch of at
// least n*cols and n*cols/32 for the Q8_0 activations.
func (m *matrix) mul(out, x []float32, n int, xq []int8, xd []float32) {
	if m.q == nil {
		kernels.MatMul(out[:n*m.rows], m.f, x[:n*m.cols], m.rows, m.cols, n)
		return
	}
	cols, nb := m.cols, m.cols/kernels.Q8Block
	for t := 0; t < n; t++ {
		quantizeAct(xq[t*cols:(t+1)*cols], xd[t*nb:(t+1)*nb], x[t*cols:(t+1)*cols])
	}
	if n == 1 {
		kernels.MatVecQ8_0(out[:m.rows], m.q, m.d, xq, xd, m.rows, cols)
		return
	}
	// A batch takes the rows a block at a time, so that each block of
	// weights is read from memory once and from cache for the other
	// tokens. Each output is still one MatVecQ8_0 row, as in decoding.
	block := max(1, blockElems/cols)
	for r0 := 0; r0 < m.rows; r0 += block {
		r1 := min(r0+block, m.rows)
		q, d := m.q[r0*cols:r1*cols], m.d[r0*nb:r1*nb]
		for t := 0; t < n; t++ {
			kernels.MatVecQ8_0(out[t*m.rows+r0:t*m.rows+r1], q, d, xq[t*cols:(t+1)*cols], xd[t*nb:(t+1)*nb], r1-r0, cols)
		}
	}
}

// blockElems is the weight block a batched Q8_0 product keeps in cache:
// 256 KiB of int8, large enough for the kernels to split over threads.
// (A variable so that tests can make blocks small.)
var blockElems = 1 << 18

// quantizeAct quantizes activations to Q8_0 the way ggml's x86 CPU backend
// does before a Q8_0 product (quantize_row_q8_0 in
// ggml-cpu/arch/x86/quants.c): per block of 32, q = round-half-even(x *
// 127/max|x|), and the scale max|x|/127 goes through f16 as block_q8_0
// stores it.
func quantizeAct(q []int8, d []float32, x []float32) {
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
}

// row writes row r into out (the embedding lookup).
func (m *matrix) row(out []float32, r int) {
	if m.q == nil {
		copy(out, m.f[r*m.cols:(r+1)*m.cols])
		return
	}
	nb := m.cols / kernels.Q8Block
	q, d := m.q[r*m.cols:(r+1)*m.cols], m.d[r*nb:(r+1)*nb]
	for i := range out[:m.cols] {
		out[i] = d[i/kernels.Q8Block] * float32(q[i])
	}
}

// unpackQ8_0 splits GGUF Q8_0 blocks (f16 scale, 32 int8) into values and
// float32 scales. The int8 kernels need values in [-127, 127]; ggml's
// quantizer never writes -128, and a file that does is clamped.
func unpackQ8_0(raw []byte, q []int8, d []float32) {
	for b := range d {
		blk := raw[34*b : 34*b+34]
		d[b] = gguf.F16ToF32(binary.LittleEndian.Uint16(blk))
		for j, v := range blk[2:] {
			q[32*b+j] = max(int8(v), -127)
		}
	}
}

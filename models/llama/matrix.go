package llama

import (
	"encoding/binary"
	"math"

	"chat/models/gguf"
	"chat/models/kernels"
)

// matrix is a [rows][cols] weight, row-major, in one of four forms:
//
//   - float32 (a view of an F32 tensor, or dequantised at load); BF16
//     weights (widened at load) round the activations to bf16 first, as
//     ggml's vec_dot_bf16 takes them (vec_dot_type in ggml-cpu.c).
//   - F16 as the raw half bits, a view of the file (2 bytes a weight),
//     multiplied by kernels.MatVecF16/MatMulF16 with the activations rounded
//     to f16 first, as vec_dot_f16 takes them. Those kernels give the bits
//     of MatVec/MatMul on the widened weights, so keeping F16 unwidened
//     changes no result.
//   - Q8_0 blocks unpacked to int8 values and float32 scales (from Q8_0,
//     or exactly from Q5_0, whose values d·(q-16) are Q8_0 values): the
//     activations are quantized to Q8_0 too and multiplied in integers as
//     vec_dot_q8_0_q8_0 / vec_dot_q5_0_q8_0 do.
//   - raw Q4_0, Q4_K, Q5_K or Q6_K blocks, a view of the file, multiplied
//     by the kernels with Q8_0 (Q4_0) or Q8_K activations as llama.cpp
//     does.
type matrix struct {
	rows, cols int
	f          []float32
	h          []uint16  // F16 weights
	round      gguf.Type // TypeF16/TypeBF16: activations rounded to it; else none
	q          []int8
	d          []float32
	raw        []byte
	typ        gguf.Type // type of raw
}

// act is the scratch a product needs for its quantized or rounded
// activations, sized for the widest input of the batch.
type act struct {
	q    []int8    // Q8_0 / Q8_K values
	d    []float32 // their block scales
	sums []int16   // Q8_K sums per 16
	f    []float32 // f16/bf16-rounded copies
}

func newAct(n, widest int) act {
	return act{
		q:    make([]int8, n*widest),
		d:    make([]float32, n*(widest/kernels.Q8Block+1)),
		sums: make([]int16, n*(widest/16+1)),
		f:    make([]float32, n*widest),
	}
}

// rawType reports whether the kernels multiply blocks of t directly.
func rawType(t gguf.Type) bool {
	switch t {
	case gguf.TypeQ8_0, gguf.TypeQ4_0, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K:
		return true
	}
	return false
}

// bytes is the size of the weights a product reads.
func (m *matrix) bytes() int64 {
	switch {
	case m.raw != nil:
		return int64(len(m.raw))
	case m.q != nil:
		return int64(len(m.q)) + 4*int64(len(m.d))
	case m.h != nil:
		return 2 * int64(len(m.h))
	}
	return 4 * int64(len(m.f))
}

// rowBytes is the size of one raw row.
func (m *matrix) rowBytes() int {
	return m.cols / m.typ.BlockSize() * m.typ.BlockBytes()
}

// rowRange is a view of rows r0..r1-1 (a fused projection split up).
func (m *matrix) rowRange(r0, r1 int) *matrix {
	v := &matrix{rows: r1 - r0, cols: m.cols, round: m.round, typ: m.typ}
	if m.raw != nil {
		v.raw = m.raw[r0*m.rowBytes() : r1*m.rowBytes()]
	} else if m.q != nil {
		nb := m.cols / kernels.Q8Block
		v.q, v.d = m.q[r0*m.cols:r1*m.cols], m.d[r0*nb:r1*nb]
	} else if m.h != nil {
		v.h = m.h[r0*m.cols : r1*m.cols]
	} else {
		v.f = m.f[r0*m.cols : r1*m.cols]
	}
	return v
}

// mul computes out[t] = W·x[t] for n tokens, with a's scratch for the
// activations.
func (m *matrix) mul(out, x []float32, n int, a *act) {
	if m.raw != nil {
		m.mulRaw(out, x, n, a)
		return
	}
	if m.h != nil {
		x = roundAct(a.f[:n*m.cols], x[:n*m.cols], gguf.TypeF16)
		kernels.MatMulF16(out[:n*m.rows], m.h, x, m.rows, m.cols, n)
		return
	}
	if m.q == nil {
		if m.round != 0 {
			x = roundAct(a.f[:n*m.cols], x[:n*m.cols], m.round)
		}
		kernels.MatMul(out[:n*m.rows], m.f, x[:n*m.cols], m.rows, m.cols, n)
		return
	}
	xq, xd := a.q, a.d
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

// mulRaw is mul for raw blocks: Q4_0 takes ggml's x86 Q8_0 activations,
// the K-quants Q8_K ones (kernels.QuantizeQ8_K, quantize_row_q8_K_ref).
func (m *matrix) mulRaw(out, x []float32, n int, a *act) {
	cols, rows := m.cols, m.rows
	if m.typ == gguf.TypeQ4_0 || m.typ == gguf.TypeQ8_0 {
		nb := cols / kernels.Q8Block
		for t := 0; t < n; t++ {
			quantizeAct(a.q[t*cols:(t+1)*cols], a.d[t*nb:(t+1)*nb], x[t*cols:(t+1)*cols])
		}
		switch {
		case m.typ == gguf.TypeQ8_0 && n == 1:
			kernels.MatVecQ8_0Bytes(out[:rows], m.raw, a.q, a.d, rows, cols)
		case m.typ == gguf.TypeQ8_0:
			kernels.MatMulQ8_0Bytes(out[:n*rows], m.raw, a.q[:n*cols], a.d[:n*nb], rows, cols, n)
		case n == 1:
			kernels.MatVecQ4_0(out[:rows], m.raw, a.q, a.d, rows, cols)
		default:
			kernels.MatMulQ4_0(out[:n*rows], m.raw, a.q[:n*cols], a.d[:n*nb], rows, cols, n)
		}
		return
	}
	nb, ns := cols/kernels.QK, cols/16
	for t := 0; t < n; t++ {
		kernels.QuantizeQ8_K(a.q[t*cols:(t+1)*cols], a.d[t*nb:(t+1)*nb], a.sums[t*ns:(t+1)*ns], x[t*cols:(t+1)*cols])
	}
	q, d, sums := a.q[:n*cols], a.d[:n*nb], a.sums[:n*ns]
	switch {
	case m.typ == gguf.TypeQ4_K && n == 1:
		kernels.MatVecQ4_K(out[:rows], m.raw, q, d, sums, rows, cols)
	case m.typ == gguf.TypeQ4_K:
		kernels.MatMulQ4_K(out[:n*rows], m.raw, q, d, sums, rows, cols, n)
	case m.typ == gguf.TypeQ5_K && n == 1:
		kernels.MatVecQ5_K(out[:rows], m.raw, q, d, sums, rows, cols)
	case m.typ == gguf.TypeQ5_K:
		kernels.MatMulQ5_K(out[:n*rows], m.raw, q, d, sums, rows, cols, n)
	case m.typ == gguf.TypeQ6_K && n == 1:
		kernels.MatVecQ6_K(out[:rows], m.raw, q, d, sums, rows, cols)
	default:
		kernels.MatMulQ6_K(out[:n*rows], m.raw, q, d, sums, rows, cols, n)
	}
}

// roundAct rounds x to f16 or bf16 (round to nearest even) into dst.
func roundAct(dst, x []float32, t gguf.Type) []float32 {
	if t == gguf.TypeF16 {
		for i, v := range x {
			dst[i] = gguf.F16ToF32(gguf.F32ToF16(v))
		}
		return dst
	}
	for i, v := range x {
		dst[i] = gguf.BF16ToF32(f32ToBF16(v))
	}
	return dst
}

// f32ToBF16 is ggml_compute_fp32_to_bf16: round to nearest even, NaN kept
// quiet.
func f32ToBF16(f float32) uint16 {
	u := math.Float32bits(f)
	if u&0x7fffffff > 0x7f800000 {
		return uint16(u>>16 | 64)
	}
	return uint16((u + (0x7fff + (u >> 16 & 1))) >> 16)
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
	if m.raw != nil {
		rb := m.rowBytes()
		_ = gguf.Dequantize(m.typ, m.raw[r*rb:(r+1)*rb], out[:m.cols]) // sizes checked at load
		return
	}
	if m.h != nil {
		for i, h := range m.h[r*m.cols : (r+1)*m.cols] {
			out[i] = gguf.F16ToF32(h)
		}
		return
	}
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

// unpackQ5_0 turns GGUF Q5_0 blocks (f16 d, 32 high bits, 16 bytes of
// nibbles; value d·(q-16)) into the same int8 values and scales as Q8_0.
func unpackQ5_0(raw []byte, q []int8, d []float32) {
	for b := range d {
		blk := raw[22*b : 22*b+22]
		d[b] = gguf.F16ToF32(binary.LittleEndian.Uint16(blk))
		qh := binary.LittleEndian.Uint32(blk[2:])
		qs := blk[6:22]
		for j := 0; j < 16; j++ {
			lo := qs[j]&0xf | byte(qh>>j&1)<<4
			hi := qs[j]>>4 | byte(qh>>(j+16)&1)<<4
			q[32*b+j] = int8(lo) - 16
			q[32*b+j+16] = int8(hi) - 16
		}
	}
}

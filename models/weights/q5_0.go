package weights

import (
	"encoding/binary"

	"chat/models/gguf"
	"chat/models/kernels"
)

// Q5_0 is GGUF's Q5_0 (blocks of 32 5-bit values q-16 with an f16 scale,
// block_q5_0), which llama.cpp's K-quant mixes use for rows whose length is
// not a multiple of 256. Its values d·(q-16) are Q8_0 values, so it is
// unpacked at load into int8 blocks with float32 scales and multiplied by
// the int8 Q8_0 kernels with Q8_0 activations: their sums follow
// ggml_vec_dot_q5_0_q8_0 as the llama.cpp fixtures check (the raw-block
// kernels' float steps differ).
type Q5_0 struct {
	rows, cols int
	q          []int8    // [rows][cols]
	d          []float32 // [rows][cols/32]
}

func init() {
	register("q5_0", format{fromFloat: func(w []float32, rows, cols int) (Linear, error) {
		raw, err := quantizeBlocks(gguf.TypeQ5_0, w, cols)
		if err != nil {
			return nil, err
		}
		return newQ5_0(raw, rows, cols), nil
	}})
}

func newQ5_0(raw []byte, rows, cols int) *Q5_0 {
	m := &Q5_0{rows: rows, cols: cols, q: make([]int8, rows*cols), d: make([]float32, rows*cols/32)}
	for b := range m.d {
		blk := raw[22*b : 22*b+22]
		m.d[b] = gguf.F16ToF32(binary.LittleEndian.Uint16(blk))
		qh := binary.LittleEndian.Uint32(blk[2:])
		qs := blk[6:22]
		for j := 0; j < 16; j++ {
			lo := qs[j]&0xf | byte(qh>>j&1)<<4
			hi := qs[j]>>4 | byte(qh>>(j+16)&1)<<4
			m.q[32*b+j] = int8(lo) - 16
			m.q[32*b+j+16] = int8(hi) - 16
		}
	}
	return m
}

func (m *Q5_0) Rows() int      { return m.rows }
func (m *Q5_0) Cols() int      { return m.cols }
func (m *Q5_0) Format() string { return "q5_0" }
func (m *Q5_0) Bytes() int64   { return int64(len(m.q)) + 4*int64(len(m.d)) }

func (m *Q5_0) Mul(out, x []float32, n int, s *Scratch) {
	checkMul(m, out, x, n)
	a := quantizeQ8_0(x, n, m.cols, s)
	if n == 1 {
		kernels.MatVecQ8_0(out[:m.rows], m.q, m.d, a.q, a.d, m.rows, m.cols)
		return
	}
	kernels.MatMulQ8_0(out[:n*m.rows], m.q, m.d, a.q, a.d, m.rows, m.cols, n)
}

func (m *Q5_0) Row(dst []float32, r int) {
	nb := m.cols / 32
	q, d := m.q[r*m.cols:(r+1)*m.cols], m.d[r*nb:(r+1)*nb]
	for i := range dst[:m.cols] {
		dst[i] = d[i/32] * float32(q[i])
	}
}

func (m *Q5_0) Slice(r0, r1 int) Linear {
	checkSlice(m, r0, r1)
	nb := m.cols / 32
	return &Q5_0{rows: r1 - r0, cols: m.cols, q: m.q[r0*m.cols : r1*m.cols], d: m.d[r0*nb : r1*nb]}
}

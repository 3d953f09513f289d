package weights

import (
	"fmt"

	"chat/models/kernels"
)

// Int4 stores groups of G values along a row (32, 64 or 128) with one
// float32 scale each: scale = max(max|w_group|, 1e-8)/7, code =
// clamp(round(w/scale), -7, 7) + 8 (ties to even), two codes per byte, low
// nibble first; w' = (code-8)·scale.
type Int4 struct {
	rows, cols, g int
	packed        []byte    // [rows][⌈cols/2⌉]
	scale         []float32 // [rows][⌈cols/g⌉]
}

func init() {
	for _, g := range []int{32, 64, 128} {
		register(fmt.Sprintf("int4-g%d", g), format{fromFloat: func(w []float32, rows, cols int) (Linear, error) {
			return NewInt4(w, rows, cols, g)
		}})
	}
}

// NewInt4 quantises w in groups of g.
func NewInt4(w []float32, rows, cols, g int) (*Int4, error) {
	if g != 32 && g != 64 && g != 128 {
		return nil, fmt.Errorf("weights: int4: group size %d, want 32, 64 or 128", g)
	}
	rb, ng := (cols+1)/2, (cols+g-1)/g
	m := &Int4{rows: rows, cols: cols, g: g, packed: make([]byte, rows*rb), scale: make([]float32, rows*ng)}
	for r := 0; r < rows; r++ {
		row := w[r*cols : (r+1)*cols]
		p := m.packed[r*rb : (r+1)*rb]
		for j := 0; j < ng; j++ {
			grp := row[j*g : min((j+1)*g, cols)]
			amax := absMax(grp)
			if !finite(amax) {
				return nil, fmt.Errorf("weights: int4: row %d holds a non-finite weight", r)
			}
			s := max(amax, minAmax) / 7
			m.scale[r*ng+j] = s
			for i, v := range grp {
				c := j*g + i
				code := byte(int(roundClamp(v/s, 7)) + 8)
				p[c/2] |= code << (4 * (c & 1))
			}
		}
	}
	return m, nil
}

func (m *Int4) Rows() int      { return m.rows }
func (m *Int4) Cols() int      { return m.cols }
func (m *Int4) Format() string { return fmt.Sprintf("int4-g%d", m.g) }
func (m *Int4) Bytes() int64   { return int64(len(m.packed)) + 4*int64(len(m.scale)) }

// Mul dequantises and runs the float kernels (no int4 kernel yet): a batch
// dequantises the whole matrix once, a single row a block of rows at a time
// so each block is used while it is in L1.
func (m *Int4) Mul(out, x []float32, n int, s *Scratch) { mulDequant(m, out, x, n, s) }

func (m *Int4) Row(dst []float32, r int) { m.rowsTo(dst, r, r+1) }

// rowsTo writes rows [r0, r1) dequantised to dst, [r1-r0][cols].
func (m *Int4) rowsTo(dst []float32, r0, r1 int) {
	C, G := m.cols, m.g
	rb, ng := (C+1)/2, (C+G-1)/G
	for r := r0; r < r1; r++ {
		p := m.packed[r*rb : (r+1)*rb]
		d := dst[(r-r0)*C : (r-r0+1)*C]
		for j := 0; j < ng; j++ {
			var lut [16]float32
			s := m.scale[r*ng+j]
			for k := range lut {
				lut[k] = float32(k-8) * s
			}
			c0, c1 := j*G, min((j+1)*G, C) // c0 is even: G is
			pb, dd := p[c0/2:(c1+1)/2], d[c0:c1]
			i := 0
			for ; i+1 < len(dd); i += 2 {
				b := pb[i/2]
				dd[i], dd[i+1] = lut[b&15], lut[b>>4]
			}
			if i < len(dd) {
				dd[i] = lut[pb[i/2]&15]
			}
		}
	}
}

func (m *Int4) Slice(r0, r1 int) Linear {
	checkSlice(m, r0, r1)
	rb, ng := (m.cols+1)/2, (m.cols+m.g-1)/m.g
	return &Int4{rows: r1 - r0, cols: m.cols, g: m.g, packed: m.packed[r0*rb : r1*rb], scale: m.scale[r0*ng : r1*ng]}
}

// dequantRows is a format that can write a range of its rows as float32.
type dequantRows interface {
	Linear
	rowsTo(dst []float32, r0, r1 int)
}

// decodeBlock is how many weights a single-row product dequantises at a
// time: 16 KiB of float32, which stays in L1 between the dequantisation and
// the dot products.
const decodeBlock = 4096

// mulDequant is the product of a format without a kernel of its own.
func mulDequant(m dequantRows, out, x []float32, n int, s *Scratch) {
	checkMul(m, out, x, n)
	rows, cols := m.Rows(), m.Cols()
	if n > 1 {
		w := s.floats(rows * cols)
		m.rowsTo(w, 0, rows)
		kernels.MatMul(out[:n*rows], w, x[:n*cols], rows, cols, n)
		return
	}
	br := max(8, decodeBlock/cols/8*8)
	buf := s.floats(br * cols)
	for r0 := 0; r0 < rows; r0 += br {
		r1 := min(rows, r0+br)
		m.rowsTo(buf, r0, r1)
		kernels.MatVec(out[r0:r1], buf, x[:cols], r1-r0, cols)
	}
}

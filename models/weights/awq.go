package weights

import (
	"fmt"

	"chat/models/quant"
)

// AWQ is an int4-group matrix chosen by AWQ (models/quant.AWQ): the
// weights' input channels are scaled by s (larger where the calibration
// activations are larger) before quantization (each group's scale
// clip-searched), and the product divides its input by s channel by
// channel: out = Q·(x/s). Row is the effective weight float32(q·scale)/s.
type AWQ struct {
	q  *Int4
	in []float32 // s, [cols]
}

func init() {
	for _, g := range []int{32, 64, 128} {
		name := fmt.Sprintf("int4-g%d-awq", g)
		register(name, format{fromCalib: func(w []float32, rows, cols int, x []float32, n int) (Linear, error) {
			r, err := quant.AWQ(w, rows, cols, x, n, quant.AWQOptions{Group: g})
			if err != nil {
				return nil, fmt.Errorf("weights: %w", err)
			}
			return &AWQ{q: NewInt4Codes(r.Q.Packed, r.Q.Scale, rows, cols, g, name), in: r.InScale}, nil
		}})
	}
}

func (m *AWQ) Rows() int      { return m.q.rows }
func (m *AWQ) Cols() int      { return m.q.cols }
func (m *AWQ) Format() string { return m.q.format }
func (m *AWQ) Bytes() int64   { return m.q.Bytes() + 4*int64(len(m.in)) }

func (m *AWQ) Mul(out, x []float32, n int, s *Scratch) {
	checkMul(m, out, x, n)
	c := m.q.cols
	xs := s.floats(n * c)
	for t := 0; t < n; t++ {
		for i, v := range x[t*c : (t+1)*c] {
			xs[t*c+i] = v / m.in[i]
		}
	}
	m.q.Mul(out, xs, n, s)
}

func (m *AWQ) Row(dst []float32, r int) {
	m.q.Row(dst, r)
	for i := range dst[:m.q.cols] {
		dst[i] /= m.in[i]
	}
}

func (m *AWQ) Slice(r0, r1 int) Linear {
	return &AWQ{q: m.q.Slice(r0, r1).(*Int4), in: m.in}
}

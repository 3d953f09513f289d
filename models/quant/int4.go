package quant

import "fmt"

// Int4Groups stores 4-bit codes, two per byte, with one float32 scale per
// group of G consecutive values of a row (the last group of a row may be
// shorter; groups never span rows).
//
// The codes are symmetric, in [-7, 7], scale = max(max|w_group|, 1e-8)/7,
// q = round(w/scale) ties to even. The -8 code goes unused: a symmetric range
// keeps zero exact and the largest value of either sign within half a step,
// where ggml's Q4_0 [-8, 7] trick gains one level on one side only and clips
// the other side by a full step.
//
// Row r's codes start at byte r·⌈C/2⌉; value c sits in byte c/2, low nibble
// for even c, stored as q+8 (so 1..15).
type Int4Groups struct {
	R, C, G int
	Packed  []byte    // [R][⌈C/2⌉]
	Scale   []float32 // [R][⌈C/G⌉]
}

// NewInt4Groups quantizes w with groups of g values (32, 64 or 128).
func NewInt4Groups(w []float32, rows, cols, g int) (*Int4Groups, error) {
	if g != 32 && g != 64 && g != 128 {
		return nil, fmt.Errorf("quant: int4: group size %d, want 32, 64 or 128", g)
	}
	if err := checkShape(fmt.Sprintf("int4-g%d", g), w, rows, cols); err != nil {
		return nil, err
	}
	rb, ng := (cols+1)/2, (cols+g-1)/g
	m := &Int4Groups{R: rows, C: cols, G: g, Packed: make([]byte, rows*rb), Scale: make([]float32, rows*ng)}
	for r := 0; r < rows; r++ {
		row := w[r*cols : (r+1)*cols]
		p := m.Packed[r*rb : (r+1)*rb]
		for j := 0; j < ng; j++ {
			grp := row[j*g : min((j+1)*g, cols)]
			amax := absMax(grp)
			if !finite(amax) {
				return nil, fmt.Errorf("quant: int4: row %d holds a non-finite weight", r)
			}
			s := max(amax, minAmax) / 7
			m.Scale[r*ng+j] = s
			for i, v := range grp {
				c := j*g + i
				code := byte(int(roundClamp(v/s, 7)) + 8)
				p[c/2] |= code << (4 * (c & 1))
			}
		}
	}
	return m, nil
}

func (m *Int4Groups) Rows() int      { return m.R }
func (m *Int4Groups) Cols() int      { return m.C }
func (m *Int4Groups) Format() string { return fmt.Sprintf("int4-g%d", m.G) }
func (m *Int4Groups) Bytes() int64   { return int64(len(m.Packed)) + 4*int64(len(m.Scale)) }

// DequantizeRows writes float32(q)·scale of each value's group.
func (m *Int4Groups) DequantizeRows(dst []float32, r0, r1 int) {
	C, G := m.C, m.G
	rb, ng := (C+1)/2, (C+G-1)/G
	dst = dst[:(r1-r0)*C]
	for r := r0; r < r1; r++ {
		p := m.Packed[r*rb : (r+1)*rb]
		d := dst[(r-r0)*C : (r-r0+1)*C]
		for j := 0; j < ng; j++ {
			// The group's 16 possible values, then two lookups per byte.
			var lut [16]float32
			s := m.Scale[r*ng+j]
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

package quant

import (
	"fmt"

	"chat/models/kernels"
)

// NF4Blocks stores QLoRA's 4-bit NormalFloat (Dettmers et al. 2023): each
// value is one of the 16 levels kernels.NF4Levels (quantiles of N(0, 1)
// scaled to [-1, 1], with 0 exact) times its block's absmax. Blocks are B
// consecutive values of a row (QLoRA's default B is 64; the last block of a
// row may be shorter). Codes are packed as Int4Groups': two per byte, low
// nibble first, row r at byte r·⌈C/2⌉; so kernels.MatVecLUT4 with
// &kernels.NF4Levels multiplies by them without unpacking. Unlike QLoRA,
// the absmax scales stay float32 (no double quantization).
type NF4Blocks struct {
	R, C, B int
	Packed  []byte    // [R][⌈C/2⌉]
	Scale   []float32 // [R][⌈C/B⌉], the block's max|w| (at least 1e-8)
}

// NewNF4Blocks quantizes w with blocks of b values (32, 64 or 128): scale =
// max(max|w_block|, 1e-8), code = the level nearest w/scale.
func NewNF4Blocks(w []float32, rows, cols, b int) (*NF4Blocks, error) {
	if b != 32 && b != 64 && b != 128 {
		return nil, fmt.Errorf("quant: nf4: block size %d, want 32, 64 or 128", b)
	}
	if err := checkMatrix(fmt.Sprintf("nf4-g%d", b), w, rows, cols); err != nil {
		return nil, err
	}
	rb, nb := (cols+1)/2, (cols+b-1)/b
	m := &NF4Blocks{R: rows, C: cols, B: b, Packed: make([]byte, rows*rb), Scale: make([]float32, rows*nb)}
	for r := 0; r < rows; r++ {
		row := w[r*cols : (r+1)*cols]
		p := m.Packed[r*rb : (r+1)*rb]
		for j := 0; j < nb; j++ {
			blk := row[j*b : min((j+1)*b, cols)]
			s := max(maxAbs(blk), calibMinAmax)
			m.Scale[r*nb+j] = s
			for i, v := range blk {
				c := j*b + i
				p[c/2] |= NearestNF4(v/s) << (4 * (c & 1))
			}
		}
	}
	return m, nil
}

// nf4Mid holds the midpoints between neighbouring NF4 levels.
var nf4Mid = func() (m [15]float32) {
	for i := range m {
		m[i] = (kernels.NF4Levels[i] + kernels.NF4Levels[i+1]) / 2
	}
	return
}()

// NearestNF4 returns the code of the NF4 level nearest v (v in [-1, 1];
// values beyond clamp to the end levels; a tie goes to the lower level).
func NearestNF4(v float32) byte {
	lo, hi := 0, 15 // the answer is in [lo, hi]
	for lo < hi {
		mid := (lo + hi) / 2
		if v > nf4Mid[mid] {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return byte(lo)
}

func (m *NF4Blocks) Format() string { return fmt.Sprintf("nf4-g%d", m.B) }

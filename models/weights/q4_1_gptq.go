package weights

import (
	"encoding/binary"
	"fmt"

	"chat/models/gguf"
	"chat/models/quant"
)

// q4_1-gptq: Q4_1 blocks (q4_1.go: 32 codes in [0, 15], f16 scale d and
// minimum m, value d·q + m) whose codes, scales and minima GPTQ chooses
// (models/quant.GPTQMin, asymmetric groups as in the GPTQ paper's code).
// The same kernels as q4_1 multiply it, with Q8_0 activations.
func init() {
	register("q4_1-gptq", format{fromCalib: func(w []float32, rows, cols int, x []float32, n int) (Linear, error) {
		if cols%32 != 0 {
			return nil, &ShapeError{Format: "q4_1-gptq", Block: 32, Cols: cols}
		}
		q, err := quant.GPTQMin(w, rows, cols, x, n, quant.GPTQOptions{Group: 32})
		if err != nil {
			return nil, fmt.Errorf("weights: %w", err)
		}
		m := newInterleaved(gguf.TypeQ4_1, q4_1Blocks(q), rows, cols)
		m.format = "q4_1-gptq"
		return m, nil
	}})
}

// q4_1Blocks writes q (groups of 32) as block_q4_1s: f16 d, f16 m, then
// 16 bytes holding codes j (low nibble) and j+16 (high nibble).
func q4_1Blocks(q *quant.Int4MinCodes) []byte {
	rows, cols := q.Rows, q.Cols
	nb, rb := cols/32, (cols+1)/2
	raw := make([]byte, rows*nb*20)
	code := func(r, c int) byte { return q.Packed[r*rb+c/2] >> (4 * (c & 1)) & 15 }
	for r := 0; r < rows; r++ {
		for b := 0; b < nb; b++ {
			blk := raw[(r*nb+b)*20:]
			binary.LittleEndian.PutUint16(blk, gguf.F32ToF16(q.D[r*nb+b]))
			binary.LittleEndian.PutUint16(blk[2:], gguf.F32ToF16(q.M[r*nb+b]))
			for j := 0; j < 16; j++ {
				blk[4+j] = code(r, b*32+j) | code(r, b*32+j+16)<<4
			}
		}
	}
	return raw
}

package weights

import (
	"fmt"

	"chat/models/kernels"
	"chat/models/quant"
)

// NF4 is QLoRA's 4-bit NormalFloat (models/quant.NewNF4Blocks): each value
// one of 16 levels (kernels.NF4Levels) times its group's max|w|, in groups
// of 32, 64 (QLoRA's) or 128 values, with int4's layout and kernels
// (int4.go): the product is bitwise that of the dequantised float32 matrix.
func init() {
	for _, g := range []int{32, 64, 128} {
		register(fmt.Sprintf("nf4-g%d", g), format{fromFloat: func(w []float32, rows, cols int) (Linear, error) {
			q, err := quant.NewNF4Blocks(w, rows, cols, g)
			if err != nil {
				return nil, fmt.Errorf("weights: %w", err)
			}
			return &Int4{rows: rows, cols: cols, g: g, packed: q.Packed, scale: q.Scale,
				levels: &kernels.NF4Levels, format: q.Format()}, nil
		}})
	}
}

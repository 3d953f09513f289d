package weights

import (
	"fmt"

	"chat/models/quant"
)

// int4-gG-gptq: int4 groups (int4.go's layout, codes and kernels) chosen by
// GPTQ (models/quant.GPTQ): each column's rounding error is spread over the
// columns not yet quantised, weighted by the inverse Hessian of the layer's
// output error on the calibration activations; codes use all 16 levels of
// the int4 table ([-8, 7]) and scales are searched and refit. Dequantised,
// it is an int4 matrix like round-to-nearest's, so the product is bitwise
// that of the dequantised float32 matrix.
func init() {
	for _, g := range []int{32, 64, 128} {
		name := fmt.Sprintf("int4-g%d-gptq", g)
		register(name, format{fromCalib: func(w []float32, rows, cols int, x []float32, n int) (Linear, error) {
			q, err := quant.GPTQ(w, rows, cols, x, n, quant.GPTQOptions{Group: g})
			if err != nil {
				return nil, fmt.Errorf("weights: %w", err)
			}
			return NewInt4Codes(q.Packed, q.Scale, rows, cols, g, name), nil
		}})
	}
}

package weights

import "chat/models/gguf"

// Q4_1, Q5_1 and the other GGUF types without a kernel here are widened to
// float32 at load: they compute exactly on their dequantised values but read
// 4 bytes a weight.
func widen(t gguf.Type, raw []byte, rows, cols int) (Linear, error) {
	w := make([]float32, rows*cols)
	if err := gguf.Dequantize(t, raw, w); err != nil {
		return nil, err
	}
	return &F32{rows: rows, cols: cols, w: w}, nil
}

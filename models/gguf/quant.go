package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
)

// QuantizeQ8_0 encodes x (a multiple of 32 long) as Q8_0 blocks the way
// ggml's reference quantizer does (ggml-quants.c quantize_row_q8_0_ref):
// d = max|x|/127 in float32, q = roundf(x/d) (half away from zero), and d is
// stored as f16.
func QuantizeQ8_0(x []float32) ([]byte, error) {
	if len(x)%32 != 0 {
		return nil, fmt.Errorf("gguf: q8_0 needs a multiple of 32 values, got %d", len(x))
	}
	out := make([]byte, len(x)/32*34)
	for i := 0; i < len(x)/32; i++ {
		blk := x[i*32 : (i+1)*32]
		o := out[i*34 : (i+1)*34]
		var amax float32
		for _, v := range blk {
			if a := float32(math.Abs(float64(v))); a > amax {
				amax = a
			}
		}
		d := amax / 127
		var id float32
		if d != 0 {
			id = 1 / d
		}
		binary.LittleEndian.PutUint16(o, F32ToF16(d))
		for j, v := range blk {
			o[2+j] = byte(int8(math.Round(float64(float32(v * id)))))
		}
	}
	return out, nil
}

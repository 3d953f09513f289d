package kernels

import "fmt"

// Int4 groups (models/quant's Int4Groups layout, lut4.go) times a Q8_0
// activation (QuantizeQ8_0) in integer arithmetic: the weights' codes q+8
// (q in [-8, 7], the quantizer uses [-7, 7]) multiply the int8 activation
// exactly, and each 32-value block adds float32(lane)·(scale·xd) to 8 float
// lanes, as the Q4_0 product does. Faster than MatVecLUT4's float
// activations (no float per weight), at the cost of the activation's
// quantization error (about 1% of a product's size); results are not those
// of the dequantized float weights.
//
// Lanes: the codes of a 32-value block are bytes k = 0..15, value 2k in the
// low nibble and 2k+1 in the high one. Lane l < 4 is the dot of the low
// nibbles of bytes 4l..4l+3 (values 8l, 8l+2, 8l+4, 8l+6) with their x; lane
// l+4 that of the high nibbles (values 8l+1, ..., 8l+7). Block b adds
// float32(float32(lane)·float32(scale[b/(group/32)]·xd[b])) to lane l's
// accumulator; the row's result is hsum8 of the lanes. The assembly keeps
// this order, so Go and assembly agree bitwise.

// MatVecInt4Q8 computes out[r] = Σ_b scale[r][b/(group/32)]·xd[b]·Σ_{i<32}
// (code_i-8)·xq[32b+i] for r < rows: packed and scale as MatVecLUT4's int4
// (rows of cols/2 bytes, [rows][⌈cols/group⌉] scales), (xq, xd) from
// QuantizeQ8_0. cols must be a multiple of 32 and group 32, 64 or 128.
func MatVecInt4Q8(out []float32, packed []byte, scale []float32, group int, xq []int8, xd []float32, rows, cols int) {
	checkInt4Q8("MatVecInt4Q8", out, packed, scale, group, xq, xd, rows, cols, 1)
	runBlocksScaled(opMatVecI4Q8, out, packed, scale, group/Q8Block, xq, xd, nil, rows, cols)
}

// MatMulInt4Q8 is MatVecInt4Q8 for n tokens (xq [n][cols], xd
// [n][cols/32], each token quantized with QuantizeQ8_0; out [n][rows]),
// bitwise equal to n calls.
func MatMulInt4Q8(out []float32, packed []byte, scale []float32, group int, xq []int8, xd []float32, rows, cols, n int) {
	checkInt4Q8("MatMulInt4Q8", out, packed, scale, group, xq, xd, rows, cols, n)
	runBatch(&batch{op: opMatVecI4Q8, out: out, wb: packed, sw: scale, gb: group / Q8Block, qx: xq, dx: xd, rows: rows, cols: cols, n: n})
}

func checkInt4Q8(fn string, out []float32, packed []byte, scale []float32, group int, xq []int8, xd []float32, rows, cols, n int) {
	ng := 0
	if group > 0 {
		ng = (cols + group - 1) / group
	}
	if rows < 0 || cols < 0 || n < 0 || cols%Q8Block != 0 || (group != 32 && group != 64 && group != 128) ||
		len(out) < n*rows || len(packed) < rows*cols/2 || len(scale) < rows*ng || len(xq) < n*cols || len(xd) < n*cols/Q8Block {
		panic(fmt.Sprintf("kernels.%s: rows=%d cols=%d (a multiple of 32) n=%d group=%d (32, 64 or 128) with len(out)=%d len(packed)=%d len(scale)=%d len(xq)=%d len(xd)=%d",
			fn, rows, cols, n, group, len(out), len(packed), len(scale), len(xq), len(xd)))
	}
}

// dotInt4Q8Go is one row: sc its group scales, gb blocks per group.
func dotInt4Q8Go(row []byte, sc []float32, gb int, xq []int8, xd []float32) float32 {
	var acc [8]float32
	for b := range xd {
		s := float32(sc[b/gb] * xd[b])
		qs := row[b*16 : b*16+16]
		x := xq[b*32 : b*32+32]
		for l := 0; l < 4; l++ {
			var ev, od int32
			for k := 4 * l; k < 4*l+4; k++ {
				ev += (int32(qs[k]&15) - 8) * int32(x[2*k])
				od += (int32(qs[k]>>4) - 8) * int32(x[2*k+1])
			}
			acc[l] += float32(float32(ev) * s)
			acc[l+4] += float32(float32(od) * s)
		}
	}
	return hsum8(&acc)
}

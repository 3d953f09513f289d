package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"unsafe"

	"chat/models/gguf"
)

// Interleaved blocks: 32-value integer blocks of 16 rows at a time laid out
// so that one 512-bit register holds the same 4 values of 16 rows ("rows in
// lanes", as llama.cpp's repacked q4_0_8x8/q8_0_4x4 CPU layouts do for its
// GEMMs). A product then multiplies a whole block of 16 rows by one token
// with 8 VPDPBUSD, each broadcasting 4 bytes of the token, and every
// (row, token) keeps one exact int32 sum per block in its own lane: no
// horizontal work, one float step per block, and each weight register is
// reused for every token of a small batch. Weights are repacked once at
// load (GGUF Q8_0, Q5_0, Q4_0, IQ4_NL, Q4_1 and Q5_1 blocks, int4 groups).
//
// Every product, on every implementation and for any number of tokens,
// gives each (row r, token t) the float32 sum ggml's scalar reference
// (ggml_vec_dot_q8_0_q8_0 and friends) computes:
//
//	acc = 0; for each block b in order: acc = fma(float32(isum_b), float32(d_rb · xd_tb), acc)
//
// with isum_b the exact integer dot of the block's weight values and the
// token's Q8_0 values, d_rb the block's weight scale, xd_tb the token's, and
// fma one rounding (as llama.cpp's repacked q4_0_8x8 GEMV). So a batch gives
// every sequence the bits it gets alone.
//
// Q4_1 and Q5_1 (value = d·q + m, q unsigned; IL4M, IL8M) add each block's
// min term with one more float step, from the token's exact block sum
// xsum = Σ of its Q8_0 values:
//
//	acc = fma(float32(isum_b), float32(d_rb · xd_tb), acc)
//	acc = fma(m_rb, float32(xd_tb · float32(xsum_tb)), acc)
//
// llama.cpp's ggml_vec_dot_q4_1_q8_1 has the same terms (d_w·d_x·Σq·x +
// m_w·s_x with s_x = d_x·Σx) but sums them in its own float order.
//
// For Q8_0 and Q5_0, which llama.cpp
// does not repack on x86, its ggml_vec_dot_q8_0_q8_0 (one token) and
// llamafile's tinyBLAS_Q0_AVX (batches) keep 8 float lanes per row instead
// (lane k: the values 4k..4k+3 of every block, added at the end as
// hsum_float_8 does): the results agree to float32 rounding, not bitwise,
// and the difference grows through Q8_0's rounding of later activations
// (student.pt Q8_0: top-2 logit gaps up to 0.032 apart). Commit 1426cca
// took llama.cpp's order for IL8 (then 1e-7 to 0.012 apart); it was
// reverted because 8 float lanes per (row, token) cost a batched product
// about 2× (Q8_0 prefill fell from ~2.4× llama.cpp's speed to ~0.9×), and
// attention's order, which llama.cpp takes differently in a prefill and in
// a decode step, still parts the greedy ids at near ties.
//
// Layout of a row group (rows 16g..16g+15) and block b, groups then blocks
// in order:
//
//   - IL8 (Q8_0, Q5_0): 16 f16 scales (32 bytes), then 8 quads of 64 bytes;
//     quad k holds each row's values 4k..4k+3 as bytes value+128 (row r at
//     bytes 4r..4r+3 of the quad). 544 bytes.
//   - IL4 (Q4_0): 16 f16 scales, then 4 quads of 64 bytes; quad j holds each
//     row's bytes 4j..4j+3 of GGUF's nibbles: low nibble = value 4j+m, high
//     nibble = value 16+4j+m, each nibble value+8. 288 bytes.
//   - IL4G (int4 groups): the 4 quads only (256 bytes); the float32 scale of
//     each group of G values (a multiple of 32) is in a separate array,
//     [groups of 16 rows][cols/G][16].
//   - IL4NL (IQ4_NL): IL4's layout with GGUF's nibbles as they are, indices
//     into gguf.IQ4NLValues; the tiles look them up (VPSHUFB) as level+128
//     for VPDPBUSD, or as the signed level for AVX2's sign trick. The
//     file's 288 bytes, where widening to IL8 took 544.
//   - IL4M (Q4_1): 16 f16 scales, 16 f16 mins, then IL4's 4 quads of
//     GGUF's nibbles as they are (unsigned, no offset). The file's 320 bytes.
//   - IL8M (Q5_1): 16 f16 scales, 16 f16 mins, then IL8's 8 quads of the
//     5-bit values as unsigned bytes. 576 bytes, 1.5× the file (as IL8 is
//     for Q5_0), where widening to float32 took 2048.
//
// Rows past the last in the last group are zero (scale 0).

// ILKind is a format of interleaved blocks.
type ILKind uint8

const (
	IL8   ILKind = iota // int8 values, an f16 scale per block
	IL4                 // 4-bit values, an f16 scale per block
	IL4G                // 4-bit values, a float32 scale per group of blocks
	IL4NL               // 4-bit indices into gguf.IQ4NLValues, an f16 scale per block
	IL4M                // unsigned 4-bit values, an f16 scale and min per block
	IL8M                // unsigned 5-bit values in bytes, an f16 scale and min per block
)

// ILRows is the rows of a row group.
const ILRows = 16

// ilBlockBytes is the bytes of one block of one row group.
func ilBlockBytes(k ILKind) int {
	switch k {
	case IL8:
		return 32 + 8*64
	case IL4, IL4NL:
		return 32 + 4*64
	case IL4M:
		return 64 + 4*64
	case IL8M:
		return 64 + 8*64
	}
	return 4 * 64
}

// ilHdr is the bytes of k's per-block header: f16 scales, then (IL4M,
// IL8M) f16 mins.
func ilHdr(k ILKind) int {
	switch k {
	case IL4G:
		return 0
	case IL4M, IL8M:
		return 64
	}
	return 32
}

// hasMin reports whether k's blocks have a min term.
func hasMin(k ILKind) bool { return k == IL4M || k == IL8M }

// ilSumMul is the multiple of a token block's Σq that the activation stores
// with it: -off for the formats whose values are stored value+off (the
// tiles' int32 accumulators start there), Σq itself for the min formats
// (their min term).
func ilSumMul(k ILKind) int32 {
	switch k {
	case IL8, IL4NL:
		return -128
	case IL4M, IL8M:
		return 1
	}
	return -8
}

// ILBytes is the length of a [rows][cols] matrix in format k.
func ILBytes(k ILKind, rows, cols int) int {
	return (rows + ILRows - 1) / ILRows * (cols / Q8Block) * ilBlockBytes(k)
}

// ILScales is the length of an IL4G matrix's scale array for groups of g.
func ILScales(rows, cols, g int) int {
	return (rows + ILRows - 1) / ILRows * ((cols + g - 1) / g) * ILRows
}

func checkILShape(fn string, k ILKind, w []byte, rows, cols int) {
	if rows < 0 || cols < 0 || cols%Q8Block != 0 || k > IL8M || len(w) < ILBytes(k, rows, cols) {
		panic(fmt.Sprintf("kernels.%s: format %d rows=%d cols=%d (a multiple of %d) with len(w)=%d", fn, k, rows, cols, Q8Block, len(w)))
	}
}

// ilBlock returns row group g's block b.
func ilBlock(k ILKind, w []byte, nb, g, b int) []byte {
	bb := ilBlockBytes(k)
	return w[(g*nb+b)*bb : (g*nb+b+1)*bb]
}

// PackILQ8_0 writes GGUF Q8_0 blocks (raw, [rows][cols/32] blocks of 34
// bytes) into dst as IL8.
func PackILQ8_0(dst, raw []byte, rows, cols int) {
	checkILShape("PackILQ8_0", IL8, dst, rows, cols)
	packIL(IL8, dst, rows, cols, func(blk []byte, i, r, b int) {
		src := raw[(r*(cols/Q8Block)+b)*Q8_0Bytes:]
		blk[2*i], blk[2*i+1] = src[0], src[1]
		for k := 0; k < 8; k++ {
			v := binary.LittleEndian.Uint32(src[2+4*k:])
			binary.LittleEndian.PutUint32(blk[32+64*k+4*i:], v^0x80808080)
		}
	})
}

// PackILQ5_0 writes GGUF Q5_0 blocks (22 bytes: f16 d, 4 bytes of fifth
// bits, 16 bytes of nibbles; value = 5 bits - 16) into dst as IL8: a Q5_0
// block is a Q8_0 block with values in [-16, 15].
func PackILQ5_0(dst, raw []byte, rows, cols int) {
	checkILShape("PackILQ5_0", IL8, dst, rows, cols)
	packIL(IL8, dst, rows, cols, func(blk []byte, i, r, b int) {
		src := raw[(r*(cols/Q8Block)+b)*Q5_0Bytes:]
		blk[2*i], blk[2*i+1] = src[0], src[1]
		qh := binary.LittleEndian.Uint32(src[2:])
		for j := 0; j < 16; j++ {
			lo := int8(src[6+j]&15|byte(qh>>j&1)<<4) - 16
			hi := int8(src[6+j]>>4|byte(qh>>(j+16)&1)<<4) - 16
			blk[32+(j/4)*64+4*i+j%4] = byte(lo) ^ 0x80
			blk[32+((j+16)/4)*64+4*i+j%4] = byte(hi) ^ 0x80
		}
	})
}

// PackILQ4_0 writes GGUF Q4_0 blocks (18 bytes: f16 d, 16 bytes of nibbles)
// into dst as IL4.
func PackILQ4_0(dst, raw []byte, rows, cols int) { packIL4("PackILQ4_0", IL4, dst, raw, rows, cols) }

// PackILIQ4_NL writes GGUF IQ4_NL blocks (block_iq4_nl: f16 d, 16 bytes of
// nibbles indexing gguf.IQ4NLValues; Q4_0's block layout) into dst as
// IL4NL. ggml's ggml_vec_dot_iq4_nl_q8_0 is Q8_0's product of the levels:
// the block's integer dot with Q8_0 activations times d_w·d_x.
func PackILIQ4_NL(dst, raw []byte, rows, cols int) {
	packIL4("PackILIQ4_NL", IL4NL, dst, raw, rows, cols)
}

// PackILQ4_1 writes GGUF Q4_1 blocks (20 bytes: f16 d, f16 m, 16 bytes of
// nibbles) into dst as IL4M.
func PackILQ4_1(dst, raw []byte, rows, cols int) {
	checkILShape("PackILQ4_1", IL4M, dst, rows, cols)
	packIL(IL4M, dst, rows, cols, func(blk []byte, i, r, b int) {
		src := raw[(r*(cols/Q8Block)+b)*Q4_1Bytes:]
		blk[2*i], blk[2*i+1], blk[32+2*i], blk[33+2*i] = src[0], src[1], src[2], src[3]
		for j := 0; j < 4; j++ {
			copy(blk[64+64*j+4*i:64+64*j+4*i+4], src[4+4*j:8+4*j])
		}
	})
}

// PackILQ5_1 writes GGUF Q5_1 blocks (24 bytes: f16 d, f16 m, 4 bytes of
// fifth bits, 16 bytes of nibbles) into dst as IL8M.
func PackILQ5_1(dst, raw []byte, rows, cols int) {
	checkILShape("PackILQ5_1", IL8M, dst, rows, cols)
	packIL(IL8M, dst, rows, cols, func(blk []byte, i, r, b int) {
		src := raw[(r*(cols/Q8Block)+b)*Q5_1Bytes:]
		blk[2*i], blk[2*i+1], blk[32+2*i], blk[33+2*i] = src[0], src[1], src[2], src[3]
		qh := binary.LittleEndian.Uint32(src[4:])
		for j := 0; j < 16; j++ {
			blk[64+(j/4)*64+4*i+j%4] = src[8+j]&15 | byte(qh>>j&1)<<4
			blk[64+((j+16)/4)*64+4*i+j%4] = src[8+j]>>4 | byte(qh>>(j+16)&1)<<4
		}
	})
}

// packIL4 copies 18-byte blocks of an f16 scale and 16 bytes of nibbles
// into dst as k (IL4 or IL4NL).
func packIL4(fn string, k ILKind, dst, raw []byte, rows, cols int) {
	checkILShape(fn, k, dst, rows, cols)
	packIL(k, dst, rows, cols, func(blk []byte, i, r, b int) {
		src := raw[(r*(cols/Q8Block)+b)*Q4_0Bytes:]
		blk[2*i], blk[2*i+1] = src[0], src[1]
		for j := 0; j < 4; j++ {
			copy(blk[32+64*j+4*i:32+64*j+4*i+4], src[2+4*j:6+4*j])
		}
	})
}

// packIL calls put for every row r (slot i of its group) and block b with
// the group's block; the padding rows of a last, partial group are cleared
// to zero values and scales.
func packIL(k ILKind, dst []byte, rows, cols int, put func(blk []byte, i, r, b int)) {
	nb := cols / Q8Block
	if rows%ILRows != 0 {
		g := rows / ILRows
		clearIL(k, dst[g*nb*ilBlockBytes(k):ILBytes(k, rows, cols)])
	}
	for g := 0; g*ILRows < rows; g++ {
		for b := 0; b < nb; b++ {
			blk := ilBlock(k, dst, nb, g, b)
			for i := 0; i < ILRows && g*ILRows+i < rows; i++ {
				put(blk, i, g*ILRows+i, b)
			}
		}
	}
}

// PackILInt4 writes int4 groups (lut4.go's layout: codes q+8, value c of a
// row in byte c/2, low nibble first; scale [rows][cols/g]) into dst as IL4G
// and their scales into gs (ILScales long).
func PackILInt4(dst []byte, gs []float32, packed []byte, scale []float32, g, rows, cols int) {
	checkILShape("PackILInt4", IL4G, dst, rows, cols)
	if g <= 0 || g%Q8Block != 0 || len(gs) < ILScales(rows, cols, g) {
		panic(fmt.Sprintf("kernels.PackILInt4: group %d with len(gs)=%d", g, len(gs)))
	}
	nb, ng, rb := cols/Q8Block, (cols+g-1)/g, cols/2
	clearIL(IL4G, dst[:ILBytes(IL4G, rows, cols)])
	clear(gs[:ILScales(rows, cols, g)])
	for r := 0; r < rows; r++ {
		i := r % ILRows
		for j := 0; j < ng; j++ {
			gs[((r/ILRows)*ng+j)*ILRows+i] = scale[r*ng+j]
		}
		row := packed[r*rb : (r+1)*rb]
		for b := 0; b < nb; b++ {
			blk := ilBlock(IL4G, dst, nb, r/ILRows, b)
			for v := 0; v < 16; v++ {
				c0, c1 := 32*b+v, 32*b+16+v
				lo := row[c0/2] >> (4 * (c0 & 1)) & 15
				hi := row[c1/2] >> (4 * (c1 & 1)) & 15
				blk[(v/4)*64+4*i+v%4] = lo | hi<<4
			}
		}
	}
}

// clearIL zeroes a packed matrix: scales and mins 0, weight bytes at value
// 0 (IL4NL: index 8, level 1, times the zero scale).
func clearIL(k ILKind, w []byte) {
	fill := byte(0x88)
	switch k {
	case IL8:
		fill = 0x80
	case IL4M, IL8M:
		fill = 0
	}
	for i := range w {
		w[i] = fill
	}
	bb, h := ilBlockBytes(k), ilHdr(k)
	for o := 0; h > 0 && o < len(w); o += bb {
		clear(w[o : o+h])
	}
}

// ILRow writes row r dequantized: value·scale (+ min) in float32, as
// ggml dequantizes.
func ILRow(k ILKind, dst []float32, w []byte, gs []float32, g, r, cols int) {
	var vals [Q8Block]int8
	for b := 0; b < cols/Q8Block; b++ {
		s := ilBlockValues(k, vals[:], w, gs, g, r, cols, b)
		if hasMin(k) {
			m := ilBlockMin(k, w, r, cols, b)
			for j, v := range vals {
				dst[32*b+j] = float32(float32(v)*s) + m
			}
			continue
		}
		for j, v := range vals {
			dst[32*b+j] = float32(v) * s
		}
	}
}

// ilBlockMin returns the min of row r's block b (IL4M, IL8M).
func ilBlockMin(k ILKind, w []byte, r, cols, b int) float32 {
	blk := ilBlock(k, w, cols/Q8Block, r/ILRows, b)
	return f16ToF32(binary.LittleEndian.Uint16(blk[32+2*(r%ILRows):]))
}

// ilBlockValues writes the values of row r's block b into dst[:32] and
// returns the block's scale.
func ilBlockValues(k ILKind, dst []int8, w []byte, gs []float32, g, r, cols, b int) float32 {
	nb := cols / Q8Block
	grp, i := r/ILRows, r%ILRows
	blk := ilBlock(k, w, nb, grp, b)
	var s float32
	switch k {
	case IL8:
		s = f16ToF32(binary.LittleEndian.Uint16(blk[2*i:]))
		for j := range dst[:32] {
			dst[j] = int8(blk[32+(j/4)*64+4*i+j%4] ^ 0x80)
		}
		return s
	case IL4NL:
		s = f16ToF32(binary.LittleEndian.Uint16(blk[2*i:]))
		for j := 0; j < 16; j++ {
			x := blk[32+(j/4)*64+4*i+j%4]
			dst[j], dst[j+16] = gguf.IQ4NLValues[x&15], gguf.IQ4NLValues[x>>4]
		}
		return s
	case IL8M:
		s = f16ToF32(binary.LittleEndian.Uint16(blk[2*i:]))
		for j := range dst[:32] {
			dst[j] = int8(blk[64+(j/4)*64+4*i+j%4])
		}
		return s
	case IL4M:
		s = f16ToF32(binary.LittleEndian.Uint16(blk[2*i:]))
		for j := 0; j < 16; j++ {
			x := blk[64+(j/4)*64+4*i+j%4]
			dst[j], dst[j+16] = int8(x&15), int8(x>>4)
		}
		return s
	case IL4:
		s = f16ToF32(binary.LittleEndian.Uint16(blk[2*i:]))
		blk = blk[32:]
	case IL4G:
		s = gs[(grp*((cols+g-1)/g)+b*Q8Block/g)*ILRows+i]
	}
	for j := 0; j < 16; j++ {
		x := blk[(j/4)*64+4*i+j%4]
		dst[j], dst[j+16] = int8(x&15)-8, int8(x>>4)-8
	}
	return s
}

// ILRepack returns rows [r0, r1) of the [rows][cols] interleaved matrix
// (w, gs) as a new interleaved matrix, for a slice that does not start a row
// group.
func ILRepack(k ILKind, w []byte, gs []float32, g, rows, cols, r0, r1 int) ([]byte, []float32) {
	checkILShape("ILRepack", k, w, rows, cols)
	if r0 < 0 || r1 > rows || r0 >= r1 {
		panic(fmt.Sprintf("kernels.ILRepack: rows [%d, %d) of %d", r0, r1, rows))
	}
	n, nb := r1-r0, cols/Q8Block
	dst := make([]byte, ILBytes(k, n, cols))
	clearIL(k, dst)
	var dgs []float32
	if k == IL4G {
		ng := (cols + g - 1) / g
		dgs = make([]float32, ILScales(n, cols, g))
		for r := r0; r < r1; r++ {
			for j := 0; j < ng; j++ {
				dgs[(((r-r0)/ILRows)*ng+j)*ILRows+(r-r0)%ILRows] = gs[((r/ILRows)*ng+j)*ILRows+r%ILRows]
			}
		}
	}
	for r := r0; r < r1; r++ {
		i, o := r%ILRows, (r-r0)%ILRows
		for b := 0; b < nb; b++ {
			src, d := ilBlock(k, w, nb, r/ILRows, b), ilBlock(k, dst, nb, (r-r0)/ILRows, b)
			q := ilHdr(k)
			for h := 0; h < q; h += 32 { // scales, mins
				d[h+2*o], d[h+2*o+1] = src[h+2*i], src[h+2*i+1]
			}
			for ; q < len(src); q += 64 {
				copy(d[q+4*o:q+4*o+4], src[q+4*i:q+4*i+4])
			}
		}
	}
	return dst, dgs
}

// ILAct is n activation rows quantized to Q8_0 for an interleaved product,
// packed 8 tokens at a time: for token group q and block b, 320 bytes at
// (q·nb+b)·320 hold 40 bytes per token u at 40u: its 32 int8 values, its
// float32 block scale and an int32 multiple of the sum Σ of its values
// (ilSumMul: the correction -off·Σ, off the weight format's value offset, or
// Σ for the min formats). Missing tokens of the last group are zeros.
type ILAct struct {
	mem     []byte // b's allocation
	b       []byte
	n, cols int
	k       ILKind
	tail    [ILRows * ilTok]float32 // a partial row group's outputs (ilblock_amd64.go)
}

const (
	ilTok      = 8   // tokens per packed group
	ilActBlock = 320 // packed bytes per group and block
)

// Quantize quantizes the n rows of x ([n][cols], cols a multiple of 32) for
// a product with weights of format k, as ggml's x86 quantize_row_q8_0 does:
// per block of 32, id = 127/max|x| (0 for a block of zeros), q =
// round-half-even(float32(x·id)), scale = max|x|/127 rounded through f16 as
// block_q8_0 stores it. It grows a's buffer to the largest n·cols seen.
func (a *ILAct) Quantize(x []float32, n, cols int, k ILKind) {
	if n < 0 || cols < 0 || cols%Q8Block != 0 || len(x) < n*cols {
		panic(fmt.Sprintf("kernels.ILAct.Quantize: n=%d cols=%d (a multiple of %d) with len(x)=%d", n, cols, Q8Block, len(x)))
	}
	nb := cols / Q8Block
	need := (n + ilTok - 1) / ilTok * nb * ilActBlock
	if len(a.mem) < need+64 {
		a.mem = make([]byte, need+64)
	}
	off := int(-uintptr(unsafe.Pointer(unsafe.SliceData(a.mem))) & 63) // 64-byte aligned
	a.b = a.mem[off : off+need]
	a.n, a.cols, a.k = n, cols, k
	mul := ilSumMul(k)
	t0 := 0
	if useAsm && ilHasAsm && nb > 0 {
		for ; t0 < n; t0++ {
			ilQuantAsm(a, x, t0)
		}
	}
	for t := t0; t < (n+ilTok-1)/ilTok*ilTok; t++ {
		q, u := t/ilTok, t%ilTok
		for b := 0; b < nb; b++ {
			blk := a.b[(q*nb+b)*ilActBlock : (q*nb+b+1)*ilActBlock]
			xq := unsafe.Slice((*int8)(unsafe.Pointer(&blk[40*u])), 32)
			var d float32
			var sum int32
			if t < n {
				d = quantizeQ8Block(xq, x[t*cols+32*b:t*cols+32*b+32])
				for _, v := range xq {
					sum += int32(v)
				}
			} else {
				clear(xq)
			}
			binary.LittleEndian.PutUint32(blk[40*u+32:], math.Float32bits(d))
			binary.LittleEndian.PutUint32(blk[40*u+36:], uint32(mul*sum))
		}
	}
}

// quantizeQ8Block quantizes one block of 32 values (see ILAct.Quantize) and
// returns its scale.
func quantizeQ8Block(q []int8, x []float32) float32 {
	var amax float32
	for _, v := range x[:32] {
		amax = max(amax, abs32(v))
	}
	var id float32
	if amax != 0 {
		id = 127 / amax
	}
	for j, v := range x[:32] {
		q[j] = int8(math.RoundToEven(float64(float32(v * id))))
	}
	return f16ToF32(gguf.F32ToF16(amax / 127))
}

// Values writes token t's quantized activation as the product sees it:
// dst[i] = scale·q for each of its cols values.
func (a *ILAct) Values(dst []float32, t int) {
	for b := 0; b < a.cols/Q8Block; b++ {
		xq, xd, _ := a.token(t, b)
		for j, q := range xq {
			dst[32*b+j] = float32(q) * xd
		}
	}
}

// token returns token t's values, scale and stored sum (ilSumMul) of block b.
func (a *ILAct) token(t, b int) (xq []int8, xd float32, sum int32) {
	nb := a.cols / Q8Block
	blk := a.b[((t/ilTok)*nb+b)*ilActBlock:]
	u := t % ilTok
	xq = unsafe.Slice((*int8)(unsafe.Pointer(&blk[40*u])), 32)
	return xq, math.Float32frombits(binary.LittleEndian.Uint32(blk[40*u+32:])), int32(binary.LittleEndian.Uint32(blk[40*u+36:]))
}

// MatMulIL computes out[t*rows+r] for t < a's n tokens and r < rows: the
// product of the interleaved matrix w (format k; for IL4G the scales gs of
// groups of g) with the activation a (quantized for k), in the float order
// of the file comment. Bitwise the same for any n, thread count,
// implementation and reuse, which only chooses how w is fetched.
func MatMulIL(k ILKind, out []float32, w []byte, gs []float32, g int, a *ILAct, rows, cols int, reuse Reuse) {
	checkILShape("MatMulIL", k, w, rows, cols)
	if a == nil || a.cols != cols || a.k != k || len(out) < a.n*rows ||
		(k == IL4G && (g <= 0 || g%Q8Block != 0 || len(gs) < ILScales(rows, cols, g))) {
		panic(fmt.Sprintf("kernels.MatMulIL: rows=%d cols=%d group=%d with len(out)=%d len(gs)=%d and an activation for %v",
			rows, cols, g, len(out), len(gs), a))
	}
	p := ilProd{k: k, w: w, gs: gs, g: g, a: a, out: out, rows: rows, cols: cols, reuse: reuse}
	if rows*cols*a.n >= parallelMin {
		if j := defaultPool.acquire(); j != nil {
			j.op, j.il = opIL, p
			j.rows = (rows + ILRows - 1) / ILRows // the pool splits row groups
			defaultPool.exec(1)
			return
		}
	}
	p.run(0, (rows+ILRows-1)/ILRows)
}

// fma32 is a·b+c rounded once to float32, as VFMADD231PS computes it: the
// float64 product is exact, the float64 sum is rounded once with its error
// kept (TwoSum), and a float64 sum that falls exactly halfway between two
// float32s is moved to the side the error lies on.
func fma32(a, b, c float32) float32 {
	p := float64(a) * float64(b)
	s := p + float64(c)
	bb := s - p
	e := (p - (s - bb)) + (float64(c) - bb)
	r := float32(s)
	if e == 0 || float64(r) == s || math.IsInf(s, 0) || s != s {
		return r
	}
	n := math.Nextafter32(r, float32(math.Inf(1)))
	if float64(r) > s {
		n = math.Nextafter32(r, float32(math.Inf(-1)))
	}
	if float64(n)-s == s-float64(r) && (e > 0) == (n > r) {
		return n
	}
	return r
}

// ilProd is one interleaved product.
type ilProd struct {
	k          ILKind
	w          []byte
	gs         []float32
	g          int
	a          *ILAct
	out        []float32
	rows, cols int
	reuse      Reuse
}

// run computes row groups [g0, g1) of every token.
func (p *ilProd) run(g0, g1 int) {
	if useAsm && ilHasAsm {
		p.runAsm(g0, g1)
		return
	}
	p.runGo(g0, g1)
}

// runGo is the reference: one (row, token) at a time, in the order of the
// file comment.
func (p *ilProd) runGo(g0, g1 int) {
	nb := p.cols / Q8Block
	var vals [Q8Block]int8
	for r := g0 * ILRows; r < min(p.rows, g1*ILRows); r++ {
		for t := 0; t < p.a.n; t++ {
			var acc float32
			for b := 0; b < nb; b++ {
				s := ilBlockValues(p.k, vals[:], p.w, p.gs, p.g, r, p.cols, b)
				xq, xd, xsum := p.a.token(t, b)
				var isum int32
				for j, v := range vals {
					isum += int32(v) * int32(xq[j])
				}
				acc = fma32(float32(isum), float32(s*xd), acc)
				if hasMin(p.k) {
					m := ilBlockMin(p.k, p.w, r, p.cols, b)
					acc = fma32(m, float32(xd*float32(xsum)), acc)
				}
			}
			p.out[t*p.rows+r] = acc
		}
	}
}

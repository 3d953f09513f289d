package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"unsafe"
)

// Interleaved K-quants (IL4K, IL6K): GGUF Q4_K and Q6_K rows repacked 16 at
// a time so that one zmm holds 4 values of each of 16 rows, as ilblock.go
// does for the 32-value formats. A (row, token) super-block then costs one
// VPDPBUSD per 4 values of 16 rows (Q4_K's nibbles and Q6_K's 6-bit values
// are unsigned, so they go in as they are), one VPMULLD per sub-block for
// its 16 rows' scales, and no horizontal work; the per-row tiles (qtile.go)
// spend two multiplies (VPMADDUBSW, VPDPWSSD) per 64 values of one row and
// reduce every lane. Each output is dotQ4KGo's (dotQ6KGo's), bit for bit:
// the same exact integer sums per super-block and the same float steps in
// the same order, per row in its lane. Q4_K's mins go in through the
// activation's sums (their own float step); Q6_K's -32 offset starts each
// sub-block's sum at -32·(the token's sum of it) (exact integers, so
// isum - 32·corr all the same).
//
// Layout of row group g (rows 16g..16g+15), super-block b, groups then
// super-blocks in order; 16 rows' blocks, so the file's size:
//
//   - IL4K, 2304 bytes: 16 f16 d, 16 f16 dmin; the 12 scale bytes of
//     block_q4_K, byte k of the 16 rows at 64+16k; 32 quads of 64 bytes at
//     256+64q: row i's qs bytes 4q..4q+3 at 4i (q = 8j+k: low nibbles are
//     values 4k..4k+3 of sub-block 2j, high ones of 2j+1).
//   - IL6K, 3360 bytes: 16 f16 d; the 16 int8 scales, scale g of the 16
//     rows at 32+16g; 32 quads of ql at 288+64q (row i's ql bytes 4q..4q+3
//     at 4i); 16 quads of qh at 2336+64q (qh bytes 4q..4q+3).
//
// Rows past the last of the last group are zero blocks.

// IL4KBytes is the length of a [rows][cols] Q4_K matrix interleaved.
func IL4KBytes(rows, cols int) int {
	return (rows + ILRows - 1) / ILRows * (cols / QK) * il4kBlock
}

// IL6KBytes is the length of a [rows][cols] Q6_K matrix interleaved.
func IL6KBytes(rows, cols int) int {
	return (rows + ILRows - 1) / ILRows * (cols / QK) * il6kBlock
}

const (
	il4kBlock = ILRows * Q4_KBytes
	il6kBlock = ILRows * Q6_KBytes
)

// ILKOK reports whether this host takes Q4_K and Q6_K interleaved: the
// layout only pays with the VNNI kernels (the Go path rebuilds each row).
func ILKOK() bool { return isa >= isaAVX512VNNI && ilkHasAsm }

// PackIL4K writes GGUF Q4_K rows (raw, rows·cols/256 blocks) into dst
// (IL4KBytes long) interleaved.
func PackIL4K(dst, raw []byte, rows, cols int) {
	checkIL4K("PackIL4K", dst, rows, cols)
	nb := cols / QK
	if len(raw) < rows*nb*Q4_KBytes {
		panic(fmt.Sprintf("kernels.PackIL4K: len(raw)=%d for %d rows of %d", len(raw), rows, cols))
	}
	clear(dst[:IL4KBytes(rows, cols)])
	for r := 0; r < rows; r++ {
		g, i := r/ILRows, r%ILRows
		for b := 0; b < nb; b++ {
			src := raw[(r*nb+b)*Q4_KBytes : (r*nb+b+1)*Q4_KBytes]
			blk := dst[(g*nb+b)*il4kBlock:]
			blk[2*i], blk[2*i+1] = src[0], src[1]
			blk[32+2*i], blk[33+2*i] = src[2], src[3]
			for k := 0; k < 12; k++ {
				blk[64+16*k+i] = src[4+k]
			}
			for q := 0; q < 32; q++ {
				binary.LittleEndian.PutUint32(blk[256+64*q+4*i:], binary.LittleEndian.Uint32(src[16+4*q:]))
			}
		}
	}
}

// IL4KRow writes row r of the interleaved matrix w as GGUF Q4_K blocks
// into dst (cols/256·144 bytes).
func IL4KRow(dst, w []byte, r, cols int) {
	for b := 0; b < cols/QK; b++ {
		IL4KBlock(dst[b*Q4_KBytes:(b+1)*Q4_KBytes], w, r, b, cols)
	}
}

// IL4KBlock writes super-block b of row r of the interleaved matrix w as a
// GGUF Q4_K block into dst (144 bytes).
func IL4KBlock(dst, w []byte, r, b, cols int) {
	g, i := r/ILRows, r%ILRows
	blk := w[(g*(cols/QK)+b)*il4kBlock:]
	d := dst[:Q4_KBytes]
	d[0], d[1], d[2], d[3] = blk[2*i], blk[2*i+1], blk[32+2*i], blk[33+2*i]
	for k := 0; k < 12; k++ {
		d[4+k] = blk[64+16*k+i]
	}
	for q := 0; q < 32; q++ {
		binary.LittleEndian.PutUint32(d[16+4*q:], binary.LittleEndian.Uint32(blk[256+64*q+4*i:]))
	}
}

// PackIL6K writes GGUF Q6_K rows (raw, rows·cols/256 blocks) into dst
// (IL6KBytes long) interleaved.
func PackIL6K(dst, raw []byte, rows, cols int) {
	checkIL6K("PackIL6K", dst, rows, cols)
	nb := cols / QK
	if len(raw) < rows*nb*Q6_KBytes {
		panic(fmt.Sprintf("kernels.PackIL6K: len(raw)=%d for %d rows of %d", len(raw), rows, cols))
	}
	clear(dst[:IL6KBytes(rows, cols)])
	for r := 0; r < rows; r++ {
		g, i := r/ILRows, r%ILRows
		for b := 0; b < nb; b++ {
			src := raw[(r*nb+b)*Q6_KBytes : (r*nb+b+1)*Q6_KBytes]
			blk := dst[(g*nb+b)*il6kBlock:]
			blk[2*i], blk[2*i+1] = src[208], src[209]
			for k := 0; k < 16; k++ {
				blk[32+16*k+i] = src[192+k]
			}
			for q := 0; q < 48; q++ {
				binary.LittleEndian.PutUint32(blk[288+64*q+4*i:], binary.LittleEndian.Uint32(src[4*q:]))
			}
		}
	}
}

// IL6KRow writes row r of the interleaved matrix w as GGUF Q6_K blocks
// into dst (cols/256·210 bytes).
func IL6KRow(dst, w []byte, r, cols int) {
	for b := 0; b < cols/QK; b++ {
		IL6KBlock(dst[b*Q6_KBytes:(b+1)*Q6_KBytes], w, r, b, cols)
	}
}

// IL6KBlock writes super-block b of row r of the interleaved matrix w as a
// GGUF Q6_K block into dst (210 bytes).
func IL6KBlock(dst, w []byte, r, b, cols int) {
	g, i := r/ILRows, r%ILRows
	blk := w[(g*(cols/QK)+b)*il6kBlock:]
	d := dst[:Q6_KBytes]
	d[208], d[209] = blk[2*i], blk[2*i+1]
	for k := 0; k < 16; k++ {
		d[192+k] = blk[32+16*k+i]
	}
	for q := 0; q < 48; q++ {
		binary.LittleEndian.PutUint32(d[4*q:], binary.LittleEndian.Uint32(blk[288+64*q+4*i:]))
	}
}

func checkIL6K(fn string, w []byte, rows, cols int) {
	if rows < 0 || cols < 0 || cols%QK != 0 || len(w) < IL6KBytes(rows, cols) {
		panic(fmt.Sprintf("kernels.%s: rows=%d cols=%d (a multiple of %d) with len(w)=%d", fn, rows, cols, QK, len(w)))
	}
}

func checkIL4K(fn string, w []byte, rows, cols int) {
	if rows < 0 || cols < 0 || cols%QK != 0 || len(w) < IL4KBytes(rows, cols) {
		panic(fmt.Sprintf("kernels.%s: rows=%d cols=%d (a multiple of %d) with len(w)=%d", fn, rows, cols, QK, len(w)))
	}
}

// il4kAct and il6kAct are the bytes per 8 tokens and super-block of the
// packed activation the kernels read: 8 tokens' 256 values at 256t, their
// 8 xd at 2048+4t, then per token t: Q4_K 4 dwords at 2080+16t, int16
// pairs (the sums of sub-blocks 2i and 2i+1, each two of QuantizeQ8_K's
// sums of 16); Q6_K 16 dwords at 2080+64t, -32·(sum g); padded to 64
// bytes.
const (
	il4kAct = 2240
	il6kAct = 2624
)

// ilkProd is one interleaved K-quant product.
type ilkProd struct {
	q6         bool // Q6_K, else Q4_K
	w          []byte
	xq         []int8
	xd         []float32
	xs         []int16
	xa         []byte // packed activation (asm)
	out        []float32
	rows, cols int
	n          int
}

var ilkBufs = sync.Pool{New: func() any { return new(packBuf) }}

// MatMulIL4K computes out[t*rows+r] for t < n, r < rows: MatMulQ4_K of the
// interleaved matrix w (PackIL4K) with the Q8_K activation (xq, xd, xsums
// from QuantizeQ8_K per token, [n] rows of cols), bitwise MatVecQ4_K of each
// row and token for any n and thread count.
func MatMulIL4K(out []float32, w []byte, xq []int8, xd []float32, xsums []int16, rows, cols, n int) {
	checkIL4K("MatMulIL4K", w, rows, cols)
	ilkMatMul(false, out, w, xq, xd, xsums, rows, cols, n)
}

// MatMulIL6K is MatMulIL4K for Q6_K (PackIL6K), bitwise MatVecQ6_K.
func MatMulIL6K(out []float32, w []byte, xq []int8, xd []float32, xsums []int16, rows, cols, n int) {
	checkIL6K("MatMulIL6K", w, rows, cols)
	ilkMatMul(true, out, w, xq, xd, xsums, rows, cols, n)
}

func ilkMatMul(q6 bool, out []float32, w []byte, xq []int8, xd []float32, xsums []int16, rows, cols, n int) {
	nb := cols / QK
	if n < 0 || len(out) < n*rows || len(xq) < n*cols || len(xd) < n*nb || len(xsums) < n*cols/16 {
		panic(fmt.Sprintf("kernels.MatMulIL: rows=%d cols=%d n=%d with len(out)=%d len(xq)=%d len(xd)=%d len(xsums)=%d",
			rows, cols, n, len(out), len(xq), len(xd), len(xsums)))
	}
	if n == 0 || rows == 0 {
		return
	}
	p := ilkProd{q6: q6, w: w, xq: xq, xd: xd, xs: xsums, out: out, rows: rows, cols: cols, n: n}
	if useAsm && ilkHasAsm && isa >= isaAVX512VNNI {
		act := il4kAct
		if q6 {
			act = il6kAct
		}
		need := (n+7)/8*nb*act + 64
		pb := ilkBufs.Get().(*packBuf)
		if cap(pb.b) < need {
			pb.b = make([]byte, need)
		}
		off := int(-uintptr(unsafe.Pointer(unsafe.SliceData(pb.b))) & 63)
		p.xa = pb.b[off : off+need-64]
		packILKAct(p.xa, q6, xq, xd, xsums, cols, n)
		defer ilkBufs.Put(pb)
	}
	groups := (rows + ILRows - 1) / ILRows
	if rows*cols*n >= parallelMin {
		if j := defaultPool.acquire(); j != nil {
			j.op, j.ilk = opILK, p
			j.rows = groups
			defaultPool.exec(1)
			return
		}
	}
	p.run(0, groups)
}

// packILKAct writes the activation as the kernels read it (il4kAct).
func packILKAct(dst []byte, q6 bool, xq []int8, xd []float32, xs []int16, cols, n int) {
	nb := cols / QK
	act := il4kAct
	if q6 {
		act = il6kAct
	}
	clear(dst)
	for t := 0; t < n; t++ {
		q, u := t/8, t%8
		for b := 0; b < nb; b++ {
			blk := dst[(q*nb+b)*act:]
			copy(blk[256*u:256*u+256], unsafe.Slice((*byte)(unsafe.Pointer(&xq[t*cols+b*QK])), QK))
			binary.LittleEndian.PutUint32(blk[2048+4*u:], math.Float32bits(xd[t*nb+b]))
			s := xs[t*cols/16+16*b:]
			if q6 {
				for g := 0; g < 16; g++ {
					binary.LittleEndian.PutUint32(blk[2080+64*u+4*g:], uint32(-32*int32(s[g])))
				}
				continue
			}
			for j := 0; j < 8; j++ {
				binary.LittleEndian.PutUint16(blk[2080+16*u+2*j:], uint16(s[2*j]+s[2*j+1]))
			}
		}
	}
}

// run computes row groups [g0, g1) for every token.
func (p *ilkProd) run(g0, g1 int) {
	if p.xa != nil {
		p.runAsm(g0, g1)
		return
	}
	nb := p.cols / QK
	bb, dot := Q4_KBytes, dotQ4KGo
	if p.q6 {
		bb, dot = Q6_KBytes, dotQ6KGo
	}
	row := make([]byte, nb*bb)
	for r := g0 * ILRows; r < min(p.rows, g1*ILRows); r++ {
		if p.q6 {
			IL6KRow(row, p.w, r, p.cols)
		} else {
			IL4KRow(row, p.w, r, p.cols)
		}
		for t := 0; t < p.n; t++ {
			p.out[t*p.rows+r] = dot(row, p.xq[t*p.cols:(t+1)*p.cols], p.xd[t*nb:(t+1)*nb], p.xs[t*p.cols/16:(t+1)*p.cols/16])
		}
	}
}

package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"unsafe"
)

// Interleaved Q4_K (IL4K): GGUF Q4_K rows repacked 16 at a time so that one
// zmm holds 4 nibbles of each of 16 rows, as ilblock.go does for the
// 32-value formats. A (row, token) super-block then costs one VPDPBUSD per 4
// values of 16 rows (the nibbles are unsigned, so they go in as they are),
// one VPMULLD per sub-block for its 16 rows' scales, and the mins through
// the activation's sums, with no horizontal work; the per-row tiles
// (qtile.go) spend two multiplies (VPMADDUBSW, VPDPWSSD) per 64 values of
// one row and reduce every lane. Each output is dotQ4KGo's, bit for bit:
// the same exact isum and msum per super-block and the same float steps in
// the same order, per row in its lane.
//
// Layout of row group g (rows 16g..16g+15), super-block b, groups then
// super-blocks in order, 2304 bytes (16 rows' 144: the file's size):
//
//   - 16 f16 d, then 16 f16 dmin (64 bytes);
//   - the 12 scale bytes of block_q4_K, byte k of all 16 rows at 64+16k;
//   - 32 quads of 64 bytes at 256+64·(8j+k): row i's qs bytes 32j+4k..+3
//     at 4i (low nibbles: values 4k..4k+3 of sub-block 2j; high: of 2j+1).
//
// Rows past the last of the last group are zero blocks.

// IL4KBytes is the length of a [rows][cols] Q4_K matrix interleaved.
func IL4KBytes(rows, cols int) int {
	return (rows + ILRows - 1) / ILRows * (cols / QK) * il4kBlock
}

const il4kBlock = ILRows * Q4_KBytes

// IL4KOK reports whether this host takes Q4_K interleaved: the layout only
// pays with the VNNI kernels (the Go path rebuilds each row).
func IL4KOK() bool { return isa >= isaAVX512VNNI && il4kHasAsm }

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
				copy(blk[256+64*q+4*i:256+64*q+4*i+4], src[16+4*q:20+4*q])
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
		copy(d[16+4*q:20+4*q], blk[256+64*q+4*i:256+64*q+4*i+4])
	}
}

func checkIL4K(fn string, w []byte, rows, cols int) {
	if rows < 0 || cols < 0 || cols%QK != 0 || len(w) < IL4KBytes(rows, cols) {
		panic(fmt.Sprintf("kernels.%s: rows=%d cols=%d (a multiple of %d) with len(w)=%d", fn, rows, cols, QK, len(w)))
	}
}

// il4kAct is the bytes per 8 tokens and super-block of the packed
// activation the kernels read: 8 tokens' 256 values, their 8 xd, then per
// token 4 dwords of int16 pairs (the sums of sub-blocks 2i and 2i+1, each
// two of QuantizeQ8_K's sums of 16), padded to 64 bytes.
const il4kAct = 2240

// il4kProd is one interleaved Q4_K product.
type il4kProd struct {
	w          []byte
	xq         []int8
	xd         []float32
	xs         []int16
	xa         []byte // packed activation (asm)
	out        []float32
	rows, cols int
	n          int
}

var il4kBufs = sync.Pool{New: func() any { return new(packBuf) }}

// MatMulIL4K computes out[t*rows+r] for t < n, r < rows: MatMulQ4_K of the
// interleaved matrix w (PackIL4K) with the Q8_K activation (xq, xd, xsums
// from QuantizeQ8_K per token, [n] rows of cols), bitwise MatVecQ4_K of each
// row and token for any n and thread count.
func MatMulIL4K(out []float32, w []byte, xq []int8, xd []float32, xsums []int16, rows, cols, n int) {
	checkIL4K("MatMulIL4K", w, rows, cols)
	nb := cols / QK
	if n < 0 || len(out) < n*rows || len(xq) < n*cols || len(xd) < n*nb || len(xsums) < n*cols/16 {
		panic(fmt.Sprintf("kernels.MatMulIL4K: rows=%d cols=%d n=%d with len(out)=%d len(xq)=%d len(xd)=%d len(xsums)=%d",
			rows, cols, n, len(out), len(xq), len(xd), len(xsums)))
	}
	if n == 0 || rows == 0 {
		return
	}
	p := il4kProd{w: w, xq: xq, xd: xd, xs: xsums, out: out, rows: rows, cols: cols, n: n}
	if useAsm && il4kHasAsm && isa >= isaAVX512VNNI {
		need := (n+7)/8*nb*il4kAct + 64
		pb := il4kBufs.Get().(*packBuf)
		if cap(pb.b) < need {
			pb.b = make([]byte, need)
		}
		off := int(-uintptr(unsafe.Pointer(unsafe.SliceData(pb.b))) & 63)
		p.xa = pb.b[off : off+need-64]
		packIL4KAct(p.xa, xq, xd, xsums, cols, n)
		defer il4kBufs.Put(pb)
	}
	groups := (rows + ILRows - 1) / ILRows
	if rows*cols*n >= parallelMin {
		if j := defaultPool.acquire(); j != nil {
			j.op, j.il4k = opIL4K, p
			j.rows = groups
			defaultPool.exec(1)
			return
		}
	}
	p.run(0, groups)
}

// packIL4KAct writes the activation as the kernels read it (il4kAct).
func packIL4KAct(dst []byte, xq []int8, xd []float32, xs []int16, cols, n int) {
	nb := cols / QK
	clear(dst)
	for t := 0; t < n; t++ {
		q, u := t/8, t%8
		for b := 0; b < nb; b++ {
			blk := dst[(q*nb+b)*il4kAct:]
			copy(blk[256*u:256*u+256], unsafe.Slice((*byte)(unsafe.Pointer(&xq[t*cols+b*QK])), QK))
			binary.LittleEndian.PutUint32(blk[2048+4*u:], math.Float32bits(xd[t*nb+b]))
			s := xs[t*cols/16+16*b:]
			for j := 0; j < 8; j++ {
				binary.LittleEndian.PutUint16(blk[2080+16*u+2*j:], uint16(s[2*j]+s[2*j+1]))
			}
		}
	}
}

// run computes row groups [g0, g1) for every token.
func (p *il4kProd) run(g0, g1 int) {
	if p.xa != nil {
		p.runAsm(g0, g1)
		return
	}
	nb := p.cols / QK
	row := make([]byte, nb*Q4_KBytes)
	for r := g0 * ILRows; r < min(p.rows, g1*ILRows); r++ {
		IL4KRow(row, p.w, r, p.cols)
		for t := 0; t < p.n; t++ {
			p.out[t*p.rows+r] = dotQ4KGo(row, p.xq[t*p.cols:(t+1)*p.cols], p.xd[t*nb:(t+1)*nb], p.xs[t*p.cols/16:(t+1)*p.cols/16])
		}
	}
}

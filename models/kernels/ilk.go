package kernels

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
	"unsafe"

	"chat/models/gguf"
)

// Interleaved K-quants (ILKKind): GGUF Q4_K, Q5_K, Q6_K, IQ4_XS, Q2_K and Q3_K rows
// repacked 16 at a time so that one zmm holds 4 values of each of 16 rows,
// as ilblock.go does for the 32-value formats. A (row, token) super-block
// then costs one VPDPBUSD per 4 values of 16 rows, one VPMULLD per
// sub-block for its 16 rows' scales, and no horizontal work; the per-row
// tiles (qtile.go) spend two multiplies (VPMADDUBSW, VPDPWSSD) per 64
// values of one row and reduce every lane. Each output is the format's Go
// row product (dotQ4KGo, ...), bit for bit: the same exact integer sums per
// super-block and the same float steps in the same order, per row in its
// lane. VPDPBUSD wants unsigned weights: Q4_K's nibbles, Q5_K's 5-bit and
// Q6_K's 6-bit values are; IQ4_XS's signed levels go in as level+128 (a
// VPSHUFB table). The offsets are exact integers taken off through the
// activation's sums: each sub-block's sum starts at -32·(the token's sum of
// it) for Q6_K, at -4· for Q3_K, at -128·(its sum) for IQ4_XS. Q4_K's,
// Q5_K's and Q2_K's mins go in through the sums too, in their own float
// step.
//
// Layout of row group g (rows 16g..16g+15), super-block b, groups then
// super-blocks in order; the same size as the group's 16 GGUF blocks. A
// field of w bytes at offset o of the GGUF block (and its n-1 successors)
// goes to 16 rows' fields side by side: field k of row i at o' + 16wk + wi.
//
//   - IL4K, 2304 bytes: 16 f16 d at 0, 16 f16 dmin at 32; the 12 scale
//     bytes at 64; the 32 quads (4 bytes) of qs at 256 (q = 8j+k: low
//     nibbles are values 4k..4k+3 of sub-block 2j, high ones of 2j+1).
//   - IL5K, 2816 bytes: as IL4K with the 8 quads of qh at 256 (quad k holds
//     the fifth bits of the values of quad k of each pair) and qs at 768.
//   - IL6K, 3360 bytes: 16 f16 d at 0; the 16 int8 scales at 32; 32 quads
//     of ql at 288, then 16 of qh at 2336.
//   - IL4XS, 2176 bytes: 16 f16 d at 0; 16 uint16 scales_h at 32; the 4
//     bytes of scales_l at 64; 32 quads of qs at 128 (q = 4ib+k: low
//     nibbles are values 4k..4k+3 of sub-block ib, high ones 16+4k..).
//   - IL2K, 1344 bytes: 16 f16 d at 0, 16 f16 dmin at 32; the 16 scale
//     bytes at 64; 16 quads of qs at 320.
//   - IL3K, 1760 bytes: 16 f16 d at 0; the 12 scale bytes at 32; 16 quads
//     of qs at 224, then 8 of hmask at 1248.
//
// Rows past the last of the last group are zero blocks.

// ILKKind is a GGUF super-block format interleaved by 16 rows.
type ILKKind uint8

const (
	IL4K  ILKKind = iota // Q4_K
	IL5K                 // Q5_K
	IL6K                 // Q6_K
	IL4XS                // IQ4_XS
	IL2K                 // Q2_K
	IL3K                 // Q3_K
)

// ilkField is one field of a GGUF block: n of w bytes at src, interleaved
// at dst.
type ilkField struct{ src, n, w, dst int }

// ilkFormat is what sets one interleaved kind apart.
type ilkFormat struct {
	typ    gguf.Type
	bb     int // bytes of a GGUF block
	act    int // packed activation bytes per 8 tokens and super-block
	fields []ilkField
	dot    func(row []byte, xq []int8, xd []float32, xsums []int16) float32
}

// The packed activation the kernels read, per 8 tokens and super-block: 8
// tokens' 256 values at 256t, their 8 xd at 2048+4t, then per token t:
// Q4_K, Q5_K 4 dwords at 2080+16t, int16 pairs (the sums of sub-blocks 2i
// and 2i+1, each two of QuantizeQ8_K's sums of 16); Q6_K 16 dwords at
// 2080+64t, -32·(sum g); IQ4_XS 8 dwords at 2080+32t, -128·(sum of
// sub-block ib); Q2_K QuantizeQ8_K's 16 int16 sums at 2080+32t; Q3_K 16
// dwords at 2080+64t, -4·(sum g); padded to 64 bytes.
var ilkFormats = [...]ilkFormat{
	IL4K: {gguf.TypeQ4_K, Q4_KBytes, 2240,
		[]ilkField{{0, 1, 2, 0}, {2, 1, 2, 32}, {4, 12, 1, 64}, {16, 32, 4, 256}}, dotQ4KGo},
	IL5K: {gguf.TypeQ5_K, Q5_KBytes, 2240,
		[]ilkField{{0, 1, 2, 0}, {2, 1, 2, 32}, {4, 12, 1, 64}, {16, 8, 4, 256}, {48, 32, 4, 768}}, dotQ5KGo},
	IL6K: {gguf.TypeQ6_K, Q6_KBytes, 2624,
		[]ilkField{{208, 1, 2, 0}, {192, 16, 1, 32}, {0, 48, 4, 288}}, dotQ6KGo},
	IL4XS: {gguf.TypeIQ4_XS, IQ4_XSBytes, 2368,
		[]ilkField{{0, 1, 2, 0}, {2, 1, 2, 32}, {4, 4, 1, 64}, {8, 32, 4, 128}},
		func(row []byte, xq []int8, xd []float32, _ []int16) float32 { return dotIQ4XSGo(row, xq, xd) }},
	IL2K: {gguf.TypeQ2_K, Q2_KBytes, 2368,
		[]ilkField{{80, 1, 2, 0}, {82, 1, 2, 32}, {0, 16, 1, 64}, {16, 16, 4, 320}}, dotQ2KGo},
	IL3K: {gguf.TypeQ3_K, Q3_KBytes, 2624,
		[]ilkField{{108, 1, 2, 0}, {96, 12, 1, 32}, {32, 16, 4, 224}, {0, 8, 4, 1248}}, dotQ3KGo},
}

// ILKFor returns the interleaved kind of GGUF type t, and whether this host
// keeps t interleaved: the layout only pays with the VNNI kernels (the Go
// path rebuilds each row).
func ILKFor(t gguf.Type) (ILKKind, bool) {
	for k, f := range ilkFormats {
		if f.typ == t {
			return ILKKind(k), isa >= isaAVX512VNNI && ilkHasAsm
		}
	}
	return 0, false
}

// ILKBytes is the length of a [rows][cols] matrix of kind k interleaved.
func ILKBytes(k ILKKind, rows, cols int) int {
	return (rows + ILRows - 1) / ILRows * (cols / QK) * ILRows * ilkFormats[k].bb
}

// PackILK writes GGUF rows of kind k (raw, rows·cols/256 blocks) into dst
// (ILKBytes long) interleaved.
func PackILK(k ILKKind, dst, raw []byte, rows, cols int) {
	checkILK("PackILK", k, dst, rows, cols)
	f := &ilkFormats[k]
	nb, ib := cols/QK, ILRows*f.bb
	if len(raw) < rows*nb*f.bb {
		panic(fmt.Sprintf("kernels.PackILK: len(raw)=%d for %d rows of %d", len(raw), rows, cols))
	}
	clear(dst[:ILKBytes(k, rows, cols)])
	for r := 0; r < rows; r++ {
		g, i := r/ILRows, r%ILRows
		for b := 0; b < nb; b++ {
			src := raw[(r*nb+b)*f.bb : (r*nb+b+1)*f.bb]
			blk := dst[(g*nb+b)*ib : (g*nb+b+1)*ib]
			for _, fd := range f.fields {
				interleave(blk[fd.dst+fd.w*i:], src[fd.src:], fd.n, fd.w)
			}
		}
	}
}

// ILKBlock writes super-block b of row r of the interleaved matrix w of kind
// k as a GGUF block into dst.
func ILKBlock(k ILKKind, dst, w []byte, r, b, cols int) {
	f := &ilkFormats[k]
	g, i := r/ILRows, r%ILRows
	blk := w[(g*(cols/QK)+b)*ILRows*f.bb:]
	d := dst[:f.bb]
	for _, fd := range f.fields {
		deinterleave(d[fd.src:], blk[fd.dst+fd.w*i:], fd.n, fd.w)
	}
}

// ILKRow writes row r of the interleaved matrix w of kind k as GGUF blocks
// into dst (cols/256 blocks).
func ILKRow(k ILKKind, dst, w []byte, r, cols int) {
	bb := ilkFormats[k].bb
	for b := 0; b < cols/QK; b++ {
		ILKBlock(k, dst[b*bb:(b+1)*bb], w, r, b, cols)
	}
}

// interleave copies n fields of w bytes from src to every 16th field of
// dst; deinterleave is its inverse.
func interleave(dst, src []byte, n, w int) { moveFields(dst, src, n, w, ILRows*w, w) }

func deinterleave(dst, src []byte, n, w int) { moveFields(dst, src, n, w, w, ILRows*w) }

// moveFields copies n fields of w bytes, the k-th from src[ss·k] to
// dst[ds·k], bounds checked once: the quads, the bulk of a block, then move
// in one 4-byte load and store each.
func moveFields(dst, src []byte, n, w, ds, ss int) {
	if n <= 0 {
		return
	}
	_, _ = dst[ds*(n-1)+w-1], src[ss*(n-1)+w-1]
	d, s := unsafe.Pointer(unsafe.SliceData(dst)), unsafe.Pointer(unsafe.SliceData(src))
	switch w {
	case 4:
		for k := 0; k < n; k++ {
			*(*uint32)(unsafe.Add(d, ds*k)) = *(*uint32)(unsafe.Add(s, ss*k))
		}
	case 2:
		for k := 0; k < n; k++ {
			*(*uint16)(unsafe.Add(d, ds*k)) = *(*uint16)(unsafe.Add(s, ss*k))
		}
	default:
		for k := 0; k < n; k++ {
			*(*byte)(unsafe.Add(d, ds*k)) = *(*byte)(unsafe.Add(s, ss*k))
		}
	}
}

func checkILK(fn string, k ILKKind, w []byte, rows, cols int) {
	if int(k) >= len(ilkFormats) || rows < 0 || cols < 0 || cols%QK != 0 || len(w) < ILKBytes(k, rows, cols) {
		panic(fmt.Sprintf("kernels.%s: kind %d rows=%d cols=%d (a multiple of %d) with len(w)=%d", fn, k, rows, cols, QK, len(w)))
	}
}

// ilkProd is one interleaved K-quant product.
type ilkProd struct {
	k          ILKKind
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

// MatMulILK computes out[t*rows+r] for t < n, r < rows: the product of the
// interleaved matrix w of kind k (PackILK) with the Q8_K activation (xq,
// xd, xsums from QuantizeQ8_K per token, [n] rows of cols), bitwise the
// kind's MatVec (MatVecQ4_K, ...) of each row and token for any n and
// thread count.
func MatMulILK(k ILKKind, out []float32, w []byte, xq []int8, xd []float32, xsums []int16, rows, cols, n int) {
	checkILK("MatMulILK", k, w, rows, cols)
	nb := cols / QK
	if n < 0 || len(out) < n*rows || len(xq) < n*cols || len(xd) < n*nb || len(xsums) < n*cols/16 {
		panic(fmt.Sprintf("kernels.MatMulILK: rows=%d cols=%d n=%d with len(out)=%d len(xq)=%d len(xd)=%d len(xsums)=%d",
			rows, cols, n, len(out), len(xq), len(xd), len(xsums)))
	}
	if n == 0 || rows == 0 {
		return
	}
	p := ilkProd{k: k, w: w, xq: xq, xd: xd, xs: xsums, out: out, rows: rows, cols: cols, n: n}
	if useAsm && ilkHasAsm && isa >= isaAVX512VNNI {
		need := (n+7)/8*nb*ilkFormats[k].act + 64
		pb := ilkBufs.Get().(*packBuf)
		if cap(pb.b) < need {
			pb.b = make([]byte, need)
		}
		off := int(-uintptr(unsafe.Pointer(unsafe.SliceData(pb.b))) & 63)
		p.xa = pb.b[off : off+need-64]
		packILKAct(p.xa, k, xq, xd, xsums, cols, n)
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

// packILKAct writes the activation as the kernels read it (ilkFormats).
func packILKAct(dst []byte, k ILKKind, xq []int8, xd []float32, xs []int16, cols, n int) {
	nb := cols / QK
	act := ilkFormats[k].act
	clear(dst)
	for t := 0; t < n; t++ {
		q, u := t/8, t%8
		for b := 0; b < nb; b++ {
			blk := dst[(q*nb+b)*act:]
			copy(blk[256*u:256*u+256], unsafe.Slice((*byte)(unsafe.Pointer(&xq[t*cols+b*QK])), QK))
			binary.LittleEndian.PutUint32(blk[2048+4*u:], math.Float32bits(xd[t*nb+b]))
			s := xs[t*cols/16+16*b:]
			switch k {
			case IL6K:
				for g := 0; g < 16; g++ {
					binary.LittleEndian.PutUint32(blk[2080+64*u+4*g:], uint32(-32*int32(s[g])))
				}
			case IL3K:
				for g := 0; g < 16; g++ {
					binary.LittleEndian.PutUint32(blk[2080+64*u+4*g:], uint32(-4*int32(s[g])))
				}
			case IL2K:
				for g := 0; g < 16; g++ {
					binary.LittleEndian.PutUint16(blk[2080+32*u+2*g:], uint16(s[g]))
				}
			case IL4XS:
				for ib := 0; ib < 8; ib++ {
					binary.LittleEndian.PutUint32(blk[2080+32*u+4*ib:], uint32(-128*(int32(s[2*ib])+int32(s[2*ib+1]))))
				}
			default:
				for j := 0; j < 8; j++ {
					binary.LittleEndian.PutUint16(blk[2080+16*u+2*j:], uint16(s[2*j]+s[2*j+1]))
				}
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
	f := &ilkFormats[p.k]
	row := make([]byte, nb*f.bb)
	for r := g0 * ILRows; r < min(p.rows, g1*ILRows); r++ {
		ILKRow(p.k, row, p.w, r, p.cols)
		for t := 0; t < p.n; t++ {
			p.out[t*p.rows+r] = f.dot(row, p.xq[t*p.cols:(t+1)*p.cols], p.xd[t*nb:(t+1)*nb], p.xs[t*p.cols/16:(t+1)*p.cols/16])
		}
	}
}

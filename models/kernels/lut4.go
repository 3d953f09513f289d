package kernels

import (
	"fmt"
	"unsafe"
)

// 4-bit weights through a table of 16 levels: models/quant's int4 groups
// (levels -8..7 for codes 0..15) and NF4 (QLoRA's normal-float levels), each
// with one float32 scale per group of a row, times float32 activations. The
// codes are dequantized in registers: w = float32(levels[code]·scale), one
// rounding of the exact product, exactly what a DequantizeRows that looks the
// code up in levels·scale writes.
//
// Layout (models/quant's Int4Groups): row r's codes start at byte
// r·⌈cols/2⌉; value c sits in byte c/2, the low nibble for even c. Scales
// are [rows][⌈cols/group⌉] float32; group is a positive multiple of 32 and
// the last group of a row may be shorter.
//
// As for the FP8 and int8 products (qf.go), every output is bitwise MatVec's
// on the dequantized weights, on every implementation and thread count: the
// Go versions in MatVec's Go order, the assembly in matVecAVX2's 8-lane FMA
// order (AVX2: a row per ymm, levels looked up by two VPERMPS; AVX-512: two
// rows per zmm, one VPERMI2PS over both rows' 16 scaled levels). The batched
// product dequantizes each weight once for 4 tokens (rows whose length is not
// a multiple of 32 take the MatVec kernel per token).
//
// Against quantizing the activations too and multiplying in integers
// (interleaved int4 blocks with a Q8_0 activation, ilblock.go): that is
// faster still, but its results are no longer those of the dequantized float
// weights.

// Int4Levels are the values of models/quant's int4 codes (code-8;
// round-to-nearest writes codes 1..15, GPTQ all 16).
var Int4Levels = [16]float32{-8, -7, -6, -5, -4, -3, -2, -1, 0, 1, 2, 3, 4, 5, 6, 7}

// NF4Levels are QLoRA's NormalFloat4 levels (Dettmers et al. 2023, the table
// bitsandbytes uses): 0 exact, ±1 at the ends, the rest quantiles of N(0, 1)
// scaled to [-1, 1].
var NF4Levels = [16]float32{
	-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
	-0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
	0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
	0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0,
}

// MatVecLUT4 computes out[r] = Σ_c float32(levels[code(r, c)]·scale[r][c/group])·x[c]
// for r < rows, with the codes and scales laid out as above. Bitwise MatVec
// on the dequantized weights.
func MatVecLUT4(out []float32, packed []byte, scale []float32, levels *[16]float32, group int, x []float32, rows, cols int) {
	l := newL4("MatVecLUT4", out, packed, scale, levels, group, x, rows, cols, 1)
	runL4(opMatVecL4, l, out, x, rows, cols, 1)
}

// MatMulLUT4 is MatVecLUT4 for n tokens: out[t*rows+r] for x[t*cols:], out
// [n][rows] and x [n][cols] row-major. Bitwise equal to n MatVecLUT4 calls.
func MatMulLUT4(out []float32, packed []byte, scale []float32, levels *[16]float32, group int, x []float32, rows, cols, n int) {
	l := newL4("MatMulLUT4", out, packed, scale, levels, group, x, rows, cols, n)
	runL4(opMatMulL4, l, out, x, rows, cols, n)
}

// l4Prod is one LUT4 product; the assembly reads a (l4Args) for its shape.
type l4Prod struct {
	w     []byte
	scale []float32
	lut   *[16]float32
	a     l4Args
}

// l4Args is the shape as the assembly reads it (field offsets are fixed).
type l4Args struct {
	rb        int // 0: bytes per row, ⌈cols/2⌉
	sstride   int // 8: scale bytes per row, 4·⌈cols/group⌉
	gch       int // 16: 32-column chunks per group
	n32       int // 24: whole 32-column chunks per row
	n8        int // 32: then whole 8-column steps, (cols%32)/8
	k         int // 40: then the last cols%8 columns
	tailOff   int // 48: byte offset of a 4-byte load ending at the row's end, from the row's 32-aligned end
	tailShift int // 56: bits to shift that load right to bring the last k values' bytes down
	ldo       int // 64: the tiles' output stride (rows)
	cols      int // 72
}

func newL4(fn string, out []float32, packed []byte, scale []float32, levels *[16]float32, group int, x []float32, rows, cols, n int) l4Prod {
	rb, ng := 0, 0
	if group > 0 {
		rb, ng = (cols+1)/2, (cols+group-1)/group
	}
	if rows < 0 || cols < 0 || n < 0 || group <= 0 || group%32 != 0 || levels == nil ||
		len(packed) < rows*rb || len(scale) < rows*ng || len(x) < n*cols || len(out) < n*rows {
		panic(fmt.Sprintf("kernels.%s: rows=%d cols=%d n=%d group=%d (a positive multiple of 32) with len(out)=%d len(packed)=%d len(scale)=%d len(x)=%d",
			fn, rows, cols, n, group, len(out), len(packed), len(scale), len(x)))
	}
	k := cols % 8
	return l4Prod{w: packed, scale: scale, lut: levels, a: l4Args{
		rb: rb, sstride: 4 * ng, gch: group / 32, n32: cols / 32, n8: cols % 32 / 8, k: k,
		tailOff: rb - 4 - cols/32*16, tailShift: 8 * (4 - (k+1)/2), ldo: rows, cols: cols,
	}}
}

func runL4(op int, l l4Prod, out, x []float32, rows, cols, n int) {
	if rows*cols*n >= parallelMin {
		if j := defaultPool.acquire(); j != nil {
			j.op, j.l4, j.out, j.x = op, l, out, x
			j.rows, j.cols, j.n = rows, cols, n
			defaultPool.exec(4)
			return
		}
	}
	if op == opMatVecL4 {
		l.matVecRange(out, x, cols, 0, rows)
		return
	}
	l.matMulRange(out, x, rows, cols, n, 0, rows)
}

// matVecRange computes rows [r0, r1) of out = w·x.
func (l *l4Prod) matVecRange(out, x []float32, cols, r0, r1 int) {
	if r1 <= r0 {
		return
	}
	x = x[:cols]
	rb, ng := l.a.rb, l.a.sstride/4
	g := l.a.gch * 32
	if !useAsm {
		for r := r0; r < r1; r++ {
			out[r] = dotL4Go(l.lut, l.w[r*rb:(r+1)*rb], l.scale[r*ng:(r+1)*ng], g, x)
		}
		return
	}
	if cols >= 8 {
		l4MatVecAsm(l, out[r0:r1], unsafe.Pointer(&l.w[r0*rb]), &l.scale[r0*ng], x)
		return
	}
	// Short rows (one group): dequantize each into a stack buffer for matVecAVX2.
	var buf [8]float32
	for r := r0; r < r1; r++ {
		s := l.scale[r*ng]
		for c := range cols {
			buf[c] = float32(l.lut[l.w[r*rb+c/2]>>(4*(c&1))&15] * s)
		}
		matVecAsm(out[r:r+1], buf[:cols], x, cols, 0, 1)
	}
}

// l4Tokens is the token width of the batched tiles.
const l4Tokens = 4

// matMulRange computes rows [r0, r1) of every token, in token chunks whose
// activations stay in L2 while each row tile meets all of them.
func (l *l4Prod) matMulRange(out, x []float32, rows, cols, n, r0, r1 int) {
	if r1 <= r0 {
		return
	}
	tc := max(l4Tokens, (192<<10)/4/max(cols, 1)/l4Tokens*l4Tokens)
	tr := l4TileRows()
	rb, ng := l.a.rb, l.a.sstride/4
	g := l.a.gch * 32
	for t0 := 0; t0 < n; t0 += tc {
		t1 := min(n, t0+tc)
		r := r0
		if useAsm && cols%32 == 0 && cols > 0 {
			for ; r+tr <= r1; r += tr {
				t := t0
				for ; t+l4Tokens <= t1; t += l4Tokens {
					l4TileAsm(l, &out[t*rows+r], unsafe.Pointer(&l.w[r*rb]), &l.scale[r*ng], &x[t*cols])
				}
				for ; t < t1; t++ {
					l.matVecRange(out[t*rows:(t+1)*rows], x[t*cols:(t+1)*cols], cols, r, r+tr)
				}
			}
		}
		if !useAsm {
			for ; r < r1; r++ {
				wr, sr := l.w[r*rb:(r+1)*rb], l.scale[r*ng:(r+1)*ng]
				for t := t0; t < t1; t++ {
					out[t*rows+r] = dotL4Go(l.lut, wr, sr, g, x[t*cols:(t+1)*cols])
				}
			}
			continue
		}
		for t := t0; t < t1 && r < r1; t++ {
			l.matVecRange(out[t*rows:(t+1)*rows], x[t*cols:(t+1)*cols], cols, r, r1)
		}
	}
}

// dotL4Go is dotGo with a[c] = float32(lut[code c]·scale[c/g]) computed on
// the fly (g a multiple of 4, so every group starts a 4-value step).
func dotL4Go(lut *[16]float32, w []byte, sc []float32, g int, b []float32) float32 {
	cols := len(b)
	var s0, s1, s2, s3 float32
	var t [16]float32
	i := 0
	for j := 0; i+4 <= cols; j++ {
		for k := range t {
			t[k] = float32(lut[k] * sc[j])
		}
		for end := min(i+g, cols&^3); i < end; i += 4 {
			p, q := w[i/2], w[i/2+1]
			s0 += t[p&15] * b[i]
			s1 += t[p>>4] * b[i+1]
			s2 += t[q&15] * b[i+2]
			s3 += t[q>>4] * b[i+3]
		}
	}
	if i < cols {
		s := sc[i/g]
		for ; i < cols; i++ {
			s0 += float32(lut[w[i/2]>>(4*(i&1))&15]*s) * b[i]
		}
	}
	return (s0 + s1) + (s2 + s3)
}

// DequantizeLUT4 writes row r of the [rows][cols] matrix, dst[c] =
// float32(levels[code]·scale[c/group]): the weights MatVecLUT4 multiplies by.
func DequantizeLUT4(dst []float32, row []byte, scale []float32, levels *[16]float32, group, cols int) {
	dst = dst[:cols]
	var lut [16]float32 // the group's 16 values, a byte's two codes at a time (KV caches decode every block they read)
	for g0 := 0; g0 < cols; g0 += group {
		g1 := min(g0+group, cols)
		s := scale[g0/group]
		for i, l := range levels {
			lut[i] = float32(l * s)
		}
		c := g0
		if c&1 == 1 {
			dst[c] = lut[row[c/2]>>4]
			c++
		}
		for ; c+1 < g1; c += 2 {
			b := row[c/2]
			dst[c], dst[c+1] = lut[b&15], lut[b>>4]
		}
		if c < g1 {
			dst[c] = lut[row[c/2]&15]
		}
	}
}

package kernels

import (
	"fmt"
	"unsafe"
)

// Quantized weights × float32 activations, the weights dequantized in
// registers (qf_gen.py writes the assembly): FP8 codes with one scale per
// row (this file) and int8 codes with one scale per row (i8f32.go).
//
// Every output is bitwise MatVec's (or MatMul's) on the dequantized matrix
// w[r][c] = float32(value(code)·scale[r]) (one float32 rounding of the exact
// product), on every implementation and thread count: the Go versions run
// MatVec's Go order, the assembly matVecAVX2's 8-lane FMA order, on AVX2 and
// AVX-512 alike (two rows per zmm). So a model using these kernels computes
// exactly what it computes on its dequantized float32 weights, while reading
// a quarter of the bytes.
//
// The batched products run register tiles (2 rows × 4 tokens on AVX2, 4 × 4
// on AVX-512) that dequantize each weight once for 4 tokens; tokens and rows
// left over, and rows whose length is not a multiple of 8, take the MatVec
// kernel, which sums in the same order.

// FP8 names an 8-bit float format of the weights.
type FP8 uint8

const (
	// E4M3 is OCP FP8 E4M3 (PyTorch's float8_e4m3fn): 1 sign, 4 exponent
	// bits (bias 7), 3 mantissa bits, subnormals, no infinities, largest
	// finite value 448. The NaN codes 0x7F and 0xFF are read as ±480 by
	// these kernels (quantizers never write them).
	E4M3 FP8 = iota
	// E5M2 is OCP FP8 E5M2 (float8_e5m2): 1 sign, 5 exponent bits (bias 15),
	// 2 mantissa bits: the top byte of an IEEE half, with its subnormals,
	// infinities and NaNs.
	E5M2
)

func (f FP8) String() string {
	if f == E5M2 {
		return "E5M2"
	}
	return "E4M3"
}

// MatVecFP8 computes out[r] = Σ_c float32(value(codes[r*cols+c])·scale[r])·x[c]
// for r < rows: FP8 codes in format f, row-major [rows][cols], one float32
// scale per row. Bitwise MatVec on the dequantized matrix (see the file
// comment); for E4M3 this needs |scale| < 2^120, which any scale of a finite
// weight divided by 448 meets.
func MatVecFP8(out []float32, codes []uint8, scale, x []float32, rows, cols int, f FP8) {
	checkQF("MatVecFP8", out, len(codes), scale, x, rows, cols, 1)
	runQF(opMatVecQF, qfProd{fmt: fp8Formats[f&1], w: codes, scale: scale}, out, x, rows, cols, 1)
}

// MatMulFP8 is MatVecFP8 for n tokens: out[t*rows+r] for x[t*cols:], out
// [n][rows] and x [n][cols] row-major. Bitwise equal to n MatVecFP8 calls.
func MatMulFP8(out []float32, codes []uint8, scale, x []float32, rows, cols, n int, f FP8) {
	checkQF("MatMulFP8", out, len(codes), scale, x, rows, cols, n)
	runQF(opMatMulQF, qfProd{fmt: fp8Formats[f&1], w: codes, scale: scale}, out, x, rows, cols, n)
}

// fp8Params is what the FP8 assembly needs to widen a code to an IEEE half:
// shift it left (after sign extension to 16 bits) by shift, keep mask, and
// multiply the half's value by factor·scale.
type fp8Params struct {
	shift  uint64
	mask   uint16
	_      [3]uint16
	factor float32
}

// qfFormat describes one code format: tab[code]·(scale·factor) is the
// weight, where tab[code] is exactly the value the assembly converts the
// code to before that one multiply.
type qfFormat struct {
	name   string
	fp8    *fp8Params // nil for int8 codes
	tab    [256]float32
	factor float32
}

// E4M3 widens to the half with the same bits below the sign moved down one
// place: its value is value(code)/256, so factor 256. E5M2 is the half's top
// byte. int8 codes convert to their integer value.
var (
	fp8Formats = [2]*qfFormat{
		newQFFormat("E4M3", &fp8Params{shift: 7, mask: 0xbf80, factor: 256}),
		newQFFormat("E5M2", &fp8Params{shift: 8, mask: 0xffff, factor: 1}),
	}
	i8Format = newQFFormat("int8", nil)
)

func newQFFormat(name string, p *fp8Params) *qfFormat {
	f := &qfFormat{name: name, fp8: p, factor: 1}
	for c := range f.tab {
		if p == nil {
			f.tab[c] = float32(int8(c))
			continue
		}
		h := uint16(int16(int8(c))<<p.shift) & p.mask
		f.tab[c] = f16ToF32(h)
		f.factor = p.factor
	}
	return f
}

// qfProd is one float-activation product: weights w (row-major codes) with a
// scale per row.
type qfProd struct {
	fmt   *qfFormat
	w     []byte
	scale []float32
}

func checkQF(fn string, out []float32, nw int, scale, x []float32, rows, cols, n int) {
	if rows < 0 || cols < 0 || n < 0 || nw < rows*cols || len(scale) < rows ||
		len(x) < n*cols || len(out) < n*rows {
		panic(fmt.Sprintf("kernels.%s: rows=%d cols=%d n=%d with len(out)=%d len(codes)=%d len(scale)=%d len(x)=%d",
			fn, rows, cols, n, len(out), nw, len(scale), len(x)))
	}
}

// runQF splits a product over the pool, or runs it here when it is small or
// the pool is busy.
func runQF(op int, q qfProd, out, x []float32, rows, cols, n int) {
	if rows*cols*n >= parallelMin {
		if j := defaultPool.acquire(); j != nil {
			j.op, j.qf, j.out, j.x = op, q, out, x
			j.rows, j.cols, j.n = rows, cols, n
			defaultPool.exec(4) // a multiple of every kernel's rows
			return
		}
	}
	if op == opMatVecQF {
		q.matVecRange(out, x, cols, 0, rows)
		return
	}
	q.matMulRange(out, x, rows, cols, n, 0, rows)
}

// rowScale is scale[r]·factor, the multiplier of tab[code] (exact: the
// factor is a power of two).
func (q *qfProd) rowScale(r int) float32 { return float32(q.scale[r] * q.fmt.factor) }

// matVecRange computes rows [r0, r1) of out = w·x.
func (q *qfProd) matVecRange(out, x []float32, cols, r0, r1 int) {
	if r1 <= r0 {
		return
	}
	x = x[:cols]
	if !useAsm {
		for r := r0; r < r1; r++ {
			out[r] = dotQFGo(&q.fmt.tab, q.rowScale(r), q.w[r*cols:(r+1)*cols], x)
		}
		return
	}
	if cols >= 8 {
		qfMatVecAsm(q, out[r0:r1], q.w[r0*cols:r1*cols], q.scale[r0:r1], x, cols)
		return
	}
	// Short rows: dequantize each into a stack buffer for matVecAVX2.
	var buf [8]float32
	for r := r0; r < r1; r++ {
		s := q.rowScale(r)
		for c, b := range q.w[r*cols : (r+1)*cols] {
			buf[c] = float32(q.fmt.tab[b] * s)
		}
		matVecAsm(out[r:r+1], buf[:cols], x, cols, 0, 1)
	}
}

// matMulRange computes rows [r0, r1) of every token of the batched product.
// Tokens go in chunks whose activations stay in L2 while each row tile
// meets all of them.
func (q *qfProd) matMulRange(out, x []float32, rows, cols, n, r0, r1 int) {
	if r1 <= r0 {
		return
	}
	tt := qfTileTokens()
	tc := max(tt, (192<<10)/4/max(cols, 1)/tt*tt)
	tr := qfTileRows()
	tiles := useAsm && cols >= 8 && cols%8 == 0
	for t0 := 0; t0 < n; t0 += tc {
		t1 := min(n, t0+tc)
		r := r0
		if tiles {
			for ; r+tr <= r1; r += tr {
				t := t0
				for ; t+tt <= t1; t += tt {
					qfTileAsm(q, &out[t*rows+r], unsafe.Pointer(&q.w[r*cols]), &q.scale[r], &x[t*cols], cols, rows)
				}
				for ; t < t1; t++ {
					q.matVecRange(out[t*rows:(t+1)*rows], x[t*cols:(t+1)*cols], cols, r, r+tr)
				}
			}
		}
		if !useAsm {
			for ; r < r1; r++ {
				wr, s := q.w[r*cols:(r+1)*cols], q.rowScale(r)
				for t := t0; t < t1; t++ {
					out[t*rows+r] = dotQFGo(&q.fmt.tab, s, wr, x[t*cols:(t+1)*cols])
				}
			}
			continue
		}
		for t := t0; t < t1 && r < r1; t++ {
			q.matVecRange(out[t*rows:(t+1)*rows], x[t*cols:(t+1)*cols], cols, r, r1)
		}
	}
}

// dotQFGo is dotGo with a[i] = float32(tab[w[i]]·s) computed on the fly.
func dotQFGo(tab *[256]float32, s float32, w []byte, b []float32) float32 {
	b = b[:len(w)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(w); i += 4 {
		a0, a1 := float32(tab[w[i]]*s), float32(tab[w[i+1]]*s)
		a2, a3 := float32(tab[w[i+2]]*s), float32(tab[w[i+3]]*s)
		s0 += a0 * b[i]
		s1 += a1 * b[i+1]
		s2 += a2 * b[i+2]
		s3 += a3 * b[i+3]
	}
	for ; i < len(w); i++ {
		s0 += float32(tab[w[i]]*s) * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// DequantizeFP8 writes dst[i] = float32(value(codes[i])·scale), the weights
// MatVecFP8 multiplies by (for reference paths and tests).
func DequantizeFP8(dst []float32, codes []uint8, scale float32, f FP8) {
	fm := fp8Formats[f&1]
	s := float32(scale * fm.factor)
	dst = dst[:len(codes)]
	for i, c := range codes {
		dst[i] = float32(fm.tab[c] * s)
	}
}

// FP8Value returns code's value in format f as these kernels read it
// (E4M3's NaN codes as ±480).
func FP8Value(code uint8, f FP8) float32 {
	fm := fp8Formats[f&1]
	return float32(float64(fm.tab[code]) * float64(fm.factor))
}

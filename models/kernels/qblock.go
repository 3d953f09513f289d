package kernels

import (
	"encoding/binary"
	"fmt"
	"math"

	"chat/models/gguf"
)

// Products with K-quant weights in GGUF's own block layouts
// (ggml/src/ggml-common.h), passed as the raw tensor bytes so a loader can
// hand over mmapped data without copying. The activation is quantized once
// per call by the caller (and can be reused for every weight that
// multiplies the same vector): Q2_K to Q6_K weights take a Q8_K
// activation (QuantizeQ8_K): 256-value super-blocks with a float32 scale
// and int16 sums per 16 values, as ggml's block_q8_K, so the weights'
// offsets (Q6_K's -32, Q3_K's -4) and mins (Q2_K, Q4_K, Q5_K) become one
// multiply with the sums instead of work per value
// (ggml-cpu/arch/x86/quants.c, ggml_vec_dot_q*_K_q8_K). (Q4_0, Q5_0 and Q8_0 are repacked at load into
// interleaved blocks: ilblock.go.)
//
// Integer sums are exact. The float arithmetic is the same sequence of
// float32 roundings in the assembly and the Go versions, so both give the
// same bits: one exact int32 sum per super-block (scales applied in
// integers), then acc += float32(isum)·(d·xd), and for Q2_K/Q4_K/Q5_K accm +=
// float32(msum)·(dmin·xd); the row's result is acc-accm.

// Block sizes and encoded bytes per block of the GGUF layouts.
const (
	QK        = 256 // K-quant super-block length (ggml's QK_K)
	Q8_0Bytes = 34  // half d; 32 int8
	Q5_0Bytes = 22  // half d; 32 fifth bits; 16 bytes of nibbles
	Q4_0Bytes = 18  // half d; 16 bytes of nibbles
	Q5_1Bytes = 24  // half d, m; 32 fifth bits; 16 bytes of nibbles
	Q4_1Bytes = 20  // half d, m; 16 bytes of nibbles
	Q4_KBytes = 144 // half d, dmin; 12 bytes of 6-bit scales and mins; 128 bytes of nibbles
	Q5_KBytes = 176 // as Q4_K plus 32 bytes of fifth bits
	Q6_KBytes = 210 // 128 bytes low nibbles; 64 bytes high 2 bits; 16 int8 scales; half d
	Q2_KBytes = 84  // 16 bytes of 4-bit scales and mins; 64 bytes of 2-bit values; half d, dmin
	Q3_KBytes = 110 // 32 bytes high bits; 64 bytes of 2-bit values; 12 bytes of 6-bit scales; half d

	IQ4_XSBytes = 136 // half d; uint16 scales_h; 4 bytes scales_l; 128 bytes of nibbles
)

// QuantizeQ8_K quantizes x (len(x) a multiple of QK) into Q8_K super-blocks:
// x[i] ≈ d[i/QK]·q[i], and sums[g] = Σ q[16g:16g+16]. It follows ggml's
// quantize_row_q8_K_ref (ggml-quants.c): scale -127/max with max the
// signed value of largest magnitude, round half to even, values in
// [-127, 127] (so the sign trick of the int8 kernels stays valid). With this
// rounding the integer dots equal llama.cpp's for the same weights. The
// assembly gives the same bytes and floats as the loop here for every input,
// NaN and ±Inf included.
// len(q) >= len(x), len(d) >= len(x)/QK, len(sums) >= len(x)/16.
func QuantizeQ8_K(q []int8, d []float32, sums []int16, x []float32) {
	if len(x)%QK != 0 || len(q) < len(x) || len(d) < len(x)/QK || len(sums) < len(x)/16 {
		panic(fmt.Sprintf("kernels.QuantizeQ8_K: len(x)=%d (must be a multiple of %d) with len(q)=%d len(d)=%d len(sums)=%d",
			len(x), QK, len(q), len(d), len(sums)))
	}
	if useAsm && len(x) > 0 {
		quantQ8KAsm(q, d, sums, x)
		return
	}
	quantQ8KGo(q, d, sums, x)
}

// quantQ8KGo is QuantizeQ8_K's reference loop.
func quantQ8KGo(q []int8, d []float32, sums []int16, x []float32) {
	for b := 0; b < len(x)/QK; b++ {
		xb := x[b*QK : (b+1)*QK]
		qb := q[b*QK : (b+1)*QK]
		var amax, mx float32
		for _, v := range xb {
			if a := abs32(v); a > amax {
				amax, mx = a, v
			}
		}
		if amax == 0 || amax != amax {
			clear(qb)
			clear(sums[b*16 : (b+1)*16])
			d[b] = 0
			continue
		}
		iscale := -127 / mx
		for i, v := range xb {
			qb[i] = int8(min(127, nearestInt(iscale*v)))
		}
		for g := 0; g < 16; g++ {
			var s int16
			for _, v := range qb[g*16 : (g+1)*16] {
				s += int16(v)
			}
			sums[b*16+g] = s
		}
		d[b] = 1 / iscale
	}
}

// nearestInt rounds v (|v| < 2^22) half to even as ggml's nearest_int: adding
// 1.5·2^23 leaves the rounded integer in the low mantissa bits.
func nearestInt(v float32) int32 {
	f := float32(v + 12582912)
	return int32(math.Float32bits(f)&0x007fffff) - 0x00400000
}

// MatVecQ4_K computes out[r] = dot(dequantized Q4_K row r, Q8_K activation)
// for r < rows. w holds rows·cols/QK blocks of Q4_KBytes; (xq, xd, xsums) come
// from QuantizeQ8_K; cols must be a multiple of QK.
func MatVecQ4_K(out []float32, w []byte, xq []int8, xd []float32, xsums []int16, rows, cols int) {
	checkBlocks("MatVecQ4_K", out, w, xq, xd, xsums, rows, cols, QK, Q4_KBytes)
	runBlocks(opMatVecQ4K, out, w, xq, xd, xsums, rows, cols)
}

// MatVecQ5_K is MatVecQ4_K for Q5_K weights (blocks of Q5_KBytes).
func MatVecQ5_K(out []float32, w []byte, xq []int8, xd []float32, xsums []int16, rows, cols int) {
	checkBlocks("MatVecQ5_K", out, w, xq, xd, xsums, rows, cols, QK, Q5_KBytes)
	runBlocks(opMatVecQ5K, out, w, xq, xd, xsums, rows, cols)
}

// MatVecQ6_K is MatVecQ4_K for Q6_K weights (blocks of Q6_KBytes).
func MatVecQ6_K(out []float32, w []byte, xq []int8, xd []float32, xsums []int16, rows, cols int) {
	checkBlocks("MatVecQ6_K", out, w, xq, xd, xsums, rows, cols, QK, Q6_KBytes)
	runBlocks(opMatVecQ6K, out, w, xq, xd, xsums, rows, cols)
}

// MatVecQ2_K is MatVecQ4_K for Q2_K weights (blocks of Q2_KBytes).
func MatVecQ2_K(out []float32, w []byte, xq []int8, xd []float32, xsums []int16, rows, cols int) {
	checkBlocks("MatVecQ2_K", out, w, xq, xd, xsums, rows, cols, QK, Q2_KBytes)
	runBlocks(opMatVecQ2K, out, w, xq, xd, xsums, rows, cols)
}

// MatVecQ3_K is MatVecQ4_K for Q3_K weights (blocks of Q3_KBytes).
func MatVecQ3_K(out []float32, w []byte, xq []int8, xd []float32, xsums []int16, rows, cols int) {
	checkBlocks("MatVecQ3_K", out, w, xq, xd, xsums, rows, cols, QK, Q3_KBytes)
	runBlocks(opMatVecQ3K, out, w, xq, xd, xsums, rows, cols)
}

// MatVecIQ4_XS is MatVecQ4_K for IQ4_XS weights (blocks of IQ4_XSBytes),
// as ggml_vec_dot_iq4_xs_q8_K; xsums is not read but checked as for the
// other Q8_K products.
func MatVecIQ4_XS(out []float32, w []byte, xq []int8, xd []float32, xsums []int16, rows, cols int) {
	checkBlocks("MatVecIQ4_XS", out, w, xq, xd, xsums, rows, cols, QK, IQ4_XSBytes)
	runBlocks(opMatVecIQ4XS, out, w, xq, xd, xsums, rows, cols)
}

// checkBlocks panics unless the operands fit the product: the assembly does no
// bounds checking. A nil xsums is not checked (Q4_0 has none).
func checkBlocks(fn string, out []float32, w []byte, xq []int8, xd []float32, xsums []int16, rows, cols, bs, bb int) {
	if rows < 0 || cols < 0 || cols%bs != 0 || len(out) < rows || len(w) < rows*(cols/bs)*bb ||
		len(xq) < cols || len(xd) < cols/bs || (bs == QK && len(xsums) < cols/16) {
		panic(fmt.Sprintf("kernels.%s: rows=%d cols=%d (must be a multiple of %d) with len(out)=%d len(w)=%d (need %d) len(xq)=%d len(xd)=%d len(xsums)=%d",
			fn, rows, cols, bs, len(out), len(w), rows*(cols/bs)*bb, len(xq), len(xd), len(xsums)))
	}
}

// runBlocks splits a block product over the pool, or runs it here when it is
// small or the pool is busy. Sizes count weight values, as for the int8
// products.
func runBlocks(op int, out []float32, w []byte, xq []int8, xd []float32, xsums []int16, rows, cols int) {
	if rows*cols >= 2*parallelMin {
		if j := defaultPool.acquire(); j != nil {
			j.op, j.out, j.wb, j.qx, j.dx, j.xsum = op, out, w, xq, xd, xsums
			j.rows, j.cols = rows, cols
			defaultPool.exec(4)
			return
		}
	}
	blockRange(op, out, w, xq, xd, xsums, cols, 0, rows)
}

// blockGeom returns the values and bytes per block of op's weights.
func blockGeom(op int) (bs, bb int) {
	switch op {
	case opMatVecQ4K:
		bs, bb = QK, Q4_KBytes
	case opMatVecQ5K:
		bs, bb = QK, Q5_KBytes
	case opMatVecQ6K:
		bs, bb = QK, Q6_KBytes
	case opMatVecIQ4XS:
		bs, bb = QK, IQ4_XSBytes
	case opMatVecQ2K:
		bs, bb = QK, Q2_KBytes
	case opMatVecQ3K:
		bs, bb = QK, Q3_KBytes
	}
	return
}

// blockRange computes rows [r0, r1) of a K-quant block product.
func blockRange(op int, out []float32, w []byte, xq []int8, xd []float32, xsums []int16, cols, r0, r1 int) {
	if r1 <= r0 {
		return
	}
	bs, bb := blockGeom(op)
	nb := cols / bs
	rb := nb * bb
	o, wr := out[r0:r1], w[r0*rb:r1*rb]
	xq, xd, xsums = xq[:cols], xd[:nb], xsums[:cols/16]
	if useAsm {
		blockDotsAsm(op, o, wr, xq, xd, xsums, nb)
		return
	}
	for r := range o {
		row := wr[r*rb : (r+1)*rb]
		switch op {
		case opMatVecQ4K:
			o[r] = dotQ4KGo(row, xq, xd, xsums)
		case opMatVecQ5K:
			o[r] = dotQ5KGo(row, xq, xd, xsums)
		case opMatVecQ6K:
			o[r] = dotQ6KGo(row, xq, xd, xsums)
		case opMatVecIQ4XS:
			o[r] = dotIQ4XSGo(row, xq, xd)
		case opMatVecQ2K:
			o[r] = dotQ2KGo(row, xq, xd, xsums)
		case opMatVecQ3K:
			o[r] = dotQ3KGo(row, xq, xd, xsums)
		}
	}
}

// f16 converts an IEEE half to float32 (exact, as VCVTPH2PS).
func f16(b []byte) float32 {
	h := binary.LittleEndian.Uint16(b)
	sign := uint32(h>>15) << 31
	exp := uint32(h>>10) & 0x1f
	man := uint32(h) & 0x3ff
	switch {
	case exp == 0x1f:
		return math.Float32frombits(sign | 0x7f800000 | man<<13)
	case exp != 0:
		return math.Float32frombits(sign | (exp+112)<<23 | man<<13)
	case man == 0:
		return math.Float32frombits(sign)
	}
	f := float32(man) * (1.0 / (1 << 24)) // subnormal: exact
	if sign != 0 {
		f = -f
	}
	return f
}

// hsum8 reduces 8 lanes in the order of the asm HSUM macro.
func hsum8(a *[8]float32) float32 {
	return ((a[0] + a[4]) + (a[2] + a[6])) + ((a[1] + a[5]) + (a[3] + a[7]))
}

// unpackK4 returns the 8 six-bit scales and mins of a Q4_K/Q5_K block's 12
// scale bytes (ggml's get_scale_min_k4: j<4 in the low 6 bits of bytes j and
// j+4; j>=4 in the nibbles of byte j+4 with their top 2 bits in the top bits
// of bytes j-4 and j).
func unpackK4(s []byte) (sc, m [8]int32) {
	for j := 0; j < 4; j++ {
		sc[j] = int32(s[j] & 63)
		m[j] = int32(s[j+4] & 63)
		sc[j+4] = int32(s[j+8]&0xf | (s[j]>>6)<<4)
		m[j+4] = int32(s[j+8]>>4 | (s[j+4]>>6)<<4)
	}
	return
}

// minSum is Σ_j m[j]·(sums of sub-block j's 32 activations).
func minSum(m *[8]int32, sums []int16) int32 {
	var s int32
	for j := 0; j < 8; j++ {
		s += m[j] * (int32(sums[2*j]) + int32(sums[2*j+1]))
	}
	return s
}

// dotQ4KGo: block_q4_K is half d, dmin; scales[12]; qs[128]. Each 32 bytes of
// qs hold two sub-blocks of 32: low nibbles then high nibbles; value =
// d·sc_j·q - dmin·m_j (dequantize_row_q4_K).
func dotQ4KGo(row []byte, xq []int8, xd []float32, xsums []int16) float32 {
	var acc, accm float32
	for b := range xd {
		blk := row[b*Q4_KBytes : (b+1)*Q4_KBytes]
		sc, m := unpackK4(blk[4:16])
		x := xq[b*QK : (b+1)*QK]
		var isum int32
		for j := 0; j < 4; j++ {
			qs := blk[16+32*j : 48+32*j]
			xl, xh := x[64*j:64*j+32], x[64*j+32:64*j+64]
			var lo, hi int32
			for l, q := range qs {
				lo += int32(q&0xf) * int32(xl[l])
				hi += int32(q>>4) * int32(xh[l])
			}
			isum += sc[2*j]*lo + sc[2*j+1]*hi
		}
		msum := minSum(&m, xsums[b*16:(b+1)*16])
		acc += float32(float32(isum) * float32(f16(blk[0:])*xd[b]))
		accm += float32(float32(msum) * float32(f16(blk[2:])*xd[b]))
	}
	return acc - accm
}

// dotQ5KGo: block_q5_K is half d, dmin; scales[12]; qh[32]; qs[128]. As Q4_K
// with a fifth bit: bit 2j of qh[l] for the low nibble of sub-block pair j,
// bit 2j+1 for the high one (dequantize_row_q5_K).
func dotQ5KGo(row []byte, xq []int8, xd []float32, xsums []int16) float32 {
	var acc, accm float32
	for b := range xd {
		blk := row[b*Q5_KBytes : (b+1)*Q5_KBytes]
		sc, m := unpackK4(blk[4:16])
		qh := blk[16:48]
		x := xq[b*QK : (b+1)*QK]
		var isum int32
		for j := 0; j < 4; j++ {
			qs := blk[48+32*j : 80+32*j]
			xl, xh := x[64*j:64*j+32], x[64*j+32:64*j+64]
			var lo, hi int32
			for l, q := range qs {
				h := qh[l] >> (2 * j)
				lo += int32(q&0xf|(h&1)<<4) * int32(xl[l])
				hi += int32(q>>4|(h&2)<<3) * int32(xh[l])
			}
			isum += sc[2*j]*lo + sc[2*j+1]*hi
		}
		msum := minSum(&m, xsums[b*16:(b+1)*16])
		acc += float32(float32(isum) * float32(f16(blk[0:])*xd[b]))
		accm += float32(float32(msum) * float32(f16(blk[2:])*xd[b]))
	}
	return acc - accm
}

// dotQ6KGo: block_q6_K is ql[128]; qh[64]; int8 scales[16]; half d. Each half
// of 128 values uses 64 bytes of ql, 32 of qh and 8 scales; value =
// d·sc·(q-32) with q = 4 low bits | 2 high bits (dequantize_row_q6_K). The -32
// is applied through the activation sums: Σ sc·(q-32)·x = Σ sc·q·x - 32·Σ sc·sums.
func dotQ6KGo(row []byte, xq []int8, xd []float32, xsums []int16) float32 {
	var acc float32
	for b := range xd {
		blk := row[b*Q6_KBytes : (b+1)*Q6_KBytes]
		x := xq[b*QK : (b+1)*QK]
		sums := xsums[b*16 : (b+1)*16]
		var isum, corr int32
		for h := 0; h < 2; h++ {
			ql := blk[64*h : 64*h+64]
			qh := blk[128+32*h : 160+32*h]
			sc := blk[192+8*h : 200+8*h]
			xh := x[128*h : 128*h+128]
			for half := 0; half < 2; half++ { // values l < 16 and l >= 16 of each chunk
				var s0, s1, s2, s3 int32
				for l := 16 * half; l < 16*half+16; l++ {
					s0 += int32(ql[l]&0xf|(qh[l]&3)<<4) * int32(xh[l])
					s1 += int32(ql[l+32]&0xf|(qh[l]>>2&3)<<4) * int32(xh[l+32])
					s2 += int32(ql[l]>>4|(qh[l]>>4&3)<<4) * int32(xh[l+64])
					s3 += int32(ql[l+32]>>4|(qh[l]>>6&3)<<4) * int32(xh[l+96])
				}
				isum += int32(int8(sc[half]))*s0 + int32(int8(sc[half+2]))*s1 +
					int32(int8(sc[half+4]))*s2 + int32(int8(sc[half+6]))*s3
			}
		}
		for g := 0; g < 16; g++ {
			corr += int32(int8(blk[192+g])) * int32(sums[g])
		}
		isum -= 32 * corr
		acc += float32(float32(isum) * float32(f16(blk[208:])*xd[b]))
	}
	return acc
}

// dotQ2KGo: block_q2_K is scales[16] (scale low nibble, min high); qs[64];
// half d, dmin. Sub-block k (16 values) is bits 2·(k%8/2) of the 16 bytes
// of qs at 32·(k/8)+16·(k%2); value = d·sc_k·q - dmin·m_k
// (dequantize_row_q2_K). The scales multiply in integers and the mins meet
// the activation sums, as ggml_vec_dot_q2_K_q8_K; the float steps are
// dotQ4KGo's.
func dotQ2KGo(row []byte, xq []int8, xd []float32, xsums []int16) float32 {
	var acc, accm float32
	for b := range xd {
		blk := row[b*Q2_KBytes : (b+1)*Q2_KBytes]
		x, sums := xq[b*QK:(b+1)*QK], xsums[b*16:(b+1)*16]
		var isum, msum int32
		for k := 0; k < 16; k++ {
			qs := blk[16+32*(k/8)+16*(k%2):][:16]
			shift := 2 * (k % 8 / 2)
			var s int32
			for l, q := range qs {
				s += int32(q>>shift&3) * int32(x[16*k+l])
			}
			isum += int32(blk[k]&0xf) * s
			msum += int32(blk[k]>>4) * int32(sums[k])
		}
		acc += float32(float32(isum) * float32(f16(blk[80:])*xd[b]))
		accm += float32(float32(msum) * float32(f16(blk[82:])*xd[b]))
	}
	return acc - accm
}

// dotQ3KGo: block_q3_K is hmask[32]; qs[64]; scales[12]; half d. Value j
// of sub-block k is q-4 with q its 2 bits laid out as Q2_K's plus 4 times
// bit j/32 of hmask[j%32], scaled by d·gguf.Q3KScale(k) (dequantize_row_q3_K).
// The -4 is applied through the activation sums, as Q6_K's -32: one exact
// int sum and one float step per super-block (ggml_vec_dot_q3_K_q8_K).
func dotQ3KGo(row []byte, xq []int8, xd []float32, xsums []int16) float32 {
	var acc float32
	for b := range xd {
		blk := row[b*Q3_KBytes : (b+1)*Q3_KBytes]
		hm, sc := blk[0:32], blk[96:108]
		x, sums := xq[b*QK:(b+1)*QK], xsums[b*16:(b+1)*16]
		var isum, corr int32
		for k := 0; k < 16; k++ {
			qs := blk[32+32*(k/8)+16*(k%2):][:16]
			shift := 2 * (k % 8 / 2)
			var s int32
			for l, q := range qs {
				j := 16*k + l
				s += int32(q>>shift&3|(hm[j%32]>>(j/32)&1)<<2) * int32(x[j])
			}
			scale := int32(gguf.Q3KScale(sc, k))
			isum += scale * s
			corr += scale * int32(sums[k])
		}
		isum -= 4 * corr
		acc += float32(float32(isum) * float32(f16(blk[108:])*xd[b]))
	}
	return acc
}

// dotIQ4XSGo: block_iq4_xs is half d; uint16 scales_h; scales_l[4];
// qs[128]. Sub-block ib's 16 bytes of qs hold its values 0..15 in the low
// nibbles and 16..31 in the high ones, each an index into the levels
// gguf.IQ4NLValues, scaled by d·(ls-32) (dequantize_row_iq4_xs). As ggml's
// AVX2 ggml_vec_dot_iq4_xs_q8_K (ggml-cpu/arch/x86/quants.c), the 6-bit
// scales multiply in integers and each super-block takes one float step.
func dotIQ4XSGo(row []byte, xq []int8, xd []float32) float32 {
	var acc float32
	for b := range xd {
		blk := row[b*IQ4_XSBytes : (b+1)*IQ4_XSBytes]
		sh := binary.LittleEndian.Uint16(blk[2:])
		x := xq[b*QK : (b+1)*QK]
		var isum int32
		for ib := 0; ib < 8; ib++ {
			qs, xs := blk[8+16*ib:24+16*ib], x[32*ib:32*ib+32]
			var s int32
			for j, q := range qs {
				s += int32(gguf.IQ4NLValues[q&0xf])*int32(xs[j]) + int32(gguf.IQ4NLValues[q>>4])*int32(xs[j+16])
			}
			isum += int32(gguf.IQ4XSScale(sh, blk[4:8], ib)-32) * s
		}
		acc += float32(float32(isum) * float32(f16(blk)*xd[b]))
	}
	return acc
}

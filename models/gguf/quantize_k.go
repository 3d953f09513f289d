package gguf

import "math"

// The k-quants: super-blocks of QK_K = 256 values split into sub-blocks of
// 16 or 32, each with its own scale (and min), the scales themselves
// quantised against one f16 super-block scale. The fitting helpers and the
// block quantizers follow ggml/src/ggml-quants.c (make_qkx2_quants,
// make_qx_quants, make_q3_quants, quantize_row_q{2..6}_K_ref); see
// quantize.go for the float32 rules they keep.

// kMaxAbs is the largest magnitude each k-quant (and IQ4_XS) can hold: the
// f16 maximum times the largest scale level times the largest quant level.
// Quantize refuses larger values: they overflow the f16 super-block scale,
// and far larger ones (past about 1e12) overflow ggml's float32 fit, which
// then silently writes a zero block (IQ4_XS: a sub-block of garbage).
var kMaxAbs = map[Type]float32{
	TypeQ2_K:   65504 * 15 * 3,
	TypeQ3_K:   65504 * 32 * 4,
	TypeQ4_K:   65504 * 63 * 15,
	TypeQ5_K:   65504 * 63 * 31,
	TypeQ6_K:   65504 * 128 * 32,
	TypeIQ4_XS: 65504 * 32 * 127,
}

// groupMaxEps is ggml's GROUP_MAX_EPS: sub-blocks whose largest magnitude is
// below it count as all zero.
const groupMaxEps = float32(1e-15)

// nearestInt is ggml's nearest_int: adding 1.5·2^23 leaves x rounded half to
// even in the low mantissa bits. ggml asserts |x| ≤ 4194303 only in debug
// builds; outside that range (or for Inf and NaN, which only a subnormal
// scale produces) this returns the same bits a release build does.
func nearestInt(x float32) int {
	f := float32(x) + 12582912 // float32(x): never fused with the caller's product
	return int(math.Float32bits(f)&0x7fffff) - 0x400000
}

func clampInt(v, lo, hi int) int { return max(lo, min(hi, v)) }

func sqrt32(v float32) float32 { return float32(math.Sqrt(float64(v))) }

// makeQKX2 fits x ≈ scale·L + min with L in 0..nmax and min ≤ 0, minimising
// the w-weighted squared (or, with mad, absolute) error: it starts from the
// min/max grid and tries nstep+1 grids of nmax+rmin+rdelta·i steps, each
// with its least-squares scale and min (make_qkx2_quants). It returns the
// scale and -min and leaves the levels in L; aux is scratch of len(x).
func makeQKX2(nmax int, x, w []float32, L, aux []uint8, rmin, rdelta float32, nstep int, mad bool) (scale, negMin float32) {
	lo, hi := x[0], x[0]
	sumW := w[0]
	sumX := float32(sumW * x[0])
	for i := 1; i < len(x); i++ {
		if x[i] < lo {
			lo = x[i]
		}
		if x[i] > hi {
			hi = x[i]
		}
		sumW += w[i]
		sumX += float32(w[i] * x[i])
	}
	if lo > 0 {
		lo = 0
	}
	if hi == lo {
		clear(L)
		return 0, -lo
	}
	fmax := float32(nmax)
	errOf := func(diff float32) float32 {
		if mad {
			return abs32(diff)
		}
		return diff * diff
	}
	iscale := fmax / (hi - lo)
	scale = 1 / iscale
	var best float32
	for i, v := range x {
		L[i] = uint8(clampInt(nearestInt(float32(iscale*(v-lo))), 0, nmax))
		diff := float32(scale*float32(L[i])) + lo - v
		best += float32(w[i] * errOf(diff))
	}
	for is := 0; is <= nstep; is++ {
		iscale = (rmin + float32(rdelta*float32(is)) + fmax) / (hi - lo)
		var sumL, sumL2, sumXL float32
		for i, v := range x {
			l := clampInt(nearestInt(float32(iscale*(v-lo))), 0, nmax)
			aux[i] = uint8(l)
			fl := float32(l)
			sumL += float32(w[i] * fl)
			sumL2 += float32(w[i] * fl * fl)
			sumXL += float32(w[i] * fl * v)
		}
		D := float32(sumW*sumL2) - float32(sumL*sumL)
		if !(D > 0) { // NaN too, as in C
			continue
		}
		thisScale := (float32(sumW*sumXL) - float32(sumX*sumL)) / D
		thisMin := (float32(sumL2*sumX) - float32(sumL*sumXL)) / D
		if thisMin > 0 {
			thisMin = 0
			thisScale = sumXL / sumL2
		}
		var cur float32
		for i, v := range x {
			diff := float32(thisScale*float32(aux[i])) + thisMin - v
			cur += float32(w[i] * errOf(diff))
		}
		if cur < best {
			copy(L, aux)
			best, scale, lo = cur, thisScale, thisMin
		}
	}
	return scale, -lo
}

// makeQX fits x ≈ scale·(L-nmax) with L in 0..2·nmax-1, weighting each value
// by x² (make_qx_quants with rmse_type 1 and no importance weights, the
// form q6_K uses): the grid that maps the largest magnitude to -nmax, then
// 18 grids nudged by ±0.1·i steps, keeping the best weighted fit.
func makeQX(nmax int, x []float32, L []int8) float32 {
	m, amax := blockAbsMax(x)
	if amax < groupMaxEps {
		clear(L)
		return 0
	}
	fmax := float32(nmax)
	// sums is the weighted least-squares fit at iscale; with store it
	// also writes the levels.
	sums := func(iscale float32, store bool) (sumlx, suml2 float32) {
		for i, v := range x {
			l := clampInt(nearestInt(float32(iscale*v)), -nmax, nmax-1)
			if store {
				L[i] = int8(l + nmax)
			}
			w := v * v
			fl := float32(l)
			sumlx += float32(w * v * fl)
			suml2 += float32(w * fl * fl)
		}
		return sumlx, suml2
	}
	sumlx, suml2 := sums(-fmax/m, true)
	var scale float32
	if suml2 != 0 {
		scale = sumlx / suml2
	}
	best := scale * sumlx
	for is := -9; is <= 9; is++ {
		if is == 0 {
			continue
		}
		iscale := -(fmax + float32(0.1*float32(is))) / m
		sumlx, suml2 = sums(iscale, false)
		if suml2 > 0 && sumlx*sumlx > best*suml2 {
			sums(iscale, true)
			scale = sumlx / suml2
			best = scale * sumlx
		}
	}
	return scale
}

// makeQ3 fits x ≈ scale·(L-nmax) with L in 0..2·nmax-1, weighting by x²:
// the grid that maps the largest magnitude to -nmax, then up to five passes
// that move single levels to their weighted optimum while that improves the
// fit (make_q3_quants with do_rmse, as q3_K uses it).
func makeQ3(nmax int, x []float32, L []int8) float32 {
	m, amax := blockAbsMax(x)
	if amax < groupMaxEps {
		clear(L)
		return 0
	}
	iscale := -float32(nmax) / m
	var sumlx, suml2 float32
	for i, v := range x {
		l := clampInt(nearestInt(float32(iscale*v)), -nmax, nmax-1)
		L[i] = int8(l)
		w := v * v
		fl := float32(l)
		sumlx += float32(w * v * fl)
		suml2 += float32(w * fl * fl)
	}
	for range 5 {
		changed := false
		for i, v := range x {
			w := v * v
			fl := float32(L[i])
			slx := sumlx - float32(w*v*fl)
			if !(slx > 0) {
				continue
			}
			sl2 := suml2 - float32(w*fl*fl)
			nl := clampInt(nearestInt(v*sl2/slx), -nmax, nmax-1)
			if nl == int(L[i]) {
				continue
			}
			fn := float32(nl)
			slx += float32(w * v * fn)
			sl2 += float32(w * fn * fn)
			if sl2 > 0 && slx*slx*suml2 > sumlx*sumlx*sl2 {
				L[i] = int8(nl)
				sumlx, suml2 = slx, sl2
				changed = true
			}
		}
		if !changed {
			break
		}
	}
	for i := range L {
		L[i] += int8(nmax)
	}
	if suml2 > 0 {
		return sumlx / suml2
	}
	return 0
}

// packQ2 stores 2-bit levels as q2_K and q3_K do: in each half of 128
// values, byte l holds values l, l+32, l+64 and l+96 from the low bits up.
func packQ2[T int8 | uint8](L []T, qs []byte) {
	for j := 0; j < QK_K; j += 128 {
		for l := 0; l < 32; l++ {
			qs[j/4+l] = byte(L[j+l]) | byte(L[j+l+32])<<2 | byte(L[j+l+64])<<4 | byte(L[j+l+96])<<6
		}
	}
}

// quantQ2K is quantize_row_q2_K_ref: sixteen sub-blocks of 16 fitted by
// makeQKX2 (3 levels above a min, weights |x|, least absolute error), their
// scales and mins quantised to 4 bits against d and dmin, the values
// re-quantised with those. Layout: scales[16] (scale low nibble, min high);
// qs[64]; half d, dmin.
func quantQ2K(x []float32, y []byte) bool {
	var L [QK_K]uint8
	var aux [16]uint8
	var w, scales, mins [16]float32
	var maxScale, maxMin float32
	for j := range 16 {
		xs := x[16*j : 16*j+16]
		for l, v := range xs {
			w[l] = abs32(v)
		}
		scales[j], mins[j] = makeQKX2(3, xs, w[:], L[16*j:16*j+16], aux[:], -0.5, 0.1, 15, true)
		if scales[j] > maxScale {
			maxScale = scales[j]
		}
		if mins[j] > maxMin {
			maxMin = mins[j]
		}
	}
	sc := y[0:16]
	ok := true
	if maxScale > 0 {
		iscale := 15 / maxScale
		for j := range 16 {
			sc[j] = uint8(nearestInt(float32(iscale * scales[j])))
		}
		ok = putHalf(y[80:], maxScale/15)
	} else {
		clear(sc)
		putHalf(y[80:], 0)
	}
	if maxMin > 0 {
		iscale := 15 / maxMin
		for j := range 16 {
			sc[j] |= uint8(nearestInt(float32(iscale*mins[j])) << 4)
		}
		ok = putHalf(y[82:], maxMin/15) && ok
	} else {
		putHalf(y[82:], 0)
	}
	d, dmin := f16at(y, 80), f16at(y, 82)
	for j := range 16 {
		dl := d * float32(sc[j]&0xf)
		if dl == 0 {
			continue
		}
		ml := float32(dmin * float32(sc[j]>>4))
		for i := 16 * j; i < 16*j+16; i++ {
			L[i] = uint8(clampInt(nearestInt((x[i]+ml)/dl), 0, 3))
		}
	}
	packQ2(L[:], y[16:80])
	return ok
}

// Q3KScale is the j-th signed 6-bit scale of a q3_K block: low nibbles of
// scales[0..7] for j < 8, high nibbles for j ≥ 8, and the top two bits from
// scales[8 + j%4] at bit 2·(j/4).
func Q3KScale(scales []byte, j int) int {
	lo := scales[j%8] & 0xf
	if j >= 8 {
		lo = scales[j-8] >> 4
	}
	return int(lo|(scales[8+j%4]>>(2*(j/4))&3)<<4) - 32
}

// quantQ3K is quantize_row_q3_K_ref: sixteen sub-blocks of 16 fitted by
// makeQ3 (levels -4..3), their signed scales quantised to 6 bits against d,
// the values re-quantised with those. Layout: hmask[32] (bit j/32 of byte
// j%32 is the high bit of value j); qs[64] (low two bits, as packQ2);
// scales[12] (Q3KScale); half d.
func quantQ3K(x []float32, y []byte) bool {
	var L [QK_K]int8
	var scales [16]float32
	var maxScale, amax float32
	for j := range 16 {
		scales[j] = makeQ3(4, x[16*j:16*j+16], L[16*j:16*j+16])
		if a := abs32(scales[j]); a > amax {
			amax, maxScale = a, scales[j]
		}
	}
	sc := y[96:108]
	ok := true
	if maxScale != 0 {
		iscale := -32 / maxScale
		for j := range 16 {
			l := clampInt(int(int8(nearestInt(float32(iscale*scales[j])))), -32, 31) + 32
			if j < 8 {
				sc[j] = byte(l & 0xf)
			} else {
				sc[j-8] |= byte(l&0xf) << 4
			}
			sc[8+j%4] |= byte(l>>4) << (2 * (j / 4))
		}
		ok = putHalf(y[108:], 1/iscale)
	} else {
		putHalf(y[108:], 0)
	}
	d := f16at(y, 108)
	for j := range 16 {
		dl := d * float32(Q3KScale(sc, j))
		if dl == 0 {
			continue
		}
		for i := 16 * j; i < 16*j+16; i++ {
			L[i] = int8(clampInt(nearestInt(x[i]/dl), -4, 3) + 4)
		}
	}
	hmask := y[0:32]
	for j := range L {
		if L[j] > 3 {
			hmask[j%32] |= 1 << (j / 32)
			L[j] -= 4
		}
	}
	packQ2(L[:], y[32:96])
	return ok
}

// fitK32 is the part quantize_row_q4_K_ref and q5_K_ref share: eight
// sub-blocks of 32 fitted by makeQKX2 (levels 0..nmax above a min, weights
// rms(x)+|x|), their scales and mins quantised to 6 bits against d and dmin
// and packed as scaleMinK4 reads them, then the values re-quantised with the
// stored scales into L. hdr is the block's first 16 bytes: half d, dmin;
// scales[12].
func fitK32(x []float32, L *[QK_K]uint8, nmax int, rmin float32, nstep int, hdr []byte) bool {
	var aux [32]uint8
	var w [32]float32
	var scales, mins [8]float32
	var maxScale, maxMin float32
	for j := range 8 {
		xs := x[32*j : 32*j+32]
		var sumX2 float32
		for _, v := range xs {
			sumX2 += float32(v * v)
		}
		avX := sqrt32(sumX2 / 32)
		for l, v := range xs {
			w[l] = avX + abs32(v)
		}
		scales[j], mins[j] = makeQKX2(nmax, xs, w[:], L[32*j:32*j+32], aux[:], rmin, 0.1, nstep, false)
		if scales[j] > maxScale {
			maxScale = scales[j]
		}
		if mins[j] > maxMin {
			maxMin = mins[j]
		}
	}
	var invScale, invMin float32
	if maxScale > 0 {
		invScale = 63 / maxScale
	}
	if maxMin > 0 {
		invMin = 63 / maxMin
	}
	sc := hdr[4:16]
	for j := range 8 {
		ls := min(63, uint8(nearestInt(float32(invScale*scales[j]))))
		lm := min(63, uint8(nearestInt(float32(invMin*mins[j]))))
		if j < 4 {
			sc[j], sc[j+4] = ls, lm
		} else {
			sc[j+4] = ls&0xf | lm<<4
			sc[j-4] |= ls >> 4 << 6
			sc[j] |= lm >> 4 << 6
		}
	}
	ok := putHalf(hdr[0:], maxScale/63)
	ok = putHalf(hdr[2:], maxMin/63) && ok
	d, dmin := f16at(hdr, 0), f16at(hdr, 2)
	for j := range 8 {
		s, m := scaleMinK4(j, sc)
		dl := d * float32(s)
		if dl == 0 {
			continue
		}
		ml := float32(dmin * float32(m))
		for i := 32 * j; i < 32*j+32; i++ {
			L[i] = uint8(clampInt(nearestInt((x[i]+ml)/dl), 0, nmax))
		}
	}
	return ok
}

// quantQ4K is quantize_row_q4_K_ref (fitK32 with 16 levels and 21 grids).
// Layout: half d, dmin; scales[12]; qs[128], where in each 64 values byte l
// holds value l in the low nibble and l+32 in the high one.
func quantQ4K(x []float32, y []byte) bool {
	var L [QK_K]uint8
	ok := fitK32(x, &L, 15, -1, 20, y[0:16])
	q := y[16:144]
	for j := 0; j < QK_K; j += 64 {
		for l := range 32 {
			q[l] = L[j+l] | L[j+l+32]<<4
		}
		q = q[32:]
	}
	return ok
}

// quantQ5K is quantize_row_q5_K_ref (fitK32 with 32 levels and 16 grids).
// Layout: half d, dmin; scales[12]; qh[32]; qs[128]: the low nibbles as in
// q4_K, and the fifth bit of value 64·k+l (l < 32) in bit 2k of qh[l], of
// value 64·k+32+l in bit 2k+1.
func quantQ5K(x []float32, y []byte) bool {
	var L [QK_K]uint8
	ok := fitK32(x, &L, 31, -0.5, 15, y[0:16])
	qh, ql := y[16:48], y[48:176]
	for n := 0; n < QK_K; n += 64 {
		bit := n / 32
		for j := range 32 {
			l1, l2 := L[n+j], L[n+j+32]
			qh[j] |= l1>>4<<bit | l2>>4<<(bit+1)
			ql[j] = l1&0xf | l2<<4
		}
		ql = ql[32:]
	}
	return ok
}

// quantQ6K is quantize_row_q6_K_ref: sixteen sub-blocks of 16 fitted by
// makeQX (levels -32..31), their signed scales quantised to int8 against d,
// the values re-quantised with those. Layout: ql[128]; qh[64]; int8
// scales[16]; half d. In each 128 values, ql[l] holds values l and l+64
// (low/high nibble), ql[l+32] values l+32 and l+96, and qh[l] the top two
// bits of l, l+32, l+64, l+96 from the low bits up.
func quantQ6K(x []float32, y []byte) bool {
	var L [QK_K]int8
	var scales [16]float32
	var maxScale, amax float32
	for j := range 16 {
		scales[j] = makeQX(32, x[16*j:16*j+16], L[16*j:16*j+16])
		if a := abs32(scales[j]); a > amax {
			amax, maxScale = a, scales[j]
		}
	}
	if amax < groupMaxEps {
		return true // an all-zero block, d = 0 included
	}
	iscale := -128 / maxScale
	ok := putHalf(y[208:], 1/iscale)
	sc := y[192:208]
	for j := range 16 {
		sc[j] = byte(min(127, nearestInt(float32(iscale*scales[j]))))
	}
	d := f16at(y, 208)
	for j := range 16 {
		dl := d * float32(int8(sc[j]))
		if dl == 0 {
			continue
		}
		for i := 16 * j; i < 16*j+16; i++ {
			L[i] = int8(clampInt(nearestInt(x[i]/dl), -32, 31) + 32)
		}
	}
	ql, qh := y[0:128], y[128:192]
	for j := 0; j < QK_K; j += 128 {
		for l := range 32 {
			q1, q2, q3, q4 := byte(L[j+l]), byte(L[j+l+32]), byte(L[j+l+64]), byte(L[j+l+96])
			ql[l] = q1&0xf | q3<<4
			ql[l+32] = q2&0xf | q4<<4
			qh[l] = q1>>4 | q2>>4<<2 | q3>>4<<4 | q4>>4<<6
		}
		ql, qh = ql[64:], qh[32:]
	}
	return ok
}

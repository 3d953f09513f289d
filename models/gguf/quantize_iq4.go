package gguf

import "encoding/binary"

// IQ4_NL and IQ4_XS as llama-quantize writes them without an importance
// matrix: ggml's quantize_iq4_nl and quantize_iq4_xs, both
// quantize_row_iq4_nl_impl with ntry 7 (ggml-quants.c; ggml_quantize_chunk
// calls these, not quantize_row_iq4_nl_ref, whose ntry -1 skips the search).
// The float32 rules of quantize.go apply.

// iq4Index is ggml's best_index_int8 over IQ4NLValues: a bisection to the
// two levels around x, then the nearer one, the upper on a tie (NaN gives
// 15, as in C).
func iq4Index(x float32) uint8 {
	v := &IQ4NLValues
	if x <= float32(v[0]) {
		return 0
	}
	if x >= float32(v[15]) {
		return 15
	}
	lo, hi := 0, 15
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if x < float32(v[mid]) {
			hi = mid
		} else {
			lo = mid
		}
	}
	if x-float32(v[hi-1]) < float32(v[hi])-x {
		return uint8(hi - 1)
	}
	return uint8(hi)
}

// iq4Scale fits the scale of 32 values: each value weighs x², the first
// guess maps the value of largest magnitude to +127, then 15 grids map it
// to -127±7, each with its least-squares scale, and the one with the least
// weighted error (the largest Σwqx²/Σwq²) wins. Blocks below GROUP_MAX_EPS
// get 0.
func iq4Scale(x []float32) float32 {
	m, amax := blockAbsMax(x)
	if amax < groupMaxEps {
		return 0
	}
	var w [32]float32
	for j, v := range x {
		w[j] = v * v
	}
	fit := func(id float32) (sumqx, sumq2 float32) {
		for j, v := range x {
			q := float32(IQ4NLValues[iq4Index(id*v)])
			sumqx += float32(float32(w[j]*q) * v)
			sumq2 += float32(float32(w[j]*q) * q)
		}
		return sumqx, sumq2
	}
	sumqx, sumq2 := fit(1 / (-m / float32(IQ4NLValues[0])))
	var d float32
	if sumq2 > 0 {
		d = sumqx / sumq2
	}
	best := d * sumqx
	for itry := -7; itry <= 7; itry++ {
		sumqx, sumq2 := fit(float32(itry+int(IQ4NLValues[0])) / m)
		if sumq2 > 0 && float32(sumqx*sumqx) > float32(best*sumq2) {
			d = sumqx / sumq2
			best = d * sumqx
		}
	}
	return d
}

// iq4Pack writes the nearest levels of x·id (32 values) as nibbles into qs:
// x[j] in the low nibble of qs[j], x[j+16] in the high one.
func iq4Pack(x []float32, id float32, qs []byte) {
	for j := 0; j < 16; j++ {
		qs[j] = iq4Index(id*x[j]) | iq4Index(id*x[j+16])<<4
	}
}

// quantIQ4NL encodes block_iq4_nl: half d; qs[16]. The levels are chosen
// again for the fitted scale.
func quantIQ4NL(x []float32, y []byte) bool {
	d := iq4Scale(x)
	ok := putHalf(y, d)
	iq4Pack(x, inv(d), y[2:18])
	return ok
}

// quantIQ4XS encodes block_iq4_xs: half d; uint16 scales_h; scales_l[4];
// qs[128]. Each sub-block of 32 is fitted alone; d = -max/32 for the
// sub-block scale of largest magnitude, each sub-block scale becomes the
// nearest 6-bit step l-32 of (float32, not f16) d, and its levels are chosen
// again for d·l.
func quantIQ4XS(x []float32, y []byte) bool {
	var sc [8]float32
	var ms, ams float32
	for ib := range sc {
		sc[ib] = iq4Scale(x[32*ib : 32*ib+32])
		if a := abs32(sc[ib]); a > ams {
			ams, ms = a, sc[ib]
		}
	}
	d := -ms / 32
	ok := putHalf(y, d)
	id := inv(d)
	var sh uint16
	for ib := range sc {
		l := clampInt(nearestInt(id*sc[ib]), -32, 31)
		iq4Pack(x[32*ib:32*ib+32], inv(d*float32(l)), y[8+16*ib:])
		l += 32
		y[4+ib/2] |= byte(l&0xf) << (4 * (ib % 2))
		sh |= uint16(l>>4) << (2 * ib)
	}
	binary.LittleEndian.PutUint16(y[2:], sh)
	return ok
}

package gguf

import (
	"encoding/binary"
	"math"
)

// Quantizers for IQ4_NL and IQ4_XS, simpler than llama.cpp's
// quantize_row_iq4_nl_impl (ggml-quants.c), whose search they follow in
// part: each 32 values try the 15 scales that map their value of largest
// magnitude to -127±7 (-127 is the table's widest level), take every value's
// nearest level and keep the least-squares scale of the levels that fit
// best. llama.cpp weights each value's error by x² or an importance matrix
// and refines the levels once more; here every value counts the same. The
// bytes differ from llama-quantize's; llama.cpp reads them as any other.

// iq4Index is the index of the level of IQ4NLValues nearest v, the lower
// one on a tie (ggml's best_index_int8 by a scan of the midpoints).
func iq4Index(v float64) uint8 {
	i := 0
	for i < 15 && 2*v > float64(IQ4NLValues[i])+float64(IQ4NLValues[i+1]) {
		i++
	}
	return uint8(i)
}

// iq4Fit writes the nibbles of 32 values x into qs (16 bytes, as
// block_iq4_nl's) and returns their scale; float64 keeps tiny and huge
// blocks from overflowing before the caller checks the scale's f16.
func iq4Fit(x []float32, qs []byte) float64 {
	m, amax := blockAbsMax(x)
	if amax == 0 {
		iq4Pack(x, 0, qs)
		return 0
	}
	best, bestErr := 0.0, -1.0
	for t := -7; t <= 7; t++ {
		id := float64(t-127) / float64(m)
		sxl, sll := iq4Levels(x, id, nil)
		// With the least-squares scale the squared error is Σx² - sxl²/sll.
		if e := sxl * sxl / sll; e > bestErr {
			best, bestErr = id, e
		}
	}
	return iq4Pack(x, best, qs)
}

// iq4Levels picks the nearest level of x·id for each value, writing them
// as nibbles into qs unless it is nil, and returns Σx·l and Σl².
func iq4Levels(x []float32, id float64, qs []byte) (sxl, sll float64) {
	for j := 0; j < 16; j++ {
		lo, hi := iq4Index(float64(x[j])*id), iq4Index(float64(x[j+16])*id)
		if qs != nil {
			qs[j] = lo | hi<<4
		}
		l0, l1 := float64(IQ4NLValues[lo]), float64(IQ4NLValues[hi])
		sxl += float64(x[j])*l0 + float64(x[j+16])*l1
		sll += l0*l0 + l1*l1
	}
	return sxl, sll
}

// iq4Pack writes the nearest levels of x·id as nibbles into qs and returns
// the least-squares scale Σx·l/Σl² for them (0 when id is 0).
func iq4Pack(x []float32, id float64, qs []byte) float64 {
	sxl, sll := iq4Levels(x, id, qs)
	if id == 0 {
		return 0
	}
	return sxl / sll
}

// quantIQ4NL encodes block_iq4_nl: half d; qs[16].
func quantIQ4NL(x []float32, y []byte) bool {
	return putHalf(y, float32(iq4Fit(x, y[2:18])))
}

// quantIQ4XS encodes block_iq4_xs: half d; uint16 scales_h; scales_l[4];
// qs[128]. Each sub-block of 32 is fitted alone; the sub-block scale of
// largest magnitude then maps to ls-32 = -32 (d = max/-32, as llama.cpp's
// quantize_row_iq4_nl_impl sets it), every other to the nearest 6-bit step,
// and each sub-block's levels are chosen again for its rounded scale.
func quantIQ4XS(x []float32, y []byte) bool {
	var sc [8]float64
	var ms float64
	for ib := range 8 {
		sc[ib] = iq4Fit(x[32*ib:32*ib+32], y[8+16*ib:])
		if math.Abs(sc[ib]) > math.Abs(ms) {
			ms = sc[ib]
		}
	}
	ok := putHalf(y, float32(ms/-32))
	d := float64(f16at(y, 0))
	var sh uint16
	for ib := range 8 {
		l := 0
		if d != 0 {
			l = clampInt(int(math.Round(sc[ib]/d)), -32, 31)
		}
		ls := l + 32
		y[4+ib/2] |= byte(ls&0xf) << (4 * (ib % 2))
		sh |= uint16(ls>>4) << (2 * ib)
		id := 0.0
		if dl := float64(float32(d) * float32(l)); dl != 0 {
			id = 1 / dl
		}
		iq4Pack(x[32*ib:32*ib+32], id, y[8+16*ib:])
	}
	binary.LittleEndian.PutUint16(y[2:], sh)
	return ok
}

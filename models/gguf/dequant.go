package gguf

import (
	"encoding/binary"
	"fmt"
	"math"
	"sync"
)

// f16Table maps every half to its float32, as ggml's table does, so large
// F16 tensors convert without branches.
var f16Table = sync.OnceValue(func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for h := range t {
		t[h] = F16ToF32(uint16(h))
	}
	return &t
})

// CanDequantize reports whether Dequantize supports t.
func CanDequantize(t Type) bool {
	switch t {
	case TypeF32, TypeF16, TypeBF16, TypeQ8_0, TypeQ4_0, TypeQ4_1, TypeQ5_0, TypeQ5_1,
		TypeQ2_K, TypeQ3_K, TypeQ4_K, TypeQ5_K, TypeQ6_K, TypeIQ4_NL, TypeIQ4_XS:
		return true
	}
	return false
}

// Dequantize converts the blocks in src to len(dst) float32s. len(dst) must
// be a multiple of the block size and src exactly its encoded size. The
// formulas are ggml's dequantize_row_* (ggml/src/ggml-quants.c); products
// that are then added to are rounded first (float32(a*b)), as ggml's
// uncontracted C does, so results are the same on every architecture.
func Dequantize(t Type, src []byte, dst []float32) error {
	if !CanDequantize(t) {
		return fmt.Errorf("gguf: dequantising %s is not supported", t)
	}
	need, err := t.RowBytes(int64(len(dst)))
	if err != nil {
		return err
	}
	if int64(len(src)) != need {
		return fmt.Errorf("gguf: %d %s elements need %d bytes, got %d", len(dst), t, need, len(src))
	}
	// Plain types convert element by element without the block switch.
	switch t {
	case TypeF32:
		for i := range dst {
			dst[i] = math.Float32frombits(binary.LittleEndian.Uint32(src[4*i:]))
		}
		return nil
	case TypeF16:
		tab := f16Table()
		for i := range dst {
			dst[i] = tab[binary.LittleEndian.Uint16(src[2*i:])]
		}
		return nil
	case TypeBF16:
		for i := range dst {
			dst[i] = BF16ToF32(binary.LittleEndian.Uint16(src[2*i:]))
		}
		return nil
	}
	bs, bb := t.BlockSize(), t.BlockBytes()
	for i := 0; i < len(dst)/bs; i++ {
		blk := src[i*bb : (i+1)*bb]
		y := dst[i*bs : (i+1)*bs]
		switch t {
		case TypeQ8_0:
			deqQ8_0(blk, y)
		case TypeQ4_0:
			deqQ4_0(blk, y)
		case TypeQ4_1:
			deqQ4_1(blk, y)
		case TypeQ5_0:
			deqQ5_0(blk, y)
		case TypeQ5_1:
			deqQ5_1(blk, y)
		case TypeQ2_K:
			deqQ2K(blk, y)
		case TypeQ3_K:
			deqQ3K(blk, y)
		case TypeQ4_K:
			deqQ4K(blk, y)
		case TypeQ5_K:
			deqQ5K(blk, y)
		case TypeQ6_K:
			deqQ6K(blk, y)
		case TypeIQ4_NL:
			deqIQ4NL(blk, y)
		case TypeIQ4_XS:
			deqIQ4XS(blk, y)
		}
	}
	return nil
}

func f16at(b []byte, off int) float32 { return F16ToF32(binary.LittleEndian.Uint16(b[off:])) }

// block_q8_0: half d; int8 qs[32]. x = d*q.
func deqQ8_0(b []byte, y []float32) {
	d := f16at(b, 0)
	qs := b[2:34]
	y = y[:32]
	for j, q := range qs {
		y[j] = float32(int8(q)) * d
	}
}

// block_q4_0: half d; uint8 qs[16]; low nibbles are x[0..15], high x[16..31];
// x = (q-8)*d.
func deqQ4_0(b []byte, y []float32) {
	d := f16at(b, 0)
	qs := b[2:18]
	for j := 0; j < 16; j++ {
		y[j] = float32(int(qs[j]&0xf)-8) * d
		y[j+16] = float32(int(qs[j]>>4)-8) * d
	}
}

// block_q4_1: half d, m; uint8 qs[16]; x = q*d + m.
func deqQ4_1(b []byte, y []float32) {
	d, m := f16at(b, 0), f16at(b, 2)
	qs := b[4:20]
	for j := 0; j < 16; j++ {
		y[j] = float32(float32(qs[j]&0xf)*d) + m
		y[j+16] = float32(float32(qs[j]>>4)*d) + m
	}
}

// block_q5_0: half d; uint8 qh[4] (bit j is the 5th bit of x[j]); qs[16];
// x = (q-16)*d.
func deqQ5_0(b []byte, y []float32) {
	d := f16at(b, 0)
	qh := binary.LittleEndian.Uint32(b[2:])
	qs := b[6:22]
	for j := 0; j < 16; j++ {
		h0 := byte((qh>>j)<<4) & 0x10
		h1 := byte(qh>>(j+12)) & 0x10
		y[j] = float32(int(qs[j]&0xf|h0)-16) * d
		y[j+16] = float32(int(qs[j]>>4|h1)-16) * d
	}
}

// block_q5_1: half d, m; qh[4]; qs[16]; x = q*d + m.
func deqQ5_1(b []byte, y []float32) {
	d, m := f16at(b, 0), f16at(b, 2)
	qh := binary.LittleEndian.Uint32(b[4:])
	qs := b[8:24]
	for j := 0; j < 16; j++ {
		h0 := byte((qh>>j)<<4) & 0x10
		h1 := byte(qh>>(j+12)) & 0x10
		y[j] = float32(float32(qs[j]&0xf|h0)*d) + m
		y[j+16] = float32(float32(qs[j]>>4|h1)*d) + m
	}
}

// block_q2_K: scales[16] (4-bit scale low, 4-bit min high); qs[64]; half d,
// dmin. Sixteen sub-blocks of 16, x = d*sc*q - dmin*m, q the 2-bit levels
// packed as packQ2 writes them.
func deqQ2K(b []byte, y []float32) {
	sc, q := b[0:16], b[16:80]
	d, dmin := f16at(b, 80), f16at(b, 82)
	for k := range 16 {
		// Sub-block k sits in the 32-byte half k/8 of qs, at bytes
		// 16·(k%2).., bits 2·(k%8/2).
		qk := q[32*(k/8)+16*(k%2):][:16]
		shift := 2 * (k % 8 / 2)
		dl, ml := d*float32(sc[k]&0xf), float32(dmin*float32(sc[k]>>4))
		for l, v := range qk {
			y[16*k+l] = float32(dl*float32(v>>shift&3)) - ml
		}
	}
}

// block_q3_K: hmask[32]; qs[64]; scales[12]; half d. Sixteen sub-blocks of
// 16, x = d*sc*(q-4) with sc from Q3KScale and q the 2-bit level plus 4 when
// the value's hmask bit is set (bit j/32 of hmask[j%32]).
func deqQ3K(b []byte, y []float32) {
	hm, q, sc := b[0:32], b[32:96], b[96:108]
	d := f16at(b, 108)
	for k := range 16 {
		off := 32*(k/8) + 16*(k%2)
		qk := q[off:][:16]
		shift := 2 * (k % 8 / 2)
		dl := d * float32(Q3KScale(sc, k))
		for l, v := range qk {
			j := 16*k + l
			lv := int(v>>shift&3) - 4
			if hm[j%32]&(1<<(j/32)) != 0 {
				lv += 4
			}
			y[j] = dl * float32(lv)
		}
	}
}

// scaleMinK4 unpacks the j-th 6-bit scale and min of a q4_K/q5_K block
// (ggml-quants.c get_scale_min_k4).
func scaleMinK4(j int, q []byte) (sc, m uint8) {
	if j < 4 {
		return q[j] & 63, q[j+4] & 63
	}
	return q[j+4]&0xf | (q[j-4]>>6)<<4, q[j+4]>>4 | (q[j]>>6)<<4
}

// block_q4_K: half d, dmin; scales[12]; qs[128]. Eight sub-blocks of 32,
// x = d*sc*q - dmin*m.
func deqQ4K(b []byte, y []float32) {
	d, dmin := f16at(b, 0), f16at(b, 2)
	scales := b[4:16]
	q := b[16:144]
	is := 0
	for j := 0; j < QK_K; j += 64 {
		sc, m := scaleMinK4(is, scales)
		d1, m1 := d*float32(sc), float32(dmin*float32(m))
		sc, m = scaleMinK4(is+1, scales)
		d2, m2 := d*float32(sc), float32(dmin*float32(m))
		for l := 0; l < 32; l++ {
			y[j+l] = float32(d1*float32(q[l]&0xf)) - m1
			y[j+32+l] = float32(d2*float32(q[l]>>4)) - m2
		}
		q = q[32:]
		is += 2
	}
}

// block_q5_K: half d, dmin; scales[12]; qh[32]; qs[128].
func deqQ5K(b []byte, y []float32) {
	d, dmin := f16at(b, 0), f16at(b, 2)
	scales := b[4:16]
	qh := b[16:48]
	ql := b[48:176]
	is := 0
	u1, u2 := byte(1), byte(2)
	for j := 0; j < QK_K; j += 64 {
		sc, m := scaleMinK4(is, scales)
		d1, m1 := d*float32(sc), float32(dmin*float32(m))
		sc, m = scaleMinK4(is+1, scales)
		d2, m2 := d*float32(sc), float32(dmin*float32(m))
		for l := 0; l < 32; l++ {
			h := float32(0)
			if qh[l]&u1 != 0 {
				h = 16
			}
			y[j+l] = float32(d1*(float32(ql[l]&0xf)+h)) - m1
		}
		for l := 0; l < 32; l++ {
			h := float32(0)
			if qh[l]&u2 != 0 {
				h = 16
			}
			y[j+32+l] = float32(d2*(float32(ql[l]>>4)+h)) - m2
		}
		ql = ql[32:]
		is += 2
		u1 <<= 2
		u2 <<= 2
	}
}

// block_q6_K: ql[128]; qh[64]; int8 scales[16]; half d. x = d*sc*(q-32).
func deqQ6K(b []byte, y []float32) {
	ql := b[0:128]
	qh := b[128:192]
	sc := b[192:208]
	d := f16at(b, 208)
	for n := 0; n < QK_K; n += 128 {
		for l := 0; l < 32; l++ {
			is := l / 16
			q1 := int(ql[l]&0xf|(qh[l]>>0&3)<<4) - 32
			q2 := int(ql[l+32]&0xf|(qh[l]>>2&3)<<4) - 32
			q3 := int(ql[l]>>4|(qh[l]>>4&3)<<4) - 32
			q4 := int(ql[l+32]>>4|(qh[l]>>6&3)<<4) - 32
			y[n+l] = d * float32(int8(sc[is])) * float32(q1)
			y[n+l+32] = d * float32(int8(sc[is+2])) * float32(q2)
			y[n+l+64] = d * float32(int8(sc[is+4])) * float32(q3)
			y[n+l+96] = d * float32(int8(sc[is+6])) * float32(q4)
		}
		ql = ql[64:]
		qh = qh[32:]
		sc = sc[8:]
	}
}

// IQ4NLValues is ggml's kvalues_iq4nl (ggml-common.h): the 16 levels a
// nibble of IQ4_NL and IQ4_XS picks, denser near zero than Q4_0's evenly
// spaced ones, as weights are.
var IQ4NLValues = [16]int8{-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113}

// block_iq4_nl: half d; qs[16]; low nibbles are x[0..15], high x[16..31];
// x = d*IQ4NLValues[q] (dequantize_row_iq4_nl).
func deqIQ4NL(b []byte, y []float32) {
	d := f16at(b, 0)
	qs := b[2:18]
	for j := 0; j < 16; j++ {
		y[j] = d * float32(IQ4NLValues[qs[j]&0xf])
		y[j+16] = d * float32(IQ4NLValues[qs[j]>>4])
	}
}

// IQ4XSScale is the 6-bit scale ls of sub-block ib (0..7) of a block_iq4_xs:
// its low 4 bits in nibble ib%2 of scales_l[ib/2], its high 2 bits at bits
// 2ib of scales_h. The sub-block's values are d*(ls-32)*IQ4NLValues[q].
func IQ4XSScale(scalesH uint16, scalesL []byte, ib int) int {
	return int(scalesL[ib/2]>>(4*(ib%2))&0xf) | int(scalesH>>(2*ib)&3)<<4
}

// block_iq4_xs: half d; uint16 scales_h; scales_l[4]; qs[128]. Eight
// sub-blocks of 32, each 16 bytes of qs as IQ4_NL's, x =
// float32(d*(ls-32))*IQ4NLValues[q] (dequantize_row_iq4_xs).
func deqIQ4XS(b []byte, y []float32) {
	d := f16at(b, 0)
	sh := binary.LittleEndian.Uint16(b[2:])
	sl, qs := b[4:8], b[8:136]
	for ib := range 8 {
		dl := d * float32(IQ4XSScale(sh, sl, ib)-32)
		q, yb := qs[16*ib:16*ib+16], y[32*ib:32*ib+32]
		for j := 0; j < 16; j++ {
			yb[j] = dl * float32(IQ4NLValues[q[j]&0xf])
			yb[j+16] = dl * float32(IQ4NLValues[q[j]>>4])
		}
	}
}

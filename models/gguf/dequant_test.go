package gguf

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

func TestF16(t *testing.T) {
	for h := 0; h < 1<<16; h++ {
		f := F16ToF32(uint16(h))
		if f != f { // NaN
			if g := F32ToF16(f); g&0x7c00 != 0x7c00 || g&0x3ff == 0 {
				t.Fatalf("NaN %#x -> %#x", h, g)
			}
			continue
		}
		if g := F32ToF16(f); g != uint16(h) {
			t.Fatalf("%#x -> %v -> %#x", h, f, g)
		}
	}
	cases := []struct {
		f float32
		h uint16
	}{
		{1, 0x3c00}, {-2, 0xc000}, {65504, 0x7bff}, {1.0 / (1 << 24), 0x0001},
		{1 + 1.0/2048, 0x3c00}, {1 + 3.0/2048, 0x3c02}, // ties to even
		{65520, 0x7c00}, {1e9, 0x7c00}, {1.0 / (1 << 26), 0}, {3.0 / (1 << 26), 0x0001},
		{float32(math.Inf(-1)), 0xfc00},
	}
	for _, c := range cases {
		if g := F32ToF16(c.f); g != c.h {
			t.Errorf("F32ToF16(%v) = %#x, want %#x", c.f, g, c.h)
		}
	}
	if BF16ToF32(0x3f80) != 1 || BF16ToF32(0xc040) != -3 {
		t.Error("bf16")
	}
}

func putF16(b []byte, f float32) float32 {
	h := F32ToF16(f)
	binary.LittleEndian.PutUint16(b, h)
	return F16ToF32(h)
}

func checkClose(t *testing.T, name string, got, want []float32) {
	t.Helper()
	for i := range want {
		if d := math.Abs(float64(got[i] - want[i])); d > 1e-6*math.Max(1, math.Abs(float64(want[i]))) {
			t.Fatalf("%s[%d] = %v, want %v", name, i, got[i], want[i])
		}
	}
}

func TestDequantQ8_0AndQ4_0(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	// Q8_0: x = d * q.
	blk := make([]byte, 34*2)
	want := make([]float32, 64)
	for b := 0; b < 2; b++ {
		d := putF16(blk[34*b:], float32(r.Float64()+0.01))
		for j := 0; j < 32; j++ {
			q := int8(r.IntN(256) - 128)
			blk[34*b+2+j] = byte(q)
			want[32*b+j] = d * float32(q)
		}
	}
	got := make([]float32, 64)
	if err := Dequantize(TypeQ8_0, blk, got); err != nil {
		t.Fatal(err)
	}
	checkClose(t, "q8_0", got, want)

	// Q4_0: element j < 16 is the low nibble of qs[j], j >= 16 the high
	// nibble of qs[j-16]; x = d * (nibble - 8).
	blk = make([]byte, 18)
	d := putF16(blk, -0.75)
	want = make([]float32, 32)
	for j := 0; j < 32; j++ {
		q := r.IntN(16)
		if j < 16 {
			blk[2+j] |= byte(q)
		} else {
			blk[2+j-16] |= byte(q << 4)
		}
		want[j] = d * float32(q-8)
	}
	got = make([]float32, 32)
	Dequantize(TypeQ4_0, blk, got)
	checkClose(t, "q4_0", got, want)
	// A hand-computed block: d = 2, qs[0] = 0x9f -> x[0] = 2*(15-8) = 14,
	// x[16] = 2*(9-8) = 2; qs[1] = 0 -> x[1] = x[17] = -16.
	blk = make([]byte, 18)
	putF16(blk, 2)
	blk[2], blk[3] = 0x9f, 0
	Dequantize(TypeQ4_0, blk, got)
	if got[0] != 14 || got[16] != 2 || got[1] != -16 || got[17] != -16 {
		t.Errorf("q4_0 hand block: %v %v %v %v", got[0], got[16], got[1], got[17])
	}
}

func TestDequantQ4_1Q5(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	got := make([]float32, 32)
	want := make([]float32, 32)

	blk := make([]byte, 20)
	d, m := putF16(blk, 0.3), putF16(blk[2:], -1.25)
	for j := 0; j < 32; j++ {
		q := r.IntN(16)
		blk[4+j%16] |= byte(q << (4 * (j / 16)))
		want[j] = float32(q)*d + m
	}
	Dequantize(TypeQ4_1, blk, got)
	checkClose(t, "q4_1", got, want)

	// Q5: the 5th bit of element j is bit j of the little-endian qh word.
	for _, typ := range []Type{TypeQ5_0, TypeQ5_1} {
		off := 2
		if typ == TypeQ5_1 {
			off = 4
		}
		blk = make([]byte, typ.BlockBytes())
		d = putF16(blk, 0.2)
		if typ == TypeQ5_1 {
			m = putF16(blk[2:], 0.5)
		}
		var qh uint32
		for j := 0; j < 32; j++ {
			q := r.IntN(32)
			blk[off+4+j%16] |= byte((q & 15) << (4 * (j / 16)))
			qh |= uint32(q>>4) << j
			if typ == TypeQ5_0 {
				want[j] = d * float32(q-16)
			} else {
				want[j] = float32(q)*d + m
			}
		}
		binary.LittleEndian.PutUint32(blk[off:], qh)
		Dequantize(typ, blk, got)
		checkClose(t, typ.String(), got, want)
	}
}

// packScalesK packs eight 6-bit scales and mins as quantize_row_q4_K_ref does.
func packScalesK(sc, mn [8]uint8) []byte {
	s := make([]byte, 12)
	for j := 0; j < 4; j++ {
		s[j] = sc[j] | (sc[j+4]>>4)<<6
		s[j+4] = mn[j] | (mn[j+4]>>4)<<6
		s[j+8] = sc[j+4]&15 | (mn[j+4]&15)<<4
	}
	return s
}

func TestDequantK(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	got := make([]float32, QK_K)
	want := make([]float32, QK_K)
	var sc, mn [8]uint8
	for i := range sc {
		sc[i], mn[i] = uint8(r.IntN(64)), uint8(r.IntN(64))
	}

	// Q4_K: sub-block s = i/32 covers 32 elements; the pair of sub-blocks
	// 2g, 2g+1 shares qs[32g..32g+31] (low nibbles, then high nibbles).
	blk := make([]byte, 144)
	d, dmin := putF16(blk, 0.05), putF16(blk[2:], 0.02)
	copy(blk[4:], packScalesK(sc, mn))
	for i := 0; i < QK_K; i++ {
		s, l := i/32, i%32
		q := r.IntN(16)
		blk[16+32*(s/2)+l] |= byte(q << (4 * (s % 2)))
		want[i] = d*float32(sc[s])*float32(q) - dmin*float32(mn[s])
	}
	Dequantize(TypeQ4_K, blk, got)
	checkClose(t, "q4_k", got, want)

	// Q5_K: as Q4_K plus a 5th bit, bit s of qh[l].
	blk = make([]byte, 176)
	d, dmin = putF16(blk, 0.07), putF16(blk[2:], 0.01)
	copy(blk[4:], packScalesK(sc, mn))
	for i := 0; i < QK_K; i++ {
		s, l := i/32, i%32
		q := r.IntN(32)
		blk[48+32*(s/2)+l] |= byte((q & 15) << (4 * (s % 2)))
		blk[16+l] |= byte(q>>4) << s
		want[i] = d*float32(sc[s])*float32(q) - dmin*float32(mn[s])
	}
	Dequantize(TypeQ5_K, blk, got)
	checkClose(t, "q5_k", got, want)

	// Q6_K: halves n of 128; quarter k of a half takes ql[l + 32*(k&1)]'s
	// low (k<2) or high nibble and bits 2k..2k+1 of qh[l]; scale
	// sc[8n + l/16 + 2k]; x = d*sc*(q-32).
	blk = make([]byte, 210)
	var scales [16]int8
	for i := range scales {
		scales[i] = int8(r.IntN(256) - 128)
		blk[192+i] = byte(scales[i])
	}
	d = putF16(blk[208:], 0.003)
	for i := 0; i < QK_K; i++ {
		n, k, l := i/128, i%128/32, i%32
		q := r.IntN(64)
		blk[64*n+l+32*(k&1)] |= byte((q & 15) << (4 * (k / 2)))
		blk[128+32*n+l] |= byte(q>>4) << (2 * k)
		want[i] = d * float32(scales[8*n+l/16+2*k]) * float32(q-32)
	}
	Dequantize(TypeQ6_K, blk, got)
	checkClose(t, "q6_k", got, want)
}

func TestDequantizeErrors(t *testing.T) {
	if err := Dequantize(TypeQ8_0, make([]byte, 33), make([]float32, 32)); err == nil {
		t.Error("short block accepted")
	}
	if err := Dequantize(TypeQ8_0, make([]byte, 34), make([]float32, 31)); err == nil {
		t.Error("partial block accepted")
	}
	if err := Dequantize(TypeIQ4_XS, make([]byte, 135), make([]float32, 256)); err == nil {
		t.Error("short iq4_xs block accepted")
	}
	if err := Dequantize(TypeIQ4_NL, make([]byte, 18), make([]float32, 16)); err == nil {
		t.Error("partial iq4_nl block accepted")
	}
	if err := Dequantize(TypeIQ2_XXS, make([]byte, 66), make([]float32, 256)); err == nil {
		t.Error("unsupported type accepted")
	}
	f16 := make([]byte, 4)
	putF16(f16, 1.5)
	putF16(f16[2:], -2)
	bf := []byte{0x80, 0x3f, 0x40, 0xc0}
	out := make([]float32, 2)
	Dequantize(TypeF16, f16, out)
	if out[0] != 1.5 || out[1] != -2 {
		t.Error("f16", out)
	}
	Dequantize(TypeBF16, bf, out)
	if out[0] != 1 || out[1] != -3 {
		t.Error("bf16", out)
	}
}

// TestDequantIQ4 decodes fixed blocks whose values are worked out by hand
// from ggml's layouts (block_iq4_nl, block_iq4_xs).
func TestDequantIQ4(t *testing.T) {
	// IQ4_NL: d = 0.5; byte j's low nibble is x[j], its high nibble x[j+16].
	blk := make([]byte, 18)
	putF16(blk, 0.5)
	blk[2] = 0xf0  // x[0] = 0.5·-127, x[16] = 0.5·113
	blk[3] = 0x78  // x[1] = 0.5·1, x[17] = 0.5·-10
	blk[17] = 0x9a // x[15] = 0.5·25, x[31] = 0.5·13
	got := make([]float32, 32)
	if err := Dequantize(TypeIQ4_NL, blk, got); err != nil {
		t.Fatal(err)
	}
	want := map[int]float32{0: -63.5, 16: 56.5, 1: 0.5, 17: -5, 15: 12.5, 31: 6.5}
	for i, v := range got {
		w, ok := want[i]
		if !ok {
			w = -63.5 // nibble 0
		}
		if v != w {
			t.Errorf("iq4_nl x[%d] = %v, want %v", i, v, w)
		}
	}

	// IQ4_XS: d = 0.25; sub-block 0 has ls = 0x3 | 2<<4 = 35 (dl = 0.75),
	// sub-block 1 ls = 0xa | 1<<4 = 26 (dl = -1.5), sub-block 7 ls = 0x0 |
	// 3<<4 = 48 (dl = 4), the others ls = 32 (dl = 0).
	blk = make([]byte, 136)
	putF16(blk, 0.25)
	binary.LittleEndian.PutUint16(blk[2:], 2|1<<2|2<<4|2<<6|2<<8|2<<10|2<<12|3<<14)
	blk[4] = 0xa3         // scales_l[1..3] = 0
	blk[8+5] = 0x2e       // sub-block 0: x[5] = 0.75·89, x[21] = 0.75·-83
	blk[8+16+0] = 0xf8    // sub-block 1: x[32] = -1.5·1, x[48] = -1.5·113
	blk[8+2*16+3] = 0xff  // sub-block 2, dl = 0: zero
	blk[8+7*16+15] = 0x1f // sub-block 7: x[239] = 4·113, x[255] = 4·-104
	got = make([]float32, 256)
	if err := Dequantize(TypeIQ4_XS, blk, got); err != nil {
		t.Fatal(err)
	}
	dl := [8]float32{0.75, -1.5, 0, 0, 0, 0, 0, 4}
	want = map[int]float32{5: 0.75 * 89, 21: 0.75 * -83, 32: -1.5 * 1, 48: -1.5 * 113, 239: 4 * 113, 255: 4 * -104}
	for i, v := range got {
		w, ok := want[i]
		if !ok {
			w = dl[i/32] * -127 // nibble 0
		}
		if v != w {
			t.Errorf("iq4_xs x[%d] = %v, want %v", i, v, w)
		}
	}
}

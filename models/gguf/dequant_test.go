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

package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"sort"
	"testing"

	"chat/models/kernels"
)

// fp8Ref is a code's value from its bit fields, computed with math.Ldexp.
func fp8Ref(b uint8, f kernels.FP8) float64 {
	s := b >> 7
	var v float64
	if f == kernels.E4M3 {
		e, m := int(b>>3&15), int(b&7)
		switch {
		case e == 15 && m == 7:
			return math.NaN()
		case e == 0:
			v = math.Ldexp(float64(m), -9)
		default:
			v = math.Ldexp(float64(8+m), e-10)
		}
	} else {
		e, m := int(b>>2&31), int(b&3)
		switch {
		case e == 31 && m != 0:
			return math.NaN()
		case e == 31:
			v = math.Inf(1)
		case e == 0:
			v = math.Ldexp(float64(m), -16)
		default:
			v = math.Ldexp(float64(4+m), e-17)
		}
	}
	if s == 1 {
		v = -v
	}
	return v
}

var fp8Formats = []kernels.FP8{kernels.E4M3, kernels.E5M2}

// decodeFP8 returns code's value in format f: NaN for the NaN codes, ±Inf
// for E5M2's infinities (kernels.FP8Value with E4M3's NaN codes).
func decodeFP8(code uint8, f kernels.FP8) float32 {
	if f == kernels.E4M3 && code&0x7F == 0x7F {
		return float32(math.NaN())
	}
	return kernels.FP8Value(code, f)
}

// TestFP8AllCodes: every code decodes to its bit fields' value, and every
// finite value encodes back to its code (±0 to either zero).
func TestFP8AllCodes(t *testing.T) {
	for _, f := range fp8Formats {
		for c := 0; c < 256; c++ {
			b := uint8(c)
			v, ref := decodeFP8(b, f), fp8Ref(b, f)
			if math.IsNaN(ref) {
				if v == v {
					t.Fatalf("%s: code %#x decodes to %g, want NaN", f, c, v)
				}
				if EncodeFP8(v, f) != 0x7F {
					t.Errorf("%s: NaN encodes to %#x", f, EncodeFP8(v, f))
				}
				continue
			}
			if float64(v) != ref || math.Signbit(float64(v)) != (c >= 0x80) {
				t.Fatalf("%s: code %#x decodes to %g, want %g", f, c, v, ref)
			}
			if math.IsInf(ref, 0) {
				continue
			}
			if e := EncodeFP8(v, f); e != b {
				t.Fatalf("%s: %g encodes to %#x, want %#x", f, v, e, b)
			}
		}
	}
}

// TestFP8Rounding: fixed cases (ties to the even code, subnormals,
// saturation, NaN) and, for random values, no code nearer than the chosen one.
func TestFP8Rounding(t *testing.T) {
	inf := float32(math.Inf(1))
	cases := []struct {
		f    kernels.FP8
		x    float32
		want uint8
	}{
		{kernels.E4M3, 1.0625, 0x38}, {kernels.E4M3, 1.1875, 0x3A}, {kernels.E4M3, 1.07, 0x39},
		{kernels.E4M3, -1.0625, 0xB8}, {kernels.E4M3, 0x1p-10, 0x00}, {kernels.E4M3, 3 * 0x1p-10, 2},
		{kernels.E4M3, 0x1p-11, 0x00}, {kernels.E4M3, 15 * 0x1p-10, 0x08}, {kernels.E4M3, 440, 0x7E},
		{kernels.E4M3, 456, 0x7E}, {kernels.E4M3, 1e30, 0x7E}, {kernels.E4M3, -inf, 0xFE},
		{kernels.E4M3, float32(math.Copysign(0, -1)), 0x80},
		{kernels.E5M2, 1.125, 0x3C}, {kernels.E5M2, 1.375, 0x3E}, {kernels.E5M2, 1e9, 0x7B},
		{kernels.E5M2, -1e9, 0xFB}, {kernels.E5M2, inf, 0x7B}, {kernels.E5M2, float32(math.NaN()), 0x7F},
	}
	for _, c := range cases {
		if got := EncodeFP8(c.x, c.f); got != c.want {
			t.Errorf("%s: EncodeFP8(%g) = %#x, want %#x", c.f, c.x, got, c.want)
		}
	}
	r := rand.New(rand.NewPCG(3, 4))
	for _, f := range fp8Formats {
		top := float64(FP8Max(f))
		for i := 0; i < 20000; i++ {
			x := float32(math.Ldexp(r.Float64(), r.IntN(36)-20))
			got := float64(decodeFP8(EncodeFP8(x, f), f))
			for _, v := range fp8Pos[f] {
				if math.Abs(v-float64(x)) < math.Abs(got-float64(x)) && float64(x) < top {
					t.Fatalf("%s: %g encodes to %g, but %g is nearer", f, x, got, v)
				}
			}
		}
	}
}

// fp8Dequant returns the whole matrix m as float32:
// float32(value(code)·scale).
func fp8Dequant(m *FP8Rows) []float32 {
	d := make([]float32, m.R*m.C)
	for r := 0; r < m.R; r++ {
		kernels.DequantizeFP8(d[r*m.C:(r+1)*m.C], m.Codes[r*m.C:(r+1)*m.C], m.Scale[r], m.F)
	}
	return d
}

// TestFP8Rows: each weight comes back within half a step of its format
// (or of the subnormal step), and the kernel's product is bitwise the
// product of the dequantised matrix.
func TestFP8Rows(t *testing.T) {
	r := rand.New(rand.NewPCG(17, 18))
	const rows, cols = 7, 100
	w := calibRandMatrix(r, rows, cols)
	x := make([]float32, cols)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for _, f := range fp8Formats {
		m, err := NewFP8Rows(w, rows, cols, f)
		if err != nil {
			t.Fatal(err)
		}
		rel, sub := 1.0/16, 0x1p-10 // E4M3: half a 3-bit mantissa step; subnormal step 2⁻⁹
		if f == kernels.E5M2 {
			rel, sub = 1.0/8, 0x1p-17
		}
		d := fp8Dequant(m)
		for i, v := range w {
			s := float64(m.Scale[i/cols])
			if e := math.Abs(float64(d[i] - v)); e > max(math.Abs(float64(v))*rel, s*sub)*(1+1e-6)+1e-6*math.Abs(float64(v)) {
				t.Fatalf("%s: w[%d] = %g comes back as %g", f, i, v, d[i])
			}
		}
		want, got := make([]float32, rows), make([]float32, rows)
		kernels.MatVec(want, d, x, rows, cols)
		kernels.MatVecFP8(got, m.Codes, m.Scale, x, rows, cols, f)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s: kernel row %d %g, dequantized product %g", f, i, got[i], want[i])
			}
		}
	}
	w[3*cols+5] = float32(math.Inf(1))
	if _, err := NewFP8Rows(w, rows, cols, kernels.E4M3); err == nil {
		t.Error("an infinite weight was quantized")
	}
}

// encodeFP8Search is EncodeFP8 as a search of the format's values (the
// first value >= |x|, then the nearer neighbour, ties to the even code): the
// reference the bit arithmetic is checked against.
func encodeFP8Search(x float32, f kernels.FP8) uint8 {
	if x != x {
		return 0x7F
	}
	pos := fp8Pos[f&1]
	var sign uint8
	a := float64(x)
	if math.Signbit(a) {
		sign, a = 0x80, -a
	}
	if a >= pos[len(pos)-1] {
		return sign | uint8(len(pos)-1)
	}
	i := sort.SearchFloat64s(pos, a)
	if pos[i] == a {
		return sign | uint8(i)
	}
	lo, hi := pos[i-1], pos[i]
	switch d := (a - lo) - (hi - a); {
	case d < 0:
		i--
	case d == 0 && i&1 == 1:
		i--
	}
	return sign | uint8(i)
}

// TestEncodeFP8MatchesSearch: the bit arithmetic gives the search's code for
// every value and midpoint of adjacent values (and their float32
// neighbours), and for a million random float32 bit patterns.
func TestEncodeFP8MatchesSearch(t *testing.T) {
	check := func(x float32, f kernels.FP8) {
		if got, want := EncodeFP8(x, f), encodeFP8Search(x, f); got != want {
			t.Fatalf("%s: EncodeFP8(%g) = %#x, the search says %#x", f, x, got, want)
		}
	}
	for _, f := range fp8Formats {
		pos := fp8Pos[f&1]
		for i := range pos {
			for _, v := range []float64{pos[i], (pos[i] + pos[min(i+1, len(pos)-1)]) / 2} {
				x := float32(v)
				for _, y := range []float32{x, math.Nextafter32(x, 0), math.Nextafter32(x, 1e30)} {
					check(y, f)
					check(-y, f)
				}
			}
		}
		r := rand.New(rand.NewPCG(5, 6))
		for range 1 << 20 {
			check(math.Float32frombits(r.Uint32()), f)
		}
	}
}

// checkDivEncodeE4M3 is kernels.DivEncodeE4M3 against EncodeFP8(x/s, E4M3)
// for every value it encodes.
func checkDivEncodeE4M3(t *testing.T, x []float32, s float32) {
	t.Helper()
	q := make([]uint8, len(x)+1)
	q[len(x)] = 0xAA
	n := kernels.DivEncodeE4M3(q[:len(x)], x, s)
	if kernels.ISA() != "go" && n != len(x)&^7 {
		t.Fatalf("the %s assembly encoded %d of %d values", kernels.ISA(), n, len(x))
	}
	if q[len(x)] != 0xAA {
		t.Fatal("DivEncodeE4M3 wrote past the end")
	}
	for i, v := range x[:n] {
		if want := EncodeFP8(v/s, kernels.E4M3); q[i] != want {
			t.Fatalf("x %g (%#08x) / s %g: code %#x, EncodeFP8 %#x", v, math.Float32bits(v), s, q[i], want)
		}
	}
}

// TestDivEncodeE4M3: the assembly's codes are EncodeFP8's over float32 bit
// patterns spread across the whole range (NaNs, infinities, subnormals,
// ties), with scales that make them land everywhere in E4M3.
func TestDivEncodeE4M3(t *testing.T) {
	var x []float32
	for b := uint64(0); b < 1<<32; b += 7919 {
		x = append(x, math.Float32frombits(uint32(b)))
	}
	for c := range 256 { // every code's value and the midpoints around it
		v := kernels.FP8Value(uint8(c), kernels.E4M3)
		x = append(x, v, math.Nextafter32(v, 0), math.Nextafter32(v, 1e9), v*1.0625, -v*1.0625)
	}
	for _, s := range []float32{1, 1.0 / 448, 3.7e-3, 1e-40, 2.5e30, float32(math.Inf(1))} {
		checkDivEncodeE4M3(t, x, s)
	}
}

// FuzzDivEncodeE4M3: any float32 bits and any scale.
func FuzzDivEncodeE4M3(f *testing.F) {
	f.Add(make([]byte, 64), float32(1))
	f.Add([]byte{0, 0, 0xc0, 0x7f, 0, 0, 0xe0, 0x43, 1, 0, 0, 0, 0, 0, 0x80, 0x80}, float32(0.5))
	f.Fuzz(func(t *testing.T, raw []byte, s float32) {
		x := make([]float32, len(raw)/4+7)
		for i := 0; 4*i+4 <= len(raw); i++ {
			x[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
		}
		checkDivEncodeE4M3(t, x, s)
	})
}

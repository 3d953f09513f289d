package quant

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"chat/models/kernels"
)

func randMatrix(r *rand.Rand, rows, cols int) []float32 {
	w := make([]float32, rows*cols)
	for i := range w {
		w[i] = float32(r.NormFloat64() * 0.05)
	}
	// An outlier row and a zero row, as real checkpoints have both.
	w[3*cols+1] = 2.5
	clear(w[5*cols : 6*cols])
	return w
}

// TestInt8CourseRule checks quantize_int8 on values whose results are known.
func TestInt8CourseRule(t *testing.T) {
	row := []float32{127, 63.5, -63.5, 62.5, 0.5, 1.5, 2.5, -0.5, -1.5, -127}
	zero := make([]float32, len(row))
	m, err := NewInt8Rows(append(append([]float32{}, row...), zero...), 2, len(row))
	if err != nil {
		t.Fatal(err)
	}
	if m.Scale[0] != 1 {
		t.Fatalf("scale %g, want 1 (127/127)", m.Scale[0])
	}
	want := []int8{127, 64, -64, 62, 0, 2, 2, 0, -2, -127} // ties to even
	for i, q := range m.Q[:len(row)] {
		if q != want[i] {
			t.Errorf("round(%g) = %d, want %d", row[i], q, want[i])
		}
	}
	if s := float32(1e-8) / 127; m.Scale[1] != s {
		t.Errorf("zero row scale %g, want float32(1e-8)/127 = %g", m.Scale[1], s)
	}
	for _, q := range m.Q[len(row):] {
		if q != 0 {
			t.Fatal("zero row has a nonzero code")
		}
	}
	d := Dequantize(m)
	for i, q := range m.Q {
		if d[i] != float32(q)*m.Scale[i/len(row)] {
			t.Fatalf("dequantized %d is %g", i, d[i])
		}
	}

	// A scale that is not a power of two: ties are decided on the float32
	// quotient, as torch.round(W/scale) does.
	m, _ = NewInt8Rows([]float32{-0.3, 0.1, 0.05}, 1, 3)
	s := float32(0.3) / 127
	for i, v := range []float32{-0.3, 0.1, 0.05} {
		if want := int8(math.RoundToEven(float64(v / s))); m.Q[i] != want {
			t.Errorf("q[%d] = %d, want %d", i, m.Q[i], want)
		}
	}
	if m.Q[0] != -127 {
		t.Errorf("row max gives %d, want -127", m.Q[0])
	}
}

func TestRoundTrips(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const rows, cols = 37, 200 // 200 is no multiple of 64 or 128: short last groups
	w := randMatrix(r, rows, cols)
	for _, f := range Formats {
		m, err := New(f, w, rows, cols)
		if err != nil {
			t.Fatal(err)
		}
		if m.Rows() != rows || m.Cols() != cols || m.Format() != f {
			t.Fatalf("%s: got %s [%d][%d]", f, m.Format(), m.Rows(), m.Cols())
		}
		d := Dequantize(m)
		var sq, sqErr float64
		for i, v := range w {
			bound := errorBound(m, i/cols, i%cols, v)
			if e := math.Abs(float64(d[i] - v)); e > bound {
				t.Fatalf("%s: w[%d] = %g comes back as %g (error %g > bound %g)", f, i, v, d[i], e, bound)
			}
			sq += float64(v) * float64(v)
			sqErr += float64(d[i]-v) * float64(d[i]-v)
		}
		t.Logf("%s: %d bytes (f32 %d), relative RMS error %.4f", f, m.Bytes(), 4*rows*cols, math.Sqrt(sqErr/sq))
	}
}

// errorBound is half a quantization step at w's scale, plus float32 rounding
// of the quotient and the product.
func errorBound(m Matrix, r, c int, w float32) float64 {
	const eps = 1e-6
	switch m := m.(type) {
	case *Int8Rows:
		return float64(m.Scale[r])/2*(1+eps) + eps*math.Abs(float64(w))
	case *Int4Groups:
		s := m.Scale[r*((m.C+m.G-1)/m.G)+c/m.G]
		return float64(s)/2*(1+eps) + eps*math.Abs(float64(w))
	case *FP8Rows:
		// Half an ulp of a 3-bit mantissa, or of the subnormal step 2⁻⁹.
		s := float64(m.Scale[r])
		return max(math.Abs(float64(w))/16, s*0x1p-10)*(1+eps) + eps*math.Abs(float64(w))
	}
	panic("unknown matrix")
}

func TestInt4Layout(t *testing.T) {
	w := []float32{7, -7, 3.5, -3.5, 0, 1, 2} // one row, group 32: scale 1
	m, err := NewInt4Groups(w, 1, len(w), 32)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.Packed) != 4 || len(m.Scale) != 1 || m.Scale[0] != 1 {
		t.Fatalf("packed %d bytes, %d scales (%v)", len(m.Packed), len(m.Scale), m.Scale)
	}
	// Codes q+8: 15, 1, 12 (3.5 → 4), 4 (-3.5 → -4), 8, 9, 10.
	want := []byte{15 | 1<<4, 12 | 4<<4, 8 | 9<<4, 10}
	for i, b := range want {
		if m.Packed[i] != b {
			t.Errorf("byte %d = %#x, want %#x", i, m.Packed[i], b)
		}
	}
	if got := Dequantize(m); got[2] != 4 || got[3] != -4 || got[6] != 2 {
		t.Errorf("dequantized %v", got)
	}
}

// e4m3Ref computes a code's value from the bit fields with math.Ldexp.
func e4m3Ref(b uint8) float64 {
	s, e, m := b>>7, int(b>>3&15), int(b&7)
	var v float64
	switch {
	case e == 15 && m == 7:
		return math.NaN()
	case e == 0:
		v = math.Ldexp(float64(m), -9)
	default:
		v = math.Ldexp(float64(8+m), e-10)
	}
	if s == 1 {
		v = -v
	}
	return v
}

func TestE4M3AllCodes(t *testing.T) {
	for c := 0; c < 256; c++ {
		b := uint8(c)
		v, ref := DecodeE4M3(b), e4m3Ref(b)
		if math.IsNaN(ref) {
			if v == v || (c != 0x7F && c != 0xFF) {
				t.Fatalf("code %#x decodes to %g", c, v)
			}
			if EncodeE4M3(v) != 0x7F {
				t.Errorf("NaN encodes to %#x", EncodeE4M3(v))
			}
			continue
		}
		if float64(v) != ref || math.Signbit(float64(v)) != (c >= 0x80) {
			t.Fatalf("code %#x decodes to %g, want %g", c, v, ref)
		}
		if got := EncodeE4M3(v); got != b {
			t.Errorf("value %g (code %#x) encodes to %#x", v, c, got)
		}
	}
	if DecodeE4M3(0x7E) != 448 || DecodeE4M3(0x01) != 0x1p-9 || DecodeE4M3(0x08) != 0x1p-6 {
		t.Fatal("landmark values wrong")
	}
}

func TestE4M3Rounding(t *testing.T) {
	cases := []struct {
		x    float32
		want uint8
	}{
		{1.0625, 0x38},   // between 1 (0x38) and 1.125: tie to even
		{1.1875, 0x3A},   // between 1.125 and 1.25: tie to even 1.25
		{1.07, 0x39},     // nearer 1.125
		{-1.0625, 0xB8},  // sign kept
		{0x1p-10, 0x00},  // half the smallest subnormal: tie to zero
		{3 * 0x1p-10, 2}, // between subnormals 1 and 2: tie to even
		{0x1p-11, 0x00},
		{15 * 0x1p-10, 0x08}, // largest subnormal·2^-9 + half: rounds up into the normals
		{440, 0x7E},          // 432 and 448: tie to even 448
		{456, 0x7E},          // above 448: saturates (no infinity)
		{1e30, 0x7E},
		{float32(math.Inf(-1)), 0xFE},
		{float32(math.Copysign(0, -1)), 0x80},
	}
	for _, c := range cases {
		if got := EncodeE4M3(c.x); got != c.want {
			t.Errorf("EncodeE4M3(%g) = %#x (%g), want %#x (%g)", c.x, got, DecodeE4M3(got), c.want, DecodeE4M3(c.want))
		}
	}
	// Nearest by brute force for random values over the whole range.
	r := rand.New(rand.NewPCG(3, 4))
	for i := 0; i < 20000; i++ {
		x := float32(math.Ldexp(r.Float64(), r.IntN(20)-12))
		got := float64(DecodeE4M3(EncodeE4M3(x)))
		for c := 0; c < 0x7F; c++ {
			if d := math.Abs(e4m3Ref(uint8(c)) - float64(x)); d < math.Abs(got-float64(x)) && x < 448 {
				t.Fatalf("%g encodes to %g, but %g is nearer", x, got, e4m3Ref(uint8(c)))
			}
		}
	}
}

func TestMatMul(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const rows, cols, n = 300, 96, 7
	w := randMatrix(r, rows, cols)
	x := make([]float32, n*cols)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for _, f := range Formats {
		m, _ := New(f, w, rows, cols)
		d := Dequantize(m)
		want := make([]float32, n*rows)
		kernels.MatMul(want, d, x, rows, cols, n)
		var z ScratchSize
		z.Add(m)
		scratch := z.New()
		got := make([]float32, n*rows)
		if f == "int8-a8" {
			// The float product of the dequantized weights is only close;
			// the exact value is the int8 kernel's on the quantized input.
			MatMul(got, m, x, n, scratch)
			xq := make([]int8, cols)
			for tok := 0; tok < n; tok++ {
				xs := kernels.QuantizeI8(xq, x[tok*cols:(tok+1)*cols])
				for i := range rows {
					// Each input moves at most xs/2.
					var l1 float64
					for _, v := range d[i*cols : (i+1)*cols] {
						l1 += math.Abs(float64(v))
					}
					ref := want[tok*rows+i]
					if e := math.Abs(float64(got[tok*rows+i] - ref)); e > float64(xs)/2*l1*1.001+1e-5 {
						t.Fatalf("int8-a8: out[%d] = %g, float %g", tok*rows+i, got[tok*rows+i], ref)
					}
				}
				kernels.MatVecI8(want[tok*rows:(tok+1)*rows], m.(*Int8Rows).Q, m.(*Int8Rows).Scale, xq, xs, rows, cols)
			}
		}
		MatMul(got, m, x, n, scratch)
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: batched out[%d] = %g, float product of the dequantized matrix %g", f, i, got[i], want[i])
			}
		}
		for tok := 0; tok < n; tok++ {
			MatMul(got[:rows], m, x[tok*cols:(tok+1)*cols], 1, scratch)
			for i := range rows {
				if got[i] != want[tok*rows+i] {
					t.Fatalf("%s: decode token %d out[%d] = %g, want %g", f, tok, i, got[i], want[tok*rows+i])
				}
			}
		}
		if a := testing.AllocsPerRun(5, func() { MatMul(got[:rows], m, x, 1, scratch) }); a != 0 {
			t.Errorf("%s: MatMul allocates %v times", f, a)
		}
	}
}

func TestBadInput(t *testing.T) {
	w := make([]float32, 12)
	for _, f := range []string{"int3", "", "INT8", "int4-g16"} {
		if _, err := New(f, w, 3, 4); err == nil || !strings.Contains(err.Error(), "unknown format") {
			t.Errorf("New(%q): %v", f, err)
		}
	}
	if _, err := New("f32", w, 3, 4); err == nil {
		t.Error("New(f32) did not fail")
	}
	if _, err := NewInt4Groups(w, 3, 4, 16); err == nil {
		t.Error("group 16 accepted")
	}
	for _, f := range Formats {
		if _, err := New(f, w, 4, 4); err == nil {
			t.Errorf("%s: wrong length accepted", f)
		}
		if _, err := New(f, nil, 0, 4); err == nil {
			t.Errorf("%s: empty shape accepted", f)
		}
		bad := make([]float32, 12)
		bad[7] = float32(math.NaN())
		if _, err := New(f, bad, 3, 4); err == nil || !strings.Contains(err.Error(), "row 1") {
			t.Errorf("%s: NaN weight: %v", f, err)
		}
		bad[7] = float32(math.Inf(1))
		if _, err := New(f, bad, 3, 4); err == nil {
			t.Errorf("%s: Inf weight accepted", f)
		}
	}
}

package weights

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"chat/models/gguf"
	"chat/models/kernels"
	"chat/models/testmodels"
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

// makeable lists the formats that can be made from float32 here.
func makeable(t *testing.T, w []float32, rows, cols int) map[string]Linear {
	t.Helper()
	out := map[string]Linear{}
	r := rand.New(rand.NewPCG(9, 9))
	const ncal = 64
	xcal := make([]float32, ncal*cols)
	for i := range xcal {
		xcal[i] = float32(r.NormFloat64()) * float32(1+i%cols%7)
	}
	for _, f := range Formats() {
		m, err := FromCalib(f, w, rows, cols, xcal, ncal)
		if err != nil {
			if strings.Contains(err.Error(), "quantiser yet") {
				continue
			}
			t.Fatalf("%s: %v", f, err)
		}
		out[f] = m
	}
	return out
}

// TestEveryFormat checks, for every format: its name and shape; that a batch
// gives each row the bits that row gives alone; that the product is the dot
// with the dequantised rows up to the activation rounding the format's
// kernel takes; that Slice is a view of the same rows; and that a decode
// step allocates nothing once the scratch has grown.
func TestEveryFormat(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const rows, cols, n = 37, 512, 5
	w := randMatrix(r, rows, cols)
	x := make([]float32, n*cols)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	ms := makeable(t, w, rows, cols)
	for _, want := range []string{"f32", "f16", "bf16", "q8_0", "q4_0", "q5_0", "iq4_nl", "q4_1", "q5_1", "iq4_xs", "int8", "int8-a8", "int4-g32", "int4-g64",
		"int4-g128", "int4-g32-a8", "int4-g128-a8", "int4-g32-gptq", "int4-g128-awq", "nf4-g32", "nf4-g64", "nf4-g128",
		"fp8", "fp8-e5m2"} {
		if ms[want] == nil {
			t.Errorf("format %s cannot be made from float32", want)
		}
	}
	for f, m := range ms {
		if m.Rows() != rows || m.Cols() != cols || m.Format() != f {
			t.Fatalf("%s: got %s [%d][%d]", f, m.Format(), m.Rows(), m.Cols())
		}
		var s Scratch
		batched := make([]float32, n*rows)
		m.Mul(batched, x, n, &s)
		one := make([]float32, rows)
		deq := Dequantize(m)
		for tok := 0; tok < n; tok++ {
			xt := x[tok*cols : (tok+1)*cols]
			m.Mul(one, xt, 1, &s)
			for j := range one {
				if one[j] != batched[tok*rows+j] {
					t.Fatalf("%s: token %d row %d: %v alone, %v in a batch", f, tok, j, one[j], batched[tok*rows+j])
				}
				var ref, l1 float64
				for k := 0; k < cols; k++ {
					ref += float64(deq[j*cols+k]) * float64(xt[k])
					l1 += math.Abs(float64(deq[j*cols+k]))
				}
				if d := math.Abs(float64(one[j]) - ref); d > actBound(f, xt)*l1+1e-4 {
					t.Fatalf("%s: token %d row %d = %v, dequantised dot %v", f, tok, j, one[j], ref)
				}
			}
		}
		sl := m.Slice(2, 9)
		got, full := make([]float32, 7*cols), deq[2*cols:9*cols]
		for i := 0; i < 7; i++ {
			sl.Row(got[i*cols:(i+1)*cols], i)
		}
		for i := range got {
			if got[i] != full[i] {
				t.Fatalf("%s: slice value %d = %v, want %v", f, i, got[i], full[i])
			}
		}
		if a := testing.AllocsPerRun(5, func() { m.Mul(one, x, 1, &s) }); a != 0 && !testmodels.Race {
			t.Errorf("%s: a decode product allocates %v times", f, a)
		}
	}
}

// actBound is how far a format moves the activations before the product,
// relative to max|x| (the error is at most that times the row's L1 norm).
func actBound(f string, x []float32) float64 {
	var amax float64
	for _, v := range x {
		amax = max(amax, math.Abs(float64(v)))
	}
	switch f {
	case "f32", "int8", "int4-g32", "int4-g64", "int4-g128", "nf4-g32", "nf4-g64", "nf4-g128", "fp8", "fp8-e5m2":
		return 1e-6 * amax
	case "int4-g32-gptq", "int4-g64-gptq", "int4-g128-gptq", "int4-g32-awq", "int4-g64-awq", "int4-g128-awq":
		return 1e-5 * amax // AWQ divides x by s, Row divides the weights
	case "f16":
		return amax / 2048
	case "bf16":
		return amax / 256
	}
	return amax / 127 // Q8_0/Q8_K/int8 activations: half a step, with room for the f16 scale
}

func TestInt8CourseRule(t *testing.T) {
	row := []float32{127, 63.5, -63.5, 62.5, 0.5, 1.5, 2.5, -0.5, -1.5, -127}
	zero := make([]float32, len(row))
	m, err := NewInt8(append(append([]float32{}, row...), zero...), 2, len(row), false)
	if err != nil {
		t.Fatal(err)
	}
	if m.scale[0] != 1 {
		t.Fatalf("scale %g, want 1 (127/127)", m.scale[0])
	}
	want := []int8{127, 64, -64, 62, 0, 2, 2, 0, -2, -127} // ties to even
	for i, q := range m.q[:len(row)] {
		if q != want[i] {
			t.Errorf("round(%g) = %d, want %d", row[i], q, want[i])
		}
	}
	if s := float32(1e-8) / 127; m.scale[1] != s {
		t.Errorf("zero row scale %g, want float32(1e-8)/127 = %g", m.scale[1], s)
	}
	d := Dequantize(m)
	for i, q := range m.q {
		if d[i] != float32(q)*m.scale[i/len(row)] {
			t.Fatalf("dequantized %d is %g", i, d[i])
		}
	}
	// Ties are decided on the float32 quotient, as torch.round(W/scale) does.
	m, _ = NewInt8([]float32{-0.3, 0.1, 0.05}, 1, 3, false)
	s := float32(0.3) / 127
	for i, v := range []float32{-0.3, 0.1, 0.05} {
		if want := int8(math.RoundToEven(float64(v / s))); m.q[i] != want {
			t.Errorf("q[%d] = %d, want %d", i, m.q[i], want)
		}
	}
}

// TestInt8Exact: the course's int8 product is the float product of the
// dequantised weights, bit for bit, alone and in a batch.
func TestInt8Exact(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 6))
	const rows, cols, n = 300, 96, 7
	w := randMatrix(r, rows, cols)
	x := make([]float32, n*cols)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for _, f := range []string{"int8", "int4-g32", "int4-g128", "nf4-g64", "fp8", "fp8-e5m2"} {
		m, _ := FromFloat(f, w, rows, cols)
		want := make([]float32, n*rows)
		kernels.MatMul(want, Dequantize(m), x, rows, cols, n)
		got := make([]float32, n*rows)
		var s Scratch
		m.Mul(got, x, n, &s)
		for i := range got {
			if got[i] != want[i] {
				t.Fatalf("%s: out[%d] = %g, float product of the dequantised matrix %g", f, i, got[i], want[i])
			}
		}
	}
}

func TestRoundTripBounds(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const rows, cols = 37, 200 // 200 is no multiple of 64 or 128: short last groups
	w := randMatrix(r, rows, cols)
	for _, f := range []string{"int8", "int4-g32", "int4-g64", "int4-g128", "nf4-g64", "fp8", "fp8-e5m2"} {
		m, err := FromFloat(f, w, rows, cols)
		if err != nil {
			t.Fatal(err)
		}
		d := Dequantize(m)
		for i, v := range w {
			if e := math.Abs(float64(d[i] - v)); e > errorBound(m, i/cols, i%cols, v) {
				t.Fatalf("%s: w[%d] = %g comes back as %g", f, i, v, d[i])
			}
		}
	}
}

// errorBound is half a quantisation step at w's scale, plus float32 rounding.
func errorBound(m Linear, r, c int, w float32) float64 {
	const eps = 1e-6
	switch m := m.(type) {
	case *Int8:
		return float64(m.scale[r])/2*(1+eps) + eps*math.Abs(float64(w))
	case *Int4:
		s := m.scale[r*((m.cols+m.g-1)/m.g)+c/m.g]
		if m.levels == &kernels.NF4Levels { // the widest gap between levels, ±1 and ±0.696
			return float64(s)*0.31/2*(1+eps) + eps*math.Abs(float64(w))
		}
		return float64(s)/2*(1+eps) + eps*math.Abs(float64(w))
	case *FP8:
		s := float64(m.scale[r])
		if m.f == kernels.E5M2 { // 2 mantissa bits; subnormal steps of 2^-16
			return max(math.Abs(float64(w))/8, s*0x1p-17)*(1+eps) + eps*math.Abs(float64(w))
		}
		return max(math.Abs(float64(w))/16, s*0x1p-10)*(1+eps) + eps*math.Abs(float64(w))
	}
	panic("unknown matrix")
}

func TestInt4Layout(t *testing.T) {
	w := []float32{7, -7, 3.5, -3.5, 0, 1, 2} // one row, group 32: scale 1
	m, err := NewInt4(w, 1, len(w), 32)
	if err != nil {
		t.Fatal(err)
	}
	if len(m.packed) != 4 || len(m.scale) != 1 || m.scale[0] != 1 {
		t.Fatalf("packed %d bytes, %d scales (%v)", len(m.packed), len(m.scale), m.scale)
	}
	// Codes q+8: 15, 1, 12 (3.5 → 4), 4 (-3.5 → -4), 8, 9, 10.
	want := []byte{15 | 1<<4, 12 | 4<<4, 8 | 9<<4, 10}
	for i, b := range want {
		if m.packed[i] != b {
			t.Errorf("byte %d = %#x, want %#x", i, m.packed[i], b)
		}
	}
	if got := Dequantize(m); got[2] != 4 || got[3] != -4 || got[6] != 2 {
		t.Errorf("dequantized %v", got)
	}
}

func TestQuantizeQ8_0Act(t *testing.T) {
	x := make([]float32, 64)
	x[0], x[1], x[2], x[3] = 127, 2.5, 3.5, -0.5 // scale 1: ties go to even
	var a kernels.ILAct
	a.Quantize(x, 1, 64, kernels.IL8)
	got := make([]float32, 64)
	a.Values(got, 0)
	if got[0] != 127 || got[1] != 2 || got[2] != 4 || got[3] != 0 || got[40] != 0 {
		t.Errorf("activation %v", got[:4])
	}
}

// TestFromGGUF: every type a GGUF file may hold comes back with its values
// (F32 as a view), and refuses a wrong byte count.
func TestFromGGUF(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 8))
	const rows, cols = 4, 256
	w := randMatrix(r, 8, cols)[:rows*cols]
	raw, _ := gguf.Quantize(gguf.TypeQ8_0, w)
	m, err := FromGGUF(gguf.TypeQ8_0, raw, rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	want := make([]float32, rows*cols)
	gguf.Dequantize(gguf.TypeQ8_0, raw, want)
	for i, v := range Dequantize(m) {
		if v != want[i] {
			t.Fatalf("q8_0 value %d: %v, want %v", i, v, want[i])
		}
	}
	if _, err := FromGGUF(gguf.TypeQ8_0, raw[:len(raw)-1], rows, cols); err == nil {
		t.Error("short Q8_0 data accepted")
	}
	if _, err := FromGGUF(gguf.TypeQ4_K, raw, rows, 100); err == nil {
		t.Error("a Q4_K row of 100 values accepted")
	}
	if _, err := FromGGUF(gguf.TypeIQ2_XXS, make([]byte, 66*4), 4, 256); err == nil {
		t.Error("IQ2_XXS accepted")
	}
}

func TestBadInput(t *testing.T) {
	w := make([]float32, 12)
	for _, f := range []string{"int3", "", "INT8", "int4-g16"} {
		if _, err := FromFloat(f, w, 3, 4); err == nil || !strings.Contains(err.Error(), "unknown format") {
			t.Errorf("FromFloat(%q): %v", f, err)
		}
	}
	for _, f := range []string{"int8", "int4-g32", "fp8"} {
		if _, err := FromFloat(f, w, 4, 4); err == nil {
			t.Errorf("%s: wrong length accepted", f)
		}
		bad := make([]float32, 12)
		bad[7] = float32(math.NaN())
		if _, err := FromFloat(f, bad, 3, 4); err == nil || !strings.Contains(err.Error(), "row 1") {
			t.Errorf("%s: NaN weight: %v", f, err)
		}
	}
}

// TestDecodeProductAllocatesNothing: one token's product, the decode step's,
// allocates nothing in any format once its Scratch has grown (the
// interleaved K-quants pack their activation into pooled buffers), with the
// weights cached or streamed (a model past the L3 takes other tiles).
func TestDecodeProductAllocatesNothing(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const rows, cols = 37, 512
	x := make([]float32, cols)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	out := make([]float32, rows)
	for f, m := range makeable(t, randMatrix(r, rows, cols), rows, cols) {
		for _, reuse := range []kernels.Reuse{kernels.Cached, kernels.Stream} {
			s := Scratch{Reuse: reuse}
			m.Mul(out, x, 1, &s)
			if a := testing.AllocsPerRun(20, func() { m.Mul(out, x, 1, &s) }); a != 0 && !testmodels.Race {
				t.Errorf("%s (reuse %d): a one-token product allocates %v times", f, reuse, a)
			}
		}
	}
}

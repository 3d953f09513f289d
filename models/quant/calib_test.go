package quant

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"chat/models/kernels"
)

// calibRandMatrix is a weight matrix with an outlier and a zero row, as
// real checkpoints have both.
func calibRandMatrix(r *rand.Rand, rows, cols int) []float32 {
	w := make([]float32, rows*cols)
	for i := range w {
		w[i] = float32(r.NormFloat64() * 0.05)
	}
	w[3*cols+1] = 2.5
	clear(w[5*cols : 6*cols])
	return w
}

// nf4Dequant returns the whole matrix m as float32: float32(level·scale),
// the weights kernels.MatVecLUT4(..., &kernels.NF4Levels, B, ...)
// multiplies by.
func nf4Dequant(m *NF4Blocks) []float32 {
	rb, nb := (m.C+1)/2, (m.C+m.B-1)/m.B
	d := make([]float32, m.R*m.C)
	for r := 0; r < m.R; r++ {
		kernels.DequantizeLUT4(d[r*m.C:(r+1)*m.C], m.Packed[r*rb:(r+1)*rb], m.Scale[r*nb:(r+1)*nb], &kernels.NF4Levels, m.B, m.C)
	}
	return d
}

// TestRoundToNearestInt4: every code and scale follows the int4 rule
// (scale = max(max|group|, 1e-8)/7, code = clamp(round-half-even(w/scale),
// -7, 7) + 8), including a zero row, an outlier and short last groups.
func TestRoundToNearestInt4(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	const rows, cols = 9, 200
	w := calibRandMatrix(r, rows, cols)
	w[7*cols+4] = 0.5 * float32(7) // a tie once scaled
	for _, g := range []int{32, 64, 128} {
		m, err := RoundToNearestInt4(w, rows, cols, g)
		if err != nil {
			t.Fatal(err)
		}
		rb, ng := (cols+1)/2, (cols+g-1)/g
		for i, v := range w {
			rw, c := i/cols, i%cols
			var amax float32
			for _, u := range w[rw*cols+c/g*g : rw*cols+min(c/g*g+g, cols)] {
				amax = max(amax, float32(math.Abs(float64(u))))
			}
			s := max(amax, 1e-8) / 7
			q := max(-7, min(7, math.RoundToEven(float64(v/s))))
			if m.Scale[rw*ng+c/g] != s {
				t.Fatalf("g%d: scale of w[%d] %g, want %g", g, i, m.Scale[rw*ng+c/g], s)
			}
			if code := m.Packed[rw*rb+c/2] >> (4 * (c & 1)) & 15; int(code) != int(q)+8 {
				t.Fatalf("g%d: w[%d] = %g: code %d, want %d", g, i, v, code, int(q)+8)
			}
		}
	}
	if _, err := RoundToNearestInt4(w, rows, cols, 16); err == nil {
		t.Error("group 16 accepted")
	}
}

// correlated returns n tokens of cols activations that look like a
// transformer's: a few latent factors mixed into every channel (so channels
// are correlated and XᵀX is far from diagonal), per-channel magnitudes
// spread over two orders, and a handful of outlier channels.
func correlated(r *rand.Rand, n, cols int, mix []float64, mag []float64) []float32 {
	const k = 8
	x := make([]float32, n*cols)
	z := make([]float64, k)
	for t := 0; t < n; t++ {
		for i := range z {
			z[i] = r.NormFloat64()
		}
		for c := 0; c < cols; c++ {
			v := 0.3 * r.NormFloat64()
			for i := range z {
				v += mix[c*k+i] * z[i]
			}
			x[t*cols+c] = float32(v * mag[c])
		}
	}
	return x
}

// calibProblem is a layer and activations drawn from one distribution: x
// to calibrate on, test to measure on.
type calibProblem struct {
	rows, cols int
	w          []float32
	x, test    []float32
	n          int
}

func newCalibProblem(seed uint64, rows, cols, n int) calibProblem {
	r := rand.New(rand.NewPCG(seed, seed+1))
	mix, mag := make([]float64, cols*8), make([]float64, cols)
	for i := range mix {
		mix[i] = r.NormFloat64()
	}
	for c := range mag {
		mag[c] = math.Exp(r.NormFloat64())
	}
	for _, c := range []int{3, 17, cols - 5} {
		mag[c] *= 20 // outlier channels
	}
	w := make([]float32, rows*cols)
	for i := range w {
		w[i] = float32(r.NormFloat64() * 0.05)
	}
	return calibProblem{rows, cols, w, correlated(r, n, cols, mix, mag), correlated(r, n, cols, mix, mag), n}
}

// relErr is ‖X·Wᵀ − X·Ŵᵀ‖ / ‖X·Wᵀ‖ over the test tokens, Ŵ applied to
// x/inScale (nil: 1).
func (p calibProblem) relErr(wq []float32, inScale []float32) float64 {
	var num, den float64
	xs := make([]float64, p.cols)
	for t := 0; t < p.n; t++ {
		xt := p.test[t*p.cols : (t+1)*p.cols]
		for c, v := range xt {
			xs[c] = float64(v)
			if inScale != nil {
				xs[c] /= float64(inScale[c])
			}
		}
		for r := 0; r < p.rows; r++ {
			var y, yq float64
			for c := 0; c < p.cols; c++ {
				y += float64(p.w[r*p.cols+c]) * float64(xt[c])
				yq += float64(wq[r*p.cols+c]) * xs[c]
			}
			num += (y - yq) * (y - yq)
			den += y * y
		}
	}
	return math.Sqrt(num / den)
}

// TestGPTQAWQBeatRTN: on correlated activations with outlier channels, both
// GPTQ and AWQ give a smaller output error than round-to-nearest on held-out
// tokens, for every group size.
func TestGPTQAWQBeatRTN(t *testing.T) {
	p := newCalibProblem(7, 64, 256, 512)
	for _, g := range []int{32, 64, 128} {
		rtn, err := RoundToNearestInt4(p.w, p.rows, p.cols, g)
		if err != nil {
			t.Fatal(err)
		}
		gq, err := GPTQ(p.w, p.rows, p.cols, p.x, p.n, GPTQOptions{Group: g})
		if err != nil {
			t.Fatal(err)
		}
		aq, err := AWQ(p.w, p.rows, p.cols, p.x, p.n, AWQOptions{Group: g})
		if err != nil {
			t.Fatal(err)
		}
		eR, eG, eA := p.relErr(rtn.Dequantize(), nil), p.relErr(gq.Dequantize(), nil), p.relErr(aq.Q.Dequantize(), aq.InScale)
		t.Logf("int4-g%d output error: round-to-nearest %.4f, GPTQ %.4f (%.2f×), AWQ %.4f (%.2f×, α %.2f)",
			g, eR, eG, eG/eR, eA, eA/eR, aq.Alpha)
		if !(eG < 0.9*eR) {
			t.Errorf("g%d: GPTQ error %.4f is not below round-to-nearest's %.4f", g, eG, eR)
		}
		if !(eA < eR) || aq.Alpha <= 0 {
			t.Errorf("g%d: AWQ error %.4f (α %.2f) is not below round-to-nearest's %.4f", g, eA, aq.Alpha, eR)
		}
	}
}

// TestGPTQDiagonal: when XᵀX is diagonal no error can be compensated, and
// GPTQ (searched and refit scales, codes in [-8, 7]) must have an output
// error no larger than round-to-nearest's.
func TestGPTQDiagonal(t *testing.T) {
	r := rand.New(rand.NewPCG(9, 10))
	rows, cols := 16, 96
	w := calibRandMatrix(r, rows, cols)
	x := make([]float32, cols*cols)
	for c := 0; c < cols; c++ {
		x[c*cols+c] = float32(1 + c%5)
	}
	rtn, _ := RoundToNearestInt4(w, rows, cols, 32)
	def, err := GPTQ(w, rows, cols, x, cols, GPTQOptions{Group: 32})
	if err != nil {
		t.Fatal(err)
	}
	sqErr := func(m *Int4Codes) float64 { // Σ x_c²·(w−ŵ)², the output error
		var e float64
		for i, v := range m.Dequantize() {
			xc := float64(x[(i%cols)*cols+i%cols])
			d := float64(w[i]) - float64(v)
			e += xc * xc * d * d
		}
		return e
	}
	if eD, eR := sqErr(def), sqErr(rtn); eD > eR {
		t.Errorf("output error %g, round-to-nearest %g", eD, eR)
	}
}

// TestGPTQDeadColumns: inputs that are always 0 get weight 0 (their
// weights never affect the output) and the rest still quantizes.
func TestGPTQDeadColumns(t *testing.T) {
	p := newCalibProblem(11, 8, 64, 200)
	for tok := 0; tok < p.n; tok++ {
		p.x[tok*p.cols+5] = 0
	}
	gq, err := GPTQ(p.w, p.rows, p.cols, p.x, p.n, GPTQOptions{Group: 32, Block: 16})
	if err != nil {
		t.Fatal(err)
	}
	d := gq.Dequantize()
	for r := 0; r < p.rows; r++ {
		if d[r*p.cols+5] != 0 {
			t.Fatalf("row %d: dead column dequantizes to %g", r, d[r*p.cols+5])
		}
	}
	// An all-zero calibration set: every column dead, the result all zeros.
	gq, err = GPTQ(p.w, p.rows, p.cols, make([]float32, 3*p.cols), 3, GPTQOptions{Group: 64})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range gq.Dequantize() {
		if v != 0 {
			t.Fatalf("all-dead layer dequantizes to %g", v)
		}
	}
}

// TestCalibKernelsExact: the calibrated formats run through the kernels
// give exactly the float product of their dequantized weights (AWQ with the
// activation divided by its scales).
func TestCalibKernelsExact(t *testing.T) {
	p := newCalibProblem(13, 40, 160, 64)
	gq, err := GPTQ(p.w, p.rows, p.cols, p.x, p.n, GPTQOptions{Group: 32})
	if err != nil {
		t.Fatal(err)
	}
	aq, err := AWQ(p.w, p.rows, p.cols, p.x, p.n, AWQOptions{Group: 64, Grid: 5})
	if err != nil {
		t.Fatal(err)
	}
	x := p.test[:p.cols]
	xs := make([]float32, p.cols)
	for c := range xs {
		xs[c] = x[c] / aq.InScale[c]
	}
	for _, c := range []struct {
		name string
		m    *Int4Codes
		x    []float32
	}{{"gptq", gq, x}, {"awq", aq.Q, xs}} {
		want, got := make([]float32, p.rows), make([]float32, p.rows)
		kernels.MatVec(want, c.m.Dequantize(), c.x, p.rows, p.cols)
		kernels.MatVecLUT4(got, c.m.Packed, c.m.Scale, &kernels.Int4Levels, c.m.Group, c.x, p.rows, p.cols)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("%s: row %d: kernel %g, dequantized product %g", c.name, i, got[i], want[i])
			}
		}
	}
}

func TestCalibBadInput(t *testing.T) {
	w, x := make([]float32, 4*64), make([]float32, 3*64)
	for name, f := range map[string]func() error{
		"gptq group 16": func() error { _, err := GPTQ(w, 4, 64, x, 3, GPTQOptions{Group: 16}); return err },
		"awq group 0":   func() error { _, err := AWQ(w, 4, 64, x, 3, AWQOptions{}); return err },
		"gptq short x":  func() error { _, err := GPTQ(w, 4, 64, x[:100], 3, GPTQOptions{Group: 32}); return err },
		"awq no tokens": func() error { _, err := AWQ(w, 4, 64, nil, 0, AWQOptions{Group: 32}); return err },
		"gptq shape":    func() error { _, err := GPTQ(w, 5, 64, x, 3, GPTQOptions{Group: 32}); return err },
		"gptq NaN x": func() error {
			bad := append([]float32(nil), x...)
			bad[70] = float32(math.NaN())
			_, err := GPTQ(w, 4, 64, bad, 3, GPTQOptions{Group: 32})
			return err
		},
		"awq -Inf w": func() error {
			bad := append([]float32(nil), w...)
			bad[70] = float32(math.Inf(-1))
			_, err := AWQ(bad, 4, 64, x, 3, AWQOptions{Group: 32})
			return err
		},
		"too wide": func() error {
			_, err := GPTQ(make([]float32, maxCalibCols+32), 1, maxCalibCols+32, make([]float32, maxCalibCols+32), 1, GPTQOptions{Group: 32})
			return err
		},
	} {
		if err := f(); err == nil || !strings.HasPrefix(err.Error(), "quant: ") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestNF4(t *testing.T) {
	r := rand.New(rand.NewPCG(15, 16))
	// The nearest level, by brute force.
	for i := 0; i < 20000; i++ {
		v := float32(r.Float64()*2.2 - 1.1)
		got := kernels.NF4Levels[NearestNF4(v)]
		for _, l := range kernels.NF4Levels {
			if math.Abs(float64(l-v)) < math.Abs(float64(got-v)) {
				t.Fatalf("NearestNF4(%g) = level %g, but %g is nearer", v, got, l)
			}
		}
	}
	const rows, cols = 9, 200
	w := calibRandMatrix(r, rows, cols)
	for _, b := range []int{32, 64, 128} {
		m, err := NewNF4Blocks(w, rows, cols, b)
		if err != nil {
			t.Fatal(err)
		}
		if m.Format() != "nf4-g"+map[int]string{32: "32", 64: "64", 128: "128"}[b] || m.R != rows || m.C != cols {
			t.Fatalf("%s [%d][%d]", m.Format(), m.R, m.C)
		}
		d := nf4Dequant(m)
		nb := (cols + b - 1) / b
		var sq, sqErr float64
		for i, v := range w {
			rw, c := i/cols, i%cols
			s := m.Scale[rw*nb+c/b]
			code := m.Packed[rw*((cols+1)/2)+c/2] >> (4 * (c & 1)) & 15
			if d[i] != float32(kernels.NF4Levels[code]*s) {
				t.Fatalf("g%d: w[%d] dequantizes to %g, not level·scale", b, i, d[i])
			}
			// At most half the widest gap between levels (0.3039 at the ends).
			if e := math.Abs(float64(d[i] - v)); e > 0.1521*float64(s)+1e-6 {
				t.Fatalf("g%d: w[%d] = %g comes back as %g", b, i, v, d[i])
			}
			sq += float64(v) * float64(v)
			sqErr += float64(d[i]-v) * float64(d[i]-v)
		}
		x := make([]float32, cols)
		for i := range x {
			x[i] = float32(r.NormFloat64())
		}
		want, got := make([]float32, rows), make([]float32, rows)
		kernels.MatVec(want, d, x, rows, cols)
		kernels.MatVecLUT4(got, m.Packed, m.Scale, &kernels.NF4Levels, b, x, rows, cols)
		for i := range want {
			if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
				t.Fatalf("g%d: kernel row %d %g, dequantized product %g", b, i, got[i], want[i])
			}
		}
		t.Logf("nf4-g%d: %d bytes, relative RMS error %.4f", b, len(m.Packed)+4*len(m.Scale), math.Sqrt(sqErr/sq))
	}
	if _, err := NewNF4Blocks(w, rows, cols, 16); err == nil {
		t.Error("block 16 accepted")
	}
	bad := append([]float32(nil), w...)
	bad[5*cols+3] = float32(math.NaN())
	if _, err := NewNF4Blocks(bad, rows, cols, 64); err == nil || !strings.Contains(err.Error(), "row 5") {
		t.Errorf("NaN weight: %v", err)
	}
}

// BenchmarkCalib times GPTQ and AWQ on a student.pt-sized layer (768×192,
// the MLP's up projection) with 512 calibration tokens.
func BenchmarkCalib(b *testing.B) {
	p := newCalibProblem(19, 768, 192, 512)
	b.Run("GPTQ", func(b *testing.B) {
		for b.Loop() {
			GPTQ(p.w, p.rows, p.cols, p.x, p.n, GPTQOptions{Group: 32})
		}
	})
	b.Run("AWQ", func(b *testing.B) {
		for b.Loop() {
			AWQ(p.w, p.rows, p.cols, p.x, p.n, AWQOptions{Group: 32})
		}
	})
}

// encodeInt4Ref is EncodeInt4 as one loop of codeRange, without the
// assembly.
func encodeInt4Ref(packed []byte, scale []float32, x []float32, g int) {
	clear(packed[:(len(x)+1)/2])
	for j := 0; j*g < len(x); j++ {
		grp := x[j*g : min((j+1)*g, len(x))]
		s := int4Scale(maxAbs(grp))
		scale[j] = s
		for i, v := range grp {
			c := j*g + i
			packed[c/2] |= byte(codeRange(v, s, 7)+8) << (4 * (c & 1))
		}
	}
}

// TestEncodeInt4Kernel: EncodeInt4 with kernels.DivRoundInt4 gives the
// plain loop's codes and scales, for group sizes the KV cache and the
// weights use and odd ones, lengths that leave a tail, magnitudes from
// subnormal to huge, ties, zeros and a NaN or an infinity in a group.
func TestEncodeInt4Kernel(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, g := range []int{32, 64, 128, 33, 7} {
		for _, n := range []int{31, 32, 64, 65, 100, 768} {
			for trial := range 30 {
				x := make([]float32, n)
				for i := range x {
					x[i] = float32(rng.NormFloat64()) * []float32{1, 1e-3, 1e30, 1e-41, 3}[trial%5]
				}
				switch trial % 6 {
				case 1: // ties: scale 1 when max|x| is 7
					for i := range x {
						x[i] = float32(rng.IntN(14)-7) + 0.5
					}
					x[0] = 7
				case 2:
					x[rng.IntN(n)] = float32(math.NaN())
				case 3:
					x[rng.IntN(n)] = float32(math.Inf(1))
				case 4:
					clear(x[:min(n, 40)])
				}
				ng := (n + g - 1) / g
				got, want := make([]byte, (n+1)/2), make([]byte, (n+1)/2)
				gs, ws := make([]float32, ng), make([]float32, ng)
				EncodeInt4(got, gs, x, g)
				encodeInt4Ref(want, ws, x, g)
				if kernels.ISA() != "go" && g%32 == 0 && trial%6 != 2 && trial%6 != 3 {
					// The assembly alone on the first group, so that the
					// test cannot pass by comparing the Go loop with itself.
					p := make([]byte, g/2)
					if done := kernels.DivRoundInt4(p, x[:min(g, n)], ws[0]); done != min(g, n)&^31 || !slices.Equal(p[:done/2], want[:done/2]) {
						t.Fatalf("the %s assembly encoded %d of a group's %d values: %x, want %x", kernels.ISA(), done, min(g, n), p, want[:done/2])
					}
				}
				for j := range ws {
					if math.Float32bits(gs[j]) != math.Float32bits(ws[j]) && !(gs[j] != gs[j] && ws[j] != ws[j]) { // any NaN for a NaN
						t.Fatalf("g=%d n=%d trial %d: scale %d %v, want %v", g, n, trial, j, gs[j], ws[j])
					}
				}
				if trial%6 == 2 || trial%6 == 3 {
					continue // a NaN's code is int(NaN)'s, which Go leaves unspecified
				}
				if !slices.Equal(got, want) {
					t.Fatalf("g=%d n=%d trial %d: codes\n%x\nwant\n%x", g, n, trial, got, want)
				}
			}
		}
	}
}

// FuzzEncodeInt4: any finite float32 bits, any group size, EncodeInt4 (with
// the assembly) against the plain loop.
func FuzzEncodeInt4(f *testing.F) {
	f.Add(make([]byte, 4*40), uint8(32))
	f.Add([]byte{0, 0, 0xe0, 0x40, 0, 0, 0x60, 0x40, 1, 0, 0, 0}, uint8(3))
	f.Fuzz(func(t *testing.T, raw []byte, g8 uint8) {
		g := int(g8%130) + 1
		x := make([]float32, len(raw)/4)
		for i := range x {
			x[i] = math.Float32frombits(binary.LittleEndian.Uint32(raw[4*i:]))
			if !isFinite(x[i]) {
				x[i] = 1
			}
		}
		ng := (len(x) + g - 1) / g
		got, want := make([]byte, (len(x)+1)/2), make([]byte, (len(x)+1)/2)
		gs, ws := make([]float32, ng), make([]float32, ng)
		EncodeInt4(got, gs, x, g)
		encodeInt4Ref(want, ws, x, g)
		if !slices.Equal(got, want) || !slices.Equal(gs, ws) {
			t.Fatalf("g=%d x=%v: codes %x scales %v, want %x %v", g, x, got, gs, want, ws)
		}
	})
}

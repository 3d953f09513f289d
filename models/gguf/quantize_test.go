package gguf

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
)

// The goldens in testdata/quantize_golden.json are ggml's own bytes for the
// inputs goldenCases makes; testdata/README.md says how they were produced.
// For every case and block type they hold the first 16 bytes (hex) of the
// SHA-256 of quantize_row_<type>_ref's output and of dequantize_row_<type>
// applied to that output (as little-endian float32s).

// splitMix is SplitMix64, the generator behind the golden inputs: a few
// lines that give the same numbers in any language.
type splitMix struct{ s uint64 }

func (r *splitMix) next() uint64 {
	r.s += 0x9e3779b97f4a7c15
	z := r.s
	z = (z ^ z>>30) * 0xbf58476d1ce4e5b9
	z = (z ^ z>>27) * 0x94d049bb133111eb
	return z ^ z>>31
}

// unit is uniform in [0, 1): the top 53 bits over 2^53, exact (so a compiler
// fusing it into a later addition changes nothing).
func (r *splitMix) unit() float64 { return float64(r.next()>>11) / (1 << 53) }

// bell is the sum of four units minus 2: bell-shaped on (-2, 2), computed
// with additions only so it is exact and portable (no math.Log).
func (r *splitMix) bell() float64 { return r.unit() + r.unit() + r.unit() + r.unit() - 2 }

type goldenCase struct {
	name string
	x    []float32
}

// goldenCases makes the inputs: one SplitMix64 stream seeded with 1, drawn
// in the order the cases are listed. Products are rounded before any
// addition (float64(a*b)) so no platform fuses them.
func goldenCases() []goldenCase {
	r := &splitMix{s: 1}
	gen := func(n int, f func(i int) float64) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = float32(f(i))
		}
		return x
	}
	scaled := func(n int, s float64) []float32 {
		return gen(n, func(int) float64 { return s * r.bell() })
	}
	var cs []goldenCase
	add := func(name string, x []float32) { cs = append(cs, goldenCase{name, x}) }

	add("zeros", make([]float32, 256))
	add("bell", scaled(512, 1))
	add("weights", scaled(256, 0.02))
	out := scaled(512, 0.01) // one huge outlier in each super-block
	out[37], out[300] = 1000, -250
	add("outlier", out)
	add("negative", gen(256, func(int) float64 { return float64(-3*r.unit()) - 0.001 }))
	add("positive", gen(256, func(int) float64 { return r.unit() + 0.5 }))
	add("constant", gen(256, func(int) float64 { return 0.75 }))
	add("ramp", gen(256, func(i int) float64 { return float64(i-100) / 64 }))
	add("integers", gen(256, func(i int) float64 { return float64(i*7%31 - 15) }))
	add("quarters", gen(256, func(i int) float64 { return float64(i%33-16) / 4 }))
	// Exact halves: each block of 32 starts with the value that sets the
	// scale to 1 (127 for q8_0, -8 for q4_0, -16 for q5_0) so x/d lands
	// on .5 ties.
	for _, c := range []struct {
		name string
		lead float64
		span int
	}{{"ties-q8", 127, 252}, {"ties-q4", -8, 15}, {"ties-q5", -16, 31}} {
		add(c.name, gen(256, func(i int) float64 {
			if i%32 == 0 {
				return c.lead
			}
			return float64(int(r.unit()*float64(c.span))-c.span/2) + 0.5
		}))
	}
	add("tiny", scaled(256, 1e-20))
	add("near-eps", scaled(256, 3e-15))
	sub := scaled(256, 1e-40)    // float32 subnormals, then values whose
	for i := 128; i < 256; i++ { // block scales are subnormal
		sub[i] = float32(2e-38 * r.bell())
	}
	add("subnormal", sub)
	// Each sub-block of 16 its own magnitude and sign pattern.
	mags := []float64{1e-3, 1e-2, 0.1, 1, 10, 100, 1000}
	add("mixed", gen(512, func(i int) float64 {
		k := i / 16
		m := mags[k%7]
		switch k % 4 {
		case 1:
			return m * -r.unit()
		case 2:
			return m * r.unit()
		case 3:
			return 0
		}
		return m * r.bell()
	}))
	add("sparse", gen(256, func(i int) float64 {
		if i%61 != 5 {
			return 0
		}
		return 3 * r.bell()
	}))
	add("large", scaled(256, 1e4))
	add("heavy", gen(512, func(int) float64 { return r.bell() / (r.unit() + 0.01) }))
	// 64 super-blocks mixing all of the above shapes at magnitudes 1e-3..10.
	add("stress", gen(64*256, func(i int) float64 {
		b := i / 256
		m := mags[b%5]
		switch b / 5 % 6 {
		case 0:
			return m * r.bell()
		case 1:
			return m * -r.unit()
		case 2:
			if r.unit() < 0.02 {
				return 100 * m * r.bell()
			}
			return m * r.bell()
		case 3:
			return m * r.bell() / (r.unit() + 0.01)
		case 4:
			return m * float64(int(8*r.bell())) / 4
		}
		if i%16 < 8 {
			return 0
		}
		return m * r.unit()
	}))
	return cs
}

type goldenEntry struct {
	Case    string `json:"case"`
	Type    string `json:"type"`
	Quant   string `json:"quant"`   // SHA-256 prefix of ggml's bytes
	Dequant string `json:"dequant"` // and of its dequantised floats
}

type goldenFile struct {
	Source  string        `json:"source"`
	Entries []goldenEntry `json:"entries"`
}

func typeByName(name string) (Type, bool) {
	for t := range traits {
		if t.String() == name {
			return t, true
		}
	}
	return 0, false
}

func sha(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:16]) }

func floatBytes(x []float32) []byte {
	b := make([]byte, 4*len(x))
	for i, v := range x {
		binary.LittleEndian.PutUint32(b[4*i:], math.Float32bits(v))
	}
	return b
}

// TestQuantizeGolden checks Quantize and Dequantize byte for byte against
// ggml. With GGUF_GOLDEN_DUMP=DIR it instead writes each case's input to
// DIR/<case>.f32 (little-endian float32) for the C harness.
func TestQuantizeGolden(t *testing.T) {
	cases := goldenCases()
	if dir := os.Getenv("GGUF_GOLDEN_DUMP"); dir != "" {
		for _, c := range cases {
			if err := os.WriteFile(filepath.Join(dir, c.name+".f32"), floatBytes(c.x), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		t.Skipf("wrote %d inputs to %s", len(cases), dir)
	}
	raw, err := os.ReadFile("testdata/quantize_golden.json")
	if err != nil {
		t.Fatal(err)
	}
	var g goldenFile
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	byName := map[string][]float32{}
	for _, c := range cases {
		byName[c.name] = c.x
	}
	seen := map[Type]int{}
	for _, e := range g.Entries {
		typ, ok := typeByName(e.Type)
		x, ok2 := byName[e.Case]
		if !ok || !ok2 {
			t.Fatalf("golden entry %s/%s names an unknown type or case", e.Case, e.Type)
		}
		seen[typ]++
		got, err := Quantize(typ, x)
		if err != nil {
			t.Errorf("%s/%s: %v", e.Case, e.Type, err)
			continue
		}
		if sha(got) != e.Quant {
			t.Errorf("%s/%s: bytes differ from ggml's (first block %x)", e.Case, e.Type, got[:typ.BlockBytes()])
			continue
		}
		y := make([]float32, len(x))
		if err := Dequantize(typ, got, y); err != nil {
			t.Fatal(err)
		}
		if sha(floatBytes(y)) != e.Dequant {
			t.Errorf("%s/%s: dequantised floats differ from ggml's", e.Case, e.Type)
		}
	}
	for t0 := range blockQuantizers {
		if seen[t0] != len(cases) {
			t.Errorf("%s: %d golden entries for %d cases", t0, seen[t0], len(cases))
		}
	}
}

// TestQuantizeRoundTrip checks dequantise(quantise(x)) against each format's
// error bound. For the 32-blocks the bound is exact: half a step (a whole
// step at the positive end of Q4_0/Q5_0, whose largest level is 7 or 15
// steps up but 8 or 16 down), plus what rounding d and m to f16 moves them.
// The k-quants fit their scales by least squares and may clip outliers, so
// they are held to a relative RMS error instead, on data of magnitude 1 and
// 300 (at 1e-3 their f16 super-block scales are subnormal and coarse, in
// ggml too).
func TestQuantizeRoundTrip(t *testing.T) {
	r := &splitMix{s: 42}
	// f16err bounds how far rounding v to f16 moves it: half an ulp,
	// relative 2^-11 for normals, absolute 2^-25 among subnormals.
	f16err := func(v float64) float64 { return max(math.Abs(v)/2048, 1.0/(1<<25)) }
	for _, scale := range []float64{1e-3, 1, 300} {
		x := make([]float32, 16*QK_K)
		for i := range x {
			x[i] = float32(scale * r.bell())
		}
		x[5] = float32(40 * scale) // an outlier
		rels := map[Type]float64{}
		for typ := range blockQuantizers {
			q, err := Quantize(typ, x)
			if err != nil {
				t.Fatal(err)
			}
			y := make([]float32, len(x))
			if err := Dequantize(typ, q, y); err != nil {
				t.Fatal(err)
			}
			bs := typ.BlockSize()
			var se, sx float64
			for b := 0; b < len(x)/bs; b++ {
				blk, out := x[b*bs:(b+1)*bs], y[b*bs:(b+1)*bs]
				lo, hi := blockMinMax(blk)
				_, amax := blockAbsMax(blk)
				a, rng := float64(amax), float64(hi-lo)
				var bound float64
				switch typ {
				case TypeQ8_0:
					bound = a/254 + 127*f16err(a/127)
				case TypeQ4_0:
					bound = a/8 + 8*f16err(a/8)
				case TypeQ5_0:
					bound = a/16 + 16*f16err(a/16)
				case TypeQ4_1:
					bound = rng/30 + 15*f16err(rng/15) + f16err(float64(lo))
				case TypeQ5_1:
					bound = rng/62 + 31*f16err(rng/31) + f16err(float64(lo))
				}
				for i := range blk {
					d := float64(out[i] - blk[i])
					se += d * d
					sx += float64(blk[i]) * float64(blk[i])
					if bound > 0 && math.Abs(d) > bound*1.0001 {
						t.Fatalf("%s scale %g: x[%d] = %v came back as %v (bound %g)", typ, scale, b*bs+i, blk[i], out[i], bound)
					}
				}
			}
			rel := math.Sqrt(se / sx)
			rels[typ] = rel
			// Limits: 1.25 × what this seed gives at scale 1 and 300.
			limit := map[Type]float64{TypeQ8_0: 0.012, TypeQ4_0: 0.11, TypeQ5_0: 0.09, TypeQ4_1: 0.135, TypeQ5_1: 0.06,
				TypeQ2_K: 0.4, TypeQ3_K: 0.142, TypeQ4_K: 0.11, TypeQ5_K: 0.054, TypeQ6_K: 0.035,
				TypeIQ4_NL: 0.114, TypeIQ4_XS: 0.114}[typ]
			if scale >= 1 && rel > limit {
				t.Errorf("%s scale %g: relative RMS error %.4f, want ≤ %g", typ, scale, rel, limit)
			}
		}
		// More bits, less error.
		ladder := []Type{TypeQ2_K, TypeQ3_K, TypeQ4_K, TypeQ5_K, TypeQ6_K, TypeQ8_0}
		for i := 1; i < len(ladder); i++ {
			if rels[ladder[i]] >= rels[ladder[i-1]] {
				t.Errorf("scale %g: %s error %.4f is not below %s's %.4f", scale, ladder[i], rels[ladder[i]], ladder[i-1], rels[ladder[i-1]])
			}
		}
	}
}

func TestQuantizeErrors(t *testing.T) {
	for _, typ := range []Type{TypeQ8_0, TypeQ4_K, TypeQ2_K} {
		if _, err := Quantize(typ, make([]float32, typ.BlockSize()+1)); err == nil {
			t.Errorf("%s: a partial block was accepted", typ)
		}
		for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Inf(-1))} {
			x := make([]float32, typ.BlockSize())
			x[3] = bad
			if _, err := Quantize(typ, x); err == nil {
				t.Errorf("%s: %v was accepted", typ, bad)
			}
		}
	}
	// Scales past the f16 range: 1e7 overflows Q8_0's d (1e7/127 > 65504)
	// but not F16's neighbour Q6_K, whose d is ~max/(32·128).
	x := make([]float32, QK_K)
	x[0] = 1e7
	if _, err := Quantize(TypeQ8_0, x); err == nil {
		t.Error("q8_0: an f16-overflowing scale was accepted")
	}
	if _, err := Quantize(TypeQ6_K, x); err != nil {
		t.Errorf("q6_k: %v", err)
	}
	// Far past the f16 range ggml's k-quant fits overflow float32 and it
	// writes zero blocks; Quantize refuses.
	for _, big := range []float32{1e12, 1e20, 3e38} {
		x[0] = big
		for typ := range blockQuantizers {
			if _, err := Quantize(typ, x); err == nil {
				t.Errorf("%s: %g was accepted", typ, big)
			}
		}
	}
	if _, err := Quantize(TypeIQ2_XXS, x); err == nil || CanQuantize(TypeIQ2_XXS) {
		t.Error("iq2_xxs: quantising is not supported")
	}
	// Plain types convert anything, as ggml does.
	b, err := Quantize(TypeBF16, []float32{1, float32(math.Inf(-1)), float32(math.NaN())})
	if err != nil || !bytes.Equal(b[:4], []byte{0x80, 0x3f, 0x80, 0xff}) || b[5]&0x7f != 0x7f || b[4]&0x40 == 0 {
		t.Errorf("bf16: % x, %v", b, err)
	}
}

func TestF32ToBF16(t *testing.T) {
	cases := []struct {
		f float32
		h uint16
	}{
		{1, 0x3f80}, {-3, 0xc040},
		{math.Float32frombits(0x3f808000), 0x3f80}, // tie, even stays
		{math.Float32frombits(0x3f818000), 0x3f82}, // tie, odd rounds up
		{math.Float32frombits(0x3f808001), 0x3f81},
		{math.Float32frombits(0x7f7fffff), 0x7f80}, // overflows to Inf
	}
	for _, c := range cases {
		if g := F32ToBF16(c.f); g != c.h {
			t.Errorf("F32ToBF16(%#x) = %#x, want %#x", math.Float32bits(c.f), g, c.h)
		}
	}
}

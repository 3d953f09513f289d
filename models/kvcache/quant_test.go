package kvcache

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"chat/models"
	"chat/models/hugepage"
	"chat/models/kernels"
)

// TestQuantizeRow: scale = absmax/127 per head, round half to even, the
// absmax element at ±127, a zero head at scale 0.
func TestQuantizeRow(t *testing.T) {
	x := []float32{127, 2.5, 3.5, -2.5, -0.5, 0.5, 1.5, -127, 0, 0, 0, 0, 0, 0, 0, 0}
	q := make([]byte, 16)
	sc := make([]float32, 2)
	QuantizeRow(Int8, q, sc, x, 16, 2)
	got := make([]int8, 16)
	for i, c := range q {
		got[i] = int8(c)
	}
	if want := []int8{127, 2, 4, -2, 0, 0, 2, -127, 0, 0, 0, 0, 0, 0, 0, 0}; !slices.Equal(got, want) || sc[0] != 1 || sc[1] != 0 {
		t.Errorf("got %v scales %v, want %v scales [1 0]", got, sc, want)
	}
	out := make([]float32, 16)
	DequantizeRows(Int8, out, q, sc, 1, 16, 2)
	if out[0] != 127 || out[7] != -127 || out[2] != 4 || out[9] != 0 {
		t.Errorf("dequantized %v", out)
	}
}

// bound is the int8 error bound of one element: half a step, with room for
// the float32 rounding of x/scale and q·scale.
func bound(scale float32) float64 { return float64(scale)*0.5*(1+1e-5) + 1e-30 }

// elemBound is the error format f may make on element j of a row of dim
// elements in h heads holding x there, with the row's scales sc: half a
// step for int8 and int4 (the scale of j's group), 3 mantissa bits (|x|/16)
// plus half the smallest subnormal step for FP8, half an ulp of a half (and
// of its smallest subnormal) for F16.
func elemBound(f Format, sc []float32, j, dim, h int, x float32) float64 {
	d := dim / h
	switch f {
	case Int8:
		return bound(sc[j/d])
	case FP8:
		return (math.Abs(float64(x))/16+float64(sc[j/d])*math.Ldexp(1, -10))*(1+1e-5) + 1e-30
	case Int4:
		_, ng := kernels.Int4KVHead(d)
		return bound(sc[j/d*ng+j%d/kernels.Int4KVGroup])
	case F16:
		return math.Abs(float64(x))*math.Ldexp(1, -11) + math.Ldexp(1, -25)
	}
	return 0
}

var quantFormats = []Format{Int8, FP8, Int4, F16}

// TestQuantPoolRoundTrip: rows written to an int8, fp8 or int4 pool (keys
// and values, both layers, block boundaries, a partly filled last block,
// heads of very different sizes and a head wider than an int4 group) read
// back through Keys and Values within each format's bound of what was
// written; copy-on-write of a shared block keeps both holders' rows;
// reading and writing allocate nothing.
func TestQuantPoolRoundTrip(t *testing.T) {
	for _, f := range quantFormats {
		t.Run(f.String(), func(t *testing.T) { testQuantPoolRoundTrip(t, f, 8) })
		t.Run(f.String()+"/head80", func(t *testing.T) { testQuantPoolRoundTrip(t, f, 80) })
	}
}

func testQuantPoolRoundTrip(t *testing.T, f Format, hd int) {
	const bs, heads = 16, 4
	lay := Layout{Layers: 2, KDim: heads * hd, VDim: heads * hd, Heads: heads, K: f, V: f}
	p, err := NewPool(lay, bs, 8)
	if err != nil {
		t.Fatal(err)
	}
	if p.K(0, 0) != nil || p.V(0, 0) != nil {
		t.Fatal("float rows of a quantized pool")
	}
	r := rand.New(rand.NewPCG(1, 2))
	const n = 37
	want := make([][2][]float32, n*lay.Layers) // [pos*layers+l] = {k, v}
	s := p.NewSeq(100)
	if err := s.Append(n); err != nil {
		t.Fatal(err)
	}
	for pos := 0; pos < n; pos++ {
		for l := 0; l < lay.Layers; l++ {
			var kv [2][]float32
			for i := range kv {
				kv[i] = make([]float32, heads*hd)
				for j := range kv[i] {
					mag := float32(math.Pow(10, float64(j/hd-2))) // heads of very different sizes
					kv[i][j] = float32(r.NormFloat64()) * mag
				}
			}
			want[pos*lay.Layers+l] = kv
			s.WriteRow(l, pos, kv[0], kv[1])
		}
	}
	ns := f.scales(lay.KDim, heads)
	check := func(s *Seq, n int, what string) {
		t.Helper()
		kb, vb := make([]float32, bs*lay.KDim), make([]float32, bs*lay.VDim)
		for l := 0; l < lay.Layers; l++ {
			for i := 0; i*bs < n; i++ {
				parts := [2][]float32{blockK(s, l, i, kb), blockV(s, l, i, vb)}
				qs := [2]func(int, int32) ([]byte, []float32){p.KQ, p.VQ}
				for part, rows := range parts {
					_, scales := qs[part](l, s.Table()[i])
					for row := 0; row < min(bs, n-i*bs); row++ {
						pos := i*bs + row
						w := want[pos*lay.Layers+l][part]
						sc := scales[row*ns : (row+1)*ns]
						for j, x := range w {
							b := elemBound(f, sc, j, lay.KDim, heads, x)
							if d := math.Abs(float64(rows[row*lay.KDim+j] - x)); d > b {
								t.Fatalf("%s: layer %d pos %d part %d elem %d: %g for %g (bound %g, error %g)", what, l, pos, part, j, rows[row*lay.KDim+j], x, b, d)
							}
						}
					}
				}
			}
		}
	}
	check(s, n, "written")

	// Fork, then write the fork's partly filled last block: it is copied.
	fk := s.Fork()
	last := s.Table()[len(s.Table())-1]
	if err := fk.Append(1); err != nil {
		t.Fatal(err)
	}
	if fk.Table()[len(fk.Table())-1] == last || p.Copies() != 1 {
		t.Fatalf("no copy-on-write (copies %d)", p.Copies())
	}
	big := make([]float32, heads*hd)
	for j := range big {
		big[j] = 1000
	}
	fk.WriteRow(0, n, big, big)
	check(s, n, "original after the fork's write")
	check(fk, n, "fork")
	kb := make([]float32, bs*lay.KDim)
	if got := blockK(fk, 0, n/bs, kb)[(n%bs)*lay.KDim]; f == Int8 && got != 1000 || math.Abs(float64(got-1000)) > 1e-3 {
		t.Errorf("fork's new row reads %g", got)
	}
	fk.Free()

	row := want[0][0]
	if a := testing.AllocsPerRun(100, func() {
		s.WriteRow(1, 5, row, row)
		blockK(s, 1, 0, kb)
		blockV(s, 1, 2, kb)
	}); a != 0 {
		t.Errorf("%v allocs per write and read", a)
	}
}

// TestQuantMixed: keys quantized and values float32 (and the other way
// round), for each format: the float part is exact, the quantized part
// within its bound.
func TestQuantMixed(t *testing.T) {
	for _, qf := range quantFormats {
		for _, kf := range []Format{qf, F32} {
			vf := qf + F32 - kf
			p, err := NewPool(Layout{Layers: 1, KDim: 8, VDim: 8, Heads: 2, K: kf, V: vf}, 4, 2)
			if err != nil {
				t.Fatal(err)
			}
			s := p.NewSeq(8)
			s.Append(1)
			x := []float32{0.1, -0.2, 0.3, 0.4, 5, 6, -7, 8.5}
			s.WriteRow(0, 0, x, x)
			k, v := blockK(s, 0, 0, make([]float32, 32)), blockV(s, 0, 0, make([]float32, 32))
			exact, approx := k, v
			_, sc := p.VQ(0, s.Table()[0])
			if kf != F32 {
				exact, approx = v, k
				_, sc = p.KQ(0, s.Table()[0])
			}
			if !slices.Equal(exact[:8], x) {
				t.Errorf("K %v V %v: float part %v, want %v", kf, vf, exact[:8], x)
			}
			for j := range x {
				if d := math.Abs(float64(approx[j] - x[j])); d > elemBound(qf, sc, j, 8, 2, x[j]) {
					t.Errorf("K %v V %v: quantized part %v for %v", kf, vf, approx[:8], x)
					break
				}
			}
		}
	}
}

// TestQuantBlockBytes: an int8 or fp8 part takes a byte per element plus a
// float32 scale per head, an int4 part half a byte plus a scale per 32
// elements of a head, an f16 part two bytes an element, so a budget buys
// more blocks; bad layouts are refused.
func TestQuantBlockBytes(t *testing.T) {
	f := Layout{Layers: 2, KDim: 64, VDim: 64, Heads: 8} // heads of 8: one int4 group each
	for _, c := range []struct {
		f   Format
		row int64 // bytes of a key (= value) row
	}{{Int8, 64 + 8*4}, {FP8, 64 + 8*4}, {Int4, 32 + 8*4}, {F16, 2 * 64}} {
		q := f
		q.K, q.V = c.f, c.f
		if got, want := q.BytesPerBlock(16), 16*2*c.row*2; got != want {
			t.Errorf("%v block: %d bytes, want %d", c.f, got, want)
		}
		if BlocksFor(1<<20, q, 16) <= BlocksFor(1<<20, f, 16) {
			t.Errorf("%v buys no more blocks", c.f)
		}
	}
	if got, want := f.BytesPerBlock(16), int64(16*2*(64+64)*4); got != want {
		t.Errorf("f32 block: %d bytes, want %d", got, want)
	}
	wide := Layout{Layers: 1, KDim: 2 * 80, VDim: 2 * 80, Heads: 2, K: Int4, V: Int4} // heads of 80: groups of 32, 32, 16
	if got, want := wide.RowBytes(), int64(2*(2*40+2*3*4)); got != want {
		t.Errorf("int4 row of 2 heads of 80: %d bytes, want %d", got, want)
	}
	for _, qf := range quantFormats {
		if _, err := NewPool(Layout{Layers: 1, KDim: 10, VDim: 8, Heads: 4, K: qf}, 16, 4); err == nil {
			t.Errorf("%v: 4 heads in 10 key floats accepted", qf)
		}
	}
	for s, want := range map[string]Format{"": F32, "f32": F32, "int8": Int8, "fp8": FP8, "int4": Int4, "f16": F16} {
		if got, err := ParseFormat(s); got != want || err != nil {
			t.Errorf("ParseFormat(%q) = %v, %v", s, got, err)
		}
	}
	for _, s := range []string{"q4", "fp8-e5m2", "int4-g32", "F32"} {
		if _, err := ParseFormat(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
	// auto (and "", the engine's zero Options) is the model's own engine's
	// format: llama.cpp's f16 for GGUF, PyTorch's float32 for the course.
	gguf, torch := models.Info{Format: "gguf"}, models.Info{Format: "torch"}
	for _, c := range []struct {
		s    string
		info models.Info
		want Format
	}{{"auto", gguf, F16}, {"", gguf, F16}, {"auto", torch, F32}, {"", torch, F32}, {"f32", gguf, F32}, {"int8", torch, Int8}} {
		if got, err := FormatFor(c.s, c.info); got != c.want || err != nil {
			t.Errorf("FormatFor(%q, %s) = %v, %v; want %v", c.s, c.info.Format, got, err, c.want)
		}
	}
	if _, err := FormatFor("q4", gguf); err == nil {
		t.Error("FormatFor(q4) accepted")
	}
	if !slices.Equal(Formats(), []string{"f32", "int8", "fp8", "int4", "f16"}) {
		t.Errorf("Formats() = %v", Formats())
	}
}

// TestQuantExportImport: format v2 holds quantized rows and their scales as
// the pool stores them, so an int8, fp8 or int4 cache round-trips bit for
// bit (values quantized, keys float; then both quantized, head 16 so int4
// scales come one per head); a pool with other formats refuses the file.
func TestQuantExportImport(t *testing.T) {
	for _, qf := range quantFormats {
		t.Run(qf.String(), func(t *testing.T) {
			testQuantExportImport(t, Layout{Layers: 2, KDim: 8, VDim: 8, Heads: 2, V: qf})
			testQuantExportImport(t, Layout{Layers: 2, KDim: 32, VDim: 32, Heads: 2, K: qf, V: qf})
		})
	}
}

func testQuantExportImport(t *testing.T, lay Layout) {
	p, err := NewPool(lay, 4, 8)
	if err != nil {
		t.Fatal(err)
	}
	s := p.NewSeq(16)
	const n = 6
	s.Append(n)
	k, v := make([]float32, lay.KDim), make([]float32, lay.VDim)
	for pos := range n {
		for l := range 2 {
			for j := range k {
				k[j], v[j] = float32(pos*10+l+j)/7, -float32(pos*3+l*j)/5
			}
			s.WriteRow(l, pos, k, v)
		}
	}
	toks := []int{1, 2, 3, 4, 5, 6}
	var b bytes.Buffer
	if err := s.Export(&b, "m", toks); err != nil {
		t.Fatal(err)
	}
	got, gt, err := p.Import(bytes.NewReader(b.Bytes()), "m", 16)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(gt, toks) {
		t.Fatalf("tokens %v", gt)
	}
	for l := range 2 {
		for i := range 2 {
			if !slices.Equal(blockK(s, l, i, make([]float32, 4*lay.KDim)), blockK(got, l, i, make([]float32, 4*lay.KDim))) ||
				!slices.Equal(blockV(s, l, i, make([]float32, 4*lay.VDim)), blockV(got, l, i, make([]float32, 4*lay.VDim))) {
				t.Fatalf("layer %d block %d differs after the round trip", l, i)
			}
		}
	}
	f32, _ := NewPool(Layout{Layers: 2, KDim: lay.KDim, VDim: lay.VDim, Heads: 2}, 4, 8)
	if _, _, err := f32.Import(bytes.NewReader(b.Bytes()), "m", 16); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "values as "+lay.V.String()) {
		t.Errorf("f32 pool importing a %v file: %v", lay.V, err)
	}
}

// blockK and blockV read one block through Keys and Values.
func blockK(s *Seq, l, i int, scratch []float32) []float32 {
	k, _ := s.Keys(l, i, i+1, scratch)
	return k
}

func blockV(s *Seq, l, i int, scratch []float32) []float32 {
	v, _ := s.Values(l, i, i+1, scratch)
	return v
}

// TestPoolResident: a new pool's storage is resident before the first row
// is written, float32 and quantized alike, so decode steps never stop for
// page faults as their sequences reach fresh blocks (hugepage's buffers are
// resident from their allocation).
func TestPoolResident(t *testing.T) {
	if _, _, err := hugepage.InCore(make([]byte, 1)); err != nil {
		t.Skipf("mincore: %v", err)
	}
	for _, f := range []Format{F32, Int8} {
		p, err := NewPool(Layout{Layers: 2, KDim: 512, VDim: 512, Heads: 8, K: f, V: f}, 16, 256)
		if err != nil {
			t.Fatal(err)
		}
		for l := range 2 {
			var b []byte
			if f == F32 {
				b = unsafe.Slice((*byte)(unsafe.Pointer(&p.k[l][0])), 4*len(p.k[l]))
			} else {
				b = p.kq[l]
			}
			if in, pages, _ := hugepage.InCore(b); in != pages {
				t.Errorf("%v layer %d: %d of %d pages resident", f, l, in, pages)
			}
		}
	}
}

// TestPoolLargerThanMemory: a pool that cannot be resident is refused with
// one line before anything is allocated.
func TestPoolLargerThanMemory(t *testing.T) {
	avail, ok := hugepage.Available()
	if !ok {
		t.Skip("the memory available is unknown on this system")
	}
	l := Layout{Layers: 4, KDim: 1024, VDim: 1024}
	blocks := int(2*avail/l.BytesPerBlock(16)) + 1
	if _, err := NewPool(l, 16, blocks); err == nil || !strings.Contains(err.Error(), "does not fit") {
		t.Fatalf("a pool of twice the memory: %v", err)
	}
}

// TestQuantizeRowInt8Rounding: int8 codes are round-half-even of x/scale
// (math.RoundToEven, the rule the format states) on random heads, exact
// ties of every sign and size, and heads holding a NaN, an infinity or only
// zeros (codes 0, scale 0).
func TestQuantizeRowInt8Rounding(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	const d, h = 16, 4
	for iter := range 2000 {
		x := make([]float32, d*h)
		for i := range x {
			x[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(12)-6)))
		}
		switch iter % 5 {
		case 1: // ties: with amax 127 the scale is 1, so k+0.5 sits between two codes
			x[0] = 127
			for i := 1; i < d; i++ {
				x[i] = float32(rng.IntN(254)-127) + 0.5
			}
		case 2:
			x[3] = float32(math.NaN())
		case 3:
			x[d+5] = float32(math.Inf(-1))
		case 4:
			clear(x[2*d : 3*d])
		}
		q, sc := make([]byte, d*h), make([]float32, h)
		QuantizeRow(Int8, q, sc, x, d*h, h)
		for i := range h {
			xs := x[i*d : (i+1)*d]
			var amax float64
			bad := false
			for _, v := range xs {
				a := math.Abs(float64(v))
				bad = bad || a != a || math.IsInf(a, 0)
				amax = max(amax, a)
			}
			if bad || amax == 0 {
				if sc[i] != 0 || slices.ContainsFunc(q[i*d:(i+1)*d], func(c byte) bool { return c != 0 }) {
					t.Fatalf("iter %d head %d: scale %v codes %v for a head with NaN, Inf or only zeros", iter, i, sc[i], q[i*d:(i+1)*d])
				}
				continue
			}
			s := float32(amax) / 127
			if sc[i] != s {
				t.Fatalf("iter %d head %d: scale %v, want %v", iter, i, sc[i], s)
			}
			for j, v := range xs {
				want := int8(min(max(math.RoundToEven(float64(v/s)), -127), 127))
				if got := int8(q[i*d+j]); got != want {
					t.Fatalf("iter %d head %d: %v/%v codes to %d, want %d", iter, i, v, s, got, want)
				}
			}
		}
	}
}

// TestQuantizeRowTinyHead: a head of subnormals so small that max|x| over
// the format's largest code rounds to a scale of 0 reads back as zeros in
// every quantised format, and a head beside it as itself; in int8 and fp8
// (kernels.RowScale) so does a head holding a NaN or an infinity.
func TestQuantizeRowTinyHead(t *testing.T) {
	const d, h = 32, 2
	x := make([]float32, d*h)
	for i := range d {
		x[i] = math.Float32frombits(uint32(i % 3)) // 0 and the two least subnormals
	}
	for i := d; i < 2*d; i++ {
		x[i] = float32(i) - 40
	}
	checkTinyHead(t, x, d, h, []Format{Int8, FP8, Int4})
	for _, bad := range []float32{float32(math.NaN()), float32(math.Inf(-1))} {
		y := slices.Clone(x)
		for i := range d {
			y[i] = float32(i)
		}
		y[d-3] = bad
		checkTinyHead(t, y, d, h, []Format{Int8, FP8})
	}
}

// checkTinyHead stores x's row in each format and reads its first head
// back as zeros and its second as itself.
func checkTinyHead(t *testing.T, x []float32, d, h int, formats []Format) {
	t.Helper()
	for _, f := range formats {
		q, sc := make([]byte, f.codeBytes(d*h, h)), make([]float32, f.scales(d*h, h))
		QuantizeRow(f, q, sc, x, d*h, h)
		out := make([]float32, d*h)
		DequantizeRows(f, out, q, sc, 1, d*h, h)
		for i, v := range out[:d] {
			if v != 0 {
				t.Fatalf("%v: element %d of the tiny head reads back %v", f, i, v)
			}
		}
		for i, v := range out[d:] {
			if math.Abs(float64(v-x[d+i])) > 40.0/7 { // within int4's step for the head's max 40
				t.Fatalf("%v: element %d of the other head reads back %v, stored %v", f, i, v, x[d+i])
			}
		}
	}
}

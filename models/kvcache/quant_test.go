package kvcache

import (
	"bytes"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestQuantizeRow: scale = absmax/127 per head, round half to even, the
// absmax element at ±127, a zero head at scale 0.
func TestQuantizeRow(t *testing.T) {
	x := []float32{127, 2.5, 3.5, -2.5, -0.5, 0.5, 1.5, -127, 0, 0, 0, 0, 0, 0, 0, 0}
	q := make([]int8, 16)
	sc := make([]float32, 2)
	QuantizeRow(q, sc, x)
	if want := []int8{127, 2, 4, -2, 0, 0, 2, -127, 0, 0, 0, 0, 0, 0, 0, 0}; !slices.Equal(q, want) || sc[0] != 1 || sc[1] != 0 {
		t.Errorf("got %v scales %v, want %v scales [1 0]", q, sc, want)
	}
	out := make([]float32, 16)
	DequantizeRows(out, q, sc, 1, 16, 2)
	if out[0] != 127 || out[7] != -127 || out[2] != 4 || out[9] != 0 {
		t.Errorf("dequantized %v", out)
	}
}

// bound is the int8 error bound of one element: half a step, with room for
// the float32 rounding of x/scale and q·scale.
func bound(scale float32) float64 { return float64(scale)*0.5*(1+1e-5) + 1e-30 }

// TestInt8PoolRoundTrip: rows written to an int8 pool (keys and values, both
// layers, block boundaries, a partly filled last block) read back through
// Keys and Values within half a quantization step of what was written;
// copy-on-write of a shared int8 block keeps both holders' rows; reading and
// writing allocate nothing.
func TestInt8PoolRoundTrip(t *testing.T) {
	const bs, heads, hd = 16, 4, 8
	lay := Layout{Layers: 2, KDim: heads * hd, VDim: heads * hd, Heads: heads, K: Int8, V: Int8}
	p, err := NewPool(lay, bs, 8)
	if err != nil {
		t.Fatal(err)
	}
	if p.K(0, 0) != nil || p.V(0, 0) != nil {
		t.Fatal("float rows of an int8 pool")
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
	check := func(s *Seq, n int, what string) {
		t.Helper()
		kb, vb := make([]float32, bs*lay.KDim), make([]float32, bs*lay.VDim)
		for l := 0; l < lay.Layers; l++ {
			for i := 0; i*bs < n; i++ {
				parts := [2][]float32{blockK(s, l, i, kb), blockV(s, l, i, vb)}
				qs := [2]func(int, int32) ([]int8, []float32){p.KQ, p.VQ}
				for part, rows := range parts {
					_, scales := qs[part](l, s.Table()[i])
					for row := 0; row < min(bs, n-i*bs); row++ {
						pos := i*bs + row
						w := want[pos*lay.Layers+l][part]
						for j, x := range w {
							sc := scales[row*heads+j/hd]
							if d := math.Abs(float64(rows[row*lay.KDim+j] - x)); d > bound(sc) {
								t.Fatalf("%s: layer %d pos %d part %d elem %d: %g for %g (scale %g, error %g)", what, l, pos, part, j, rows[row*lay.KDim+j], x, sc, d)
							}
						}
					}
				}
			}
		}
	}
	check(s, n, "written")

	// Fork, then write the fork's partly filled last block: it is copied.
	f := s.Fork()
	last := s.Table()[len(s.Table())-1]
	if err := f.Append(1); err != nil {
		t.Fatal(err)
	}
	if f.Table()[len(f.Table())-1] == last || p.Copies() != 1 {
		t.Fatalf("no copy-on-write (copies %d)", p.Copies())
	}
	big := make([]float32, heads*hd)
	for j := range big {
		big[j] = 1000
	}
	f.WriteRow(0, n, big, big)
	check(s, n, "original after the fork's write")
	check(f, n, "fork")
	kb := make([]float32, bs*lay.KDim)
	if got := blockK(f, 0, n/bs, kb)[(n%bs)*lay.KDim]; got != 1000 {
		t.Errorf("fork's new row reads %g", got)
	}
	f.Free()

	row := want[0][0]
	if a := testing.AllocsPerRun(100, func() {
		s.WriteRow(1, 5, row, row)
		blockK(s, 1, 0, kb)
		blockV(s, 1, 2, kb)
	}); a != 0 {
		t.Errorf("%v allocs per write and read", a)
	}
}

// TestInt8Mixed: keys int8 and values float32 (and the other way round):
// the float part is exact, the int8 part within its bound.
func TestInt8Mixed(t *testing.T) {
	for _, kf := range []Format{Int8, F32} {
		vf := Int8 + F32 - kf
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
		if kf == F32 {
		} else {
			exact, approx = v, k
		}
		if !slices.Equal(exact[:8], x) {
			t.Errorf("K %v: float part %v, want %v", kf, exact[:8], x)
		}
		for j := range x {
			if d := math.Abs(float64(approx[j] - x[j])); d > bound(max(0.4, 8.5)/127) {
				t.Errorf("K %v: int8 part %v for %v", kf, approx[:8], x)
				break
			}
		}
	}
}

// TestInt8BlockBytes: an int8 part takes a byte per element plus a float32
// scale per head, so a budget buys more blocks; bad layouts are refused.
func TestInt8BlockBytes(t *testing.T) {
	f := Layout{Layers: 2, KDim: 64, VDim: 64, Heads: 8}
	q := f
	q.K, q.V = Int8, Int8
	if got, want := f.BytesPerBlock(16), int64(16*2*(64+64)*4); got != want {
		t.Errorf("f32 block: %d bytes, want %d", got, want)
	}
	if got, want := q.BytesPerBlock(16), int64(16*2*(64+8*4)*2); got != want {
		t.Errorf("int8 block: %d bytes, want %d", got, want)
	}
	if BlocksFor(1<<20, q, 16) <= BlocksFor(1<<20, f, 16) {
		t.Error("int8 buys no more blocks")
	}
	if _, err := NewPool(Layout{Layers: 1, KDim: 10, VDim: 8, Heads: 4, K: Int8}, 16, 4); err == nil {
		t.Error("4 heads in 10 key floats accepted")
	}
	for s, want := range map[string]Format{"": F32, "f32": F32, "int8": Int8} {
		if got, err := ParseFormat(s); got != want || err != nil {
			t.Errorf("ParseFormat(%q) = %v, %v", s, got, err)
		}
	}
	if _, err := ParseFormat("int4"); err == nil {
		t.Error("int4 accepted")
	}
}

// TestInt8ExportImport: format v2 holds int8 rows and their scales as the
// pool stores them, so an int8 cache round-trips bit for bit; a pool with
// other formats refuses the file.
func TestInt8ExportImport(t *testing.T) {
	lay := Layout{Layers: 2, KDim: 8, VDim: 8, Heads: 2, V: Int8}
	p, err := NewPool(lay, 4, 8)
	if err != nil {
		t.Fatal(err)
	}
	s := p.NewSeq(16)
	const n = 6
	s.Append(n)
	k, v := make([]float32, 8), make([]float32, 8)
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
			if !slices.Equal(blockK(s, l, i, make([]float32, 32)), blockK(got, l, i, make([]float32, 32))) ||
				!slices.Equal(blockV(s, l, i, make([]float32, 32)), blockV(got, l, i, make([]float32, 32))) {
				t.Fatalf("layer %d block %d differs after the round trip", l, i)
			}
		}
	}
	f32, _ := NewPool(Layout{Layers: 2, KDim: 8, VDim: 8, Heads: 2}, 4, 8)
	if _, _, err := f32.Import(bytes.NewReader(b.Bytes()), "m", 16); !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "values as int8") {
		t.Errorf("f32 pool importing an int8 file: %v", err)
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

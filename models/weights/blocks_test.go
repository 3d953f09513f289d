package weights

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"chat/models/gguf"
	"chat/models/kernels"
	"chat/models/modeltest"
)

// TestBlockProducts checks each GGUF block type against float64 sums of the
// dequantised weights times the activations its kernel sees (Q8_0 or Q8_K
// dequantised), token by token; a batch gives each token the bits of the
// token alone; Row is the dequantised row.
func TestBlockProducts(t *testing.T) {
	const rows, cols, n = 8, 512, 3
	r := rand.New(rand.NewPCG(6, 6))
	x := make([]float32, n*cols)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for _, typ := range []gguf.Type{gguf.TypeQ4_0, gguf.TypeQ5_0, gguf.TypeQ4_1, gguf.TypeQ5_1, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K,
		gguf.TypeIQ4_NL, gguf.TypeIQ4_XS, gguf.TypeQ2_K, gguf.TypeQ3_K} {
		raw := modeltest.RandomBlocks(r, typ, rows*cols)
		m, err := FromGGUF(typ, raw, rows, cols)
		if err != nil {
			t.Fatal(err)
		}
		if m.Format() != typ.String() {
			t.Fatalf("%s: format %s", typ, m.Format())
		}
		w := make([]float32, rows*cols)
		if err := gguf.Dequantize(typ, raw, w); err != nil {
			t.Fatal(err)
		}
		var s Scratch
		out := make([]float32, n*rows)
		m.Mul(out, x, n, &s)
		for tok := 0; tok < n; tok++ {
			xs := x[tok*cols : (tok+1)*cols]
			xd := make([]float32, cols)
			if typ.BlockSize() == 32 {
				var a kernels.ILAct
				a.Quantize(xs, 1, cols, kernels.IL8)
				a.Values(xd, 0)
			} else {
				q, d, sums := make([]int8, cols), make([]float32, cols/256), make([]int16, cols/16)
				kernels.QuantizeQ8_K(q, d, sums, xs)
				for i := range xd {
					xd[i] = d[i/256] * float32(q[i])
				}
			}
			one := make([]float32, rows)
			m.Mul(one, xs, 1, &s)
			for row := 0; row < rows; row++ {
				var want, mag float64
				for i := 0; i < cols; i++ {
					p := float64(w[row*cols+i]) * float64(xd[i])
					want += p
					mag += math.Abs(p)
				}
				if got := float64(out[tok*rows+row]); math.Abs(got-want) > 1e-5*mag || one[row] != out[tok*rows+row] {
					t.Errorf("%s token %d row %d: %v (alone %v), want %v", typ, tok, row, got, one[row], want)
				}
			}
		}
		row := make([]float32, cols)
		m.Row(row, 5)
		if !slices.Equal(row, w[5*cols:6*cols]) {
			t.Errorf("%s: row 5 differs", typ)
		}
	}
}

// TestKSlices: Q4_K, Q5_K, Q6_K, IQ4_XS, Q2_K and Q3_K (interleaved on VNNI hosts)
// sliced at and between row groups multiply as the rows of the whole matrix,
// bitwise, and read the same rows; the storage is the file's size (in row
// groups).
func TestKSlices(t *testing.T) {
	for _, typ := range []gguf.Type{gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ6_K, gguf.TypeIQ4_XS, gguf.TypeQ2_K, gguf.TypeQ3_K} {
		t.Run(typ.String(), func(t *testing.T) { testKSlices(t, typ) })
	}
}

func testKSlices(t *testing.T, typ gguf.Type) {
	const rows, cols, n = 53, 768, 11
	r := rand.New(rand.NewPCG(8, 8))
	x := make([]float32, n*cols)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	raw := modeltest.RandomBlocks(r, typ, rows*cols)
	m, err := FromGGUF(typ, raw, rows, cols)
	if err != nil {
		t.Fatal(err)
	}
	if b := m.Bytes(); b < int64(len(raw)) || b > int64(len(raw)/rows*(rows+15)/16*16) {
		t.Errorf("%d bytes for %d of blocks", b, len(raw))
	}
	var s Scratch
	full := make([]float32, n*rows)
	m.Mul(full, x, n, &s)
	for _, sl := range [][2]int{{0, 53}, {16, 40}, {3, 29}, {17, 53}, {32, 33}} {
		r0, r1 := sl[0], sl[1]
		p := m.Slice(r0, r1)
		out := make([]float32, n*(r1-r0))
		p.Mul(out, x, n, &s)
		a, b := make([]float32, cols), make([]float32, cols)
		for i := 0; i < r1-r0; i++ {
			for tok := 0; tok < n; tok++ {
				if out[tok*(r1-r0)+i] != full[tok*rows+r0+i] {
					t.Fatalf("slice [%d, %d) row %d token %d: %v, whole %v", r0, r1, i, tok, out[tok*(r1-r0)+i], full[tok*rows+r0+i])
				}
			}
			p.Row(a, i)
			m.Row(b, r0+i)
			if !slices.Equal(a, b) {
				t.Fatalf("slice [%d, %d) row %d differs", r0, r1, i)
			}
		}
	}
}

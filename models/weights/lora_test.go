package weights

import (
	"chat/models/testmodels"
	"math"
	"math/rand/v2"
	"testing"
)

// TestLoRA: over a base of every format, a batch gives each row the bits
// that row gives alone; the product is the base's plus each update's
// scale·B·(A·x); Row is the merged row; Slice slices B with the base; a
// product allocates nothing once the scratch has grown; updates of the
// wrong shape are refused.
func TestLoRA(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const rows, cols, rank, n = 48, 256, 4, 5
	w := randMatrix(r, rows, cols)
	gauss := func(n int) []float32 {
		v := make([]float32, n)
		for i := range v {
			v[i] = float32(r.NormFloat64() * 0.1)
		}
		return v
	}
	ups := []Update{
		{A: NewF32(gauss(rank*cols), rank, cols), B: NewF32(gauss(rows*rank), rows, rank), Scale: 2},
		{A: NewF32(gauss(rank*cols), rank, cols), B: NewF32(gauss(rows*rank), rows, rank), Scale: -0.5},
	}
	x := make([]float32, n*cols)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	for f, base := range makeable(t, w, rows, cols) {
		l, err := NewLoRA(base, ups...)
		if err != nil {
			t.Fatal(err)
		}
		var s Scratch
		out := make([]float32, n*rows)
		l.Mul(out, x, n, &s)
		one := make([]float32, rows)
		want := make([]float32, rows)
		ax := make([]float32, rank)
		bax := make([]float32, rows)
		for tk := range n {
			l.Mul(one, x[tk*cols:(tk+1)*cols], 1, &s)
			for i := range one {
				if math.Float32bits(one[i]) != math.Float32bits(out[tk*rows+i]) {
					t.Fatalf("%s: token %d row %d: batch %v, alone %v", f, tk, i, out[tk*rows+i], one[i])
				}
			}
			base.Mul(want, x[tk*cols:(tk+1)*cols], 1, &s)
			for _, u := range ups {
				u.A.Mul(ax, x[tk*cols:(tk+1)*cols], 1, &s)
				u.B.Mul(bax, ax, 1, &s)
				for i := range want {
					want[i] += u.Scale * bax[i]
				}
			}
			for i := range want {
				if d := math.Abs(float64(want[i] - one[i])); d > 1e-5 {
					t.Fatalf("%s: token %d row %d: %v, want %v", f, tk, i, one[i], want[i])
				}
			}
		}
		row := make([]float32, cols)
		l.Row(row, 7)
		merged := Dequantize(base)[7*cols : 8*cols]
		for j := range row {
			m := float64(merged[j])
			for _, u := range ups {
				for k := range rank {
					m += float64(u.Scale) * float64(u.B.Floats()[7*rank+k]) * float64(u.A.Floats()[k*cols+j])
				}
			}
			if math.Abs(m-float64(row[j])) > 1e-5 {
				t.Fatalf("%s: Row(7)[%d] = %v, merged %v", f, j, row[j], m)
			}
		}
		sl := l.Slice(8, 16)
		sub := make([]float32, 8)
		sl.Mul(sub, x[:cols], 1, &s)
		l.Mul(one, x[:cols], 1, &s)
		for i := range sub {
			if math.Float32bits(sub[i]) != math.Float32bits(one[8+i]) {
				t.Fatalf("%s: Slice row %d: %v, whole %v", f, i, sub[i], one[8+i])
			}
		}
		if a := testing.AllocsPerRun(10, func() { l.Mul(one, x[:cols], 1, &s) }); a != 0 && !testmodels.Race {
			t.Errorf("%s: %v allocations per product", f, a)
		}
	}
	if _, err := NewLoRA(NewF32(w, rows, cols), Update{A: NewF32(make([]float32, rank*8), rank, 8), B: ups[0].B}); err == nil {
		t.Error("an update of the wrong shape was taken")
	}
}

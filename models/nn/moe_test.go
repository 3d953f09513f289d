package nn

import (
	"math"
	"slices"
	"testing"

	"chat/models/kernels"
	"chat/models/weights"
)

// TestMoERouting: MoE gives each token, batched or alone, the bits of a
// plain per-token computation: softmax, top K, the weights renormalised as
// Routing says (or not), and the weighted outputs added in choice order
// (GGML) or expert order (the course).
func TestMoERouting(t *testing.T) {
	const n, dim, E = 5, 8, 6
	router := make([]float32, E*dim)
	for i := range router {
		router[i] = float32(math.Sin(float64(i)*1.7)) * 2
	}
	rw, err := weights.FromFloat("f32", router, E, dim)
	if err != nil {
		t.Fatal(err)
	}
	x := Rows{N: n, W: dim, D: make([]float32, n*dim)}
	for i := range x.D {
		x.D[i] = float32(math.Cos(float64(i) * 0.9))
	}
	// Expert e scales its input by an inexact factor, so the order of the
	// additions shows in the bits.
	scale := func(e int) float32 { return 1/3.0 + float32(e)*0.7071 }
	expert := func(p *Pass) func(e int, in Rows) Rows {
		return func(e int, in Rows) Rows {
			y := p.AllocN(in.N, in.W)
			for i, v := range in.D[:in.N*in.W] {
				y.D[i] = v * scale(e)
			}
			return y
		}
	}
	want := func(r Routing, row []float32) []float32 {
		pr := make([]float32, E)
		rw.Mul(pr, row, 1, &weights.Scratch{})
		kernels.Softmax(pr)
		idx := []int{0, 1, 2, 3, 4, 5}
		slices.SortStableFunc(idx, func(a, b int) int {
			switch {
			case pr[a] > pr[b]:
				return -1
			case pr[a] < pr[b]:
				return 1
			}
			return 0
		})
		sel := idx[:r.K]
		w := make([]float32, r.K)
		for j, e := range sel {
			w[j] = pr[e]
		}
		if r.Renorm {
			var s32 float32
			var s64 float64
			for _, v := range w {
				s32 += v
				s64 += float64(v)
			}
			if r.GGML {
				s32 = max(float32(s64), 6.103515625e-5)
			}
			for j := range w {
				w[j] /= s32
			}
		}
		order := []int{0, 1, 2, 3}[:r.K]
		if !r.GGML {
			slices.SortFunc(order, func(a, b int) int { return sel[a] - sel[b] })
		}
		out := make([]float32, dim)
		for _, j := range order {
			for c, v := range row {
				out[c] += float32(float32(v*scale(sel[j])) * w[j])
			}
		}
		return out
	}
	for _, r := range []Routing{{K: 3, Renorm: true, GGML: true}, {K: 3, Renorm: true}, {K: 2, GGML: true}, {K: 4, Renorm: true, GGML: true}} {
		p := &Pass{Tokens: make([]int, n), prefill: make([]bool, n), W: &weights.Scratch{}}
		got := p.MoE(x, rw, r, expert(p))
		for i := 0; i < n; i++ {
			alone := &Pass{Tokens: make([]int, 1), prefill: make([]bool, 1), W: &weights.Scratch{}}
			one := alone.MoE(Rows{N: 1, W: dim, D: slices.Clone(x.Row(i))}, rw, r, expert(alone))
			if w := want(r, x.Row(i)); !slices.Equal(got.Row(i), w) || !slices.Equal(one.Row(0), w) {
				t.Errorf("%+v token %d: batched %v, alone %v, want %v", r, i, got.Row(i), one.Row(0), w)
			}
		}
	}
}

package nn

import (
	"chat/models/kernels"
	"chat/models/weights"
)

// Routing is how MoE weighs the experts it picks for a token.
type Routing struct {
	K int // experts per token
	// Renorm rescales the top K probabilities to sum to 1 (the course's
	// MoE, Qwen3-MoE's norm_topk_prob, Granite MoE); OLMoE keeps them.
	Renorm bool
	// GGML rounds as llama.cpp's build_moe_ffn (src/llama-graph.cpp): the
	// top-K sum in float64 (ggml_sum_rows), rounded once and clamped below
	// at f16's smallest normal, and the weighted outputs added in the order
	// the top-K chose them, most probable first. Otherwise as the course's
	// PyTorch: a float32 sum, the outputs added in expert index order.
	GGML bool
}

// ggmlSumFloor is build_moe_ffn's clamp of the top-K sum (the smallest
// normal f16), which keeps the division finite.
const ggmlSumFloor = 6.103515625e-5

// MoE is a mixture-of-experts feed-forward: per token, probs =
// softmax(router(x)); the top r.K experts (the first index wins a tie),
// weighted by their probabilities (renormalised with r.Renorm), give
// out = Σ w·expert(x), added in r's order. Tokens are grouped per expert so
// each expert runs one batched product on gathered rows (MatVec's order, as
// ggml's mul_mat_id takes each row alone), and every token's sum is its own:
// a token gets the same bits in any batch. expert(e, in) returns expert e's
// output for the rows in.
func (p *Pass) MoE(x Rows, router weights.Linear, r Routing, expert func(e int, in Rows) Rows) Rows {
	E, k := router.Rows(), r.K
	probs := p.Mul(router, x)
	ints := p.ints(2 * x.N * k)
	route, from := ints[:x.N*k], ints[x.N*k:] // per (token, slot): the expert; per gathered row: its slot
	weight := p.AllocN(x.N, k)
	for i := 0; i < x.N; i++ {
		pr, w := probs.Row(i), weight.Row(i)
		kernels.Softmax(pr)
		sel := topK(route[i*k:i*k], pr, k)
		for j, e := range sel {
			w[j] = pr[e]
		}
		if r.Renorm {
			renorm(w, r.GGML)
		}
		if !r.GGML {
			sortSlots(sel, w)
		}
	}
	ys := p.AllocN(x.N*k, x.W) // each slot's weighted expert output
	for e := 0; e < E; e++ {
		mark := p.Mark()
		in := p.AllocN(x.N, x.W)
		cnt := 0
		for s, re := range route {
			if re == e {
				copy(in.Row(cnt), x.Row(s/k))
				from[cnt] = s
				cnt++
			}
		}
		if cnt > 0 {
			in.N = cnt
			p.gathered = true
			y := expert(e, in)
			p.gathered = false
			for c := 0; c < cnt; c++ {
				dst, wr := ys.Row(from[c]), weight.D[from[c]]
				for j, v := range y.Row(c) {
					dst[j] = v * wr
				}
			}
		}
		p.Reset(mark)
	}
	out := p.AllocN(x.N, x.W)
	for i := 0; i < x.N; i++ {
		o := out.Row(i)
		clear(o)
		for j := 0; j < k; j++ {
			for c, v := range ys.Row(i*k + j) {
				o[c] += v
			}
		}
	}
	return out
}

// renorm divides w by its sum, rounded as r.GGML says.
func renorm(w []float32, ggml bool) {
	var sum float32
	if ggml {
		var s float64
		for _, v := range w {
			s += float64(v)
		}
		sum = max(float32(s), ggmlSumFloor)
	} else {
		for _, v := range w {
			sum += v
		}
	}
	for j := range w {
		w[j] /= sum
	}
}

// sortSlots orders a token's slots by expert index (an insertion sort of
// K pairs: no allocation), so the outputs add in that order.
func sortSlots(route []int, w []float32) {
	for a := 1; a < len(route); a++ {
		for b := a; b > 0 && route[b] < route[b-1]; b-- {
			route[b], route[b-1] = route[b-1], route[b]
			w[b], w[b-1] = w[b-1], w[b]
		}
	}
}

// ints returns n ints of scratch.
func (p *Pass) ints(n int) []int {
	if cap(p.route) < n {
		p.route = make([]int, n)
	}
	return p.route[:n]
}

// topK appends the indices of the k largest values of p (first index wins a tie).
func topK(dst []int, p []float32, k int) []int {
	for len(dst) < k {
		best := -1
		for j, v := range p {
			if contains(dst, j) {
				continue
			}
			if best < 0 || v > p[best] {
				best = j
			}
		}
		dst = append(dst, best)
	}
	return dst
}

func contains(s []int, v int) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

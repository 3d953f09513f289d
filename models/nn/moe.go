package nn

import (
	"chat/models/kernels"
	"chat/models/weights"
)

// MoE is a mixture-of-experts feed-forward as the course computes it: per
// token, probs = softmax(router(x)); the top k experts (the first index wins
// a tie), their probabilities renormalised to sum to 1, weight their outputs;
// out = Σ w·expert(x) in expert index order. Tokens are grouped per expert
// so each expert runs one batched product; expert(e, in) returns its output
// for the rows in.
func (p *Pass) MoE(x Rows, router weights.Linear, k int, expert func(e int, in Rows) Rows) Rows {
	E := router.Rows()
	probs := p.Mul(router, x)
	ints := p.ints(x.N*k + x.N)
	route, from := ints[:x.N*k], ints[x.N*k:]
	weight := p.AllocN(x.N, k)
	for i := 0; i < x.N; i++ {
		pr := probs.Row(i)
		kernels.Softmax(pr)
		sel := topK(route[i*k:i*k], pr, k)
		var sum float32
		for _, e := range sel {
			sum += pr[e]
		}
		for j, e := range sel {
			weight.D[i*k+j] = pr[e] / sum
		}
	}
	out := p.AllocN(x.N, x.W)
	clear(out.D)
	for e := 0; e < E; e++ {
		mark := p.Mark()
		in := p.AllocN(x.N, x.W)
		w := p.AllocN(x.N, 1) // the routing weight of each gathered row
		cnt := 0
		for i := 0; i < x.N; i++ {
			for j := 0; j < k; j++ {
				if route[i*k+j] == e {
					copy(in.Row(cnt), x.Row(i))
					from[cnt], w.D[cnt] = i, weight.D[i*k+j]
					cnt++
				}
			}
		}
		if cnt > 0 {
			in.N = cnt
			p.gathered = true
			y := expert(e, in)
			p.gathered = false
			for r := 0; r < cnt; r++ {
				o, wr := out.Row(from[r]), w.D[r]
				for j, v := range y.Row(r) {
					o[j] += float32(v * wr)
				}
			}
		}
		p.Reset(mark)
	}
	return out
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

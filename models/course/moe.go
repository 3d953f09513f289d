package course

import "fmt"

// loadMoE takes the router, the routed experts and the optional shared expert.
func (m *Model) loadMoE(b *block, p string, get func(key, why string, shape ...int) []float32) {
	c := m.cfg
	C, E, F := c.Embed, c.Experts, c.FFN
	b.router = get(p+"router.weight", fmt.Sprintf("n_experts=%d, n_embed=%d", E, C), E, C)
	why := fmt.Sprintf("n_embed=%d, ffn_hidden=%d", C, F)
	b.experts = make([]swiglu, E)
	for e := range b.experts {
		b.experts[e] = loadSwiGLU(get, fmt.Sprintf("%sexperts.%d.", p, e), why, F, C)
	}
	if c.Shared > 0 {
		b.shared = loadSwiGLU(get, p+"shared.", fmt.Sprintf("n_embed=%d, ffn_hidden=%d, n_shared_experts=%d", C, F, c.Shared), F*c.Shared, C)
	}
}

// moe computes the MoE MLP of n normed rows s.xn into s.tmp, one token at a
// time: probs = softmax(router(x)); the top-k renormalised to sum to 1;
// out = Σ w·expert(x) in expert order, then + shared(x).
func (s *State) moe(b *block, n int) {
	c := s.m.cfg
	C, E, K := c.Embed, c.Experts, c.TopK
	var top [maxTopK]int
	for i := 0; i < n; i++ {
		x := s.xn[i*C : (i+1)*C]
		out := s.tmp[i*C : (i+1)*C]
		clear(out)
		matmul(s.probs, b.router, x, 1, E, C)
		softmax(s.probs)
		sel := topK(top[:0], s.probs, K)
		var sum float32
		for _, e := range sel {
			sum += s.probs[e]
		}
		// Experts in index order, as a loop over experts accumulates them.
		for e := 0; e < E; e++ {
			if !contains(sel, e) {
				continue
			}
			w := s.probs[e] / sum
			s.swiglu(&b.experts[e], s.eout, x, 1)
			for j, v := range s.eout {
				out[j] += float32(v * w)
			}
		}
		if b.shared.f > 0 {
			s.swiglu(&b.shared, s.eout, x, 1)
			for j, v := range s.eout {
				out[j] += v
			}
		}
	}
}

// maxTopK bounds moe_top_k for the stack buffer; larger k falls back to the heap.
const maxTopK = 64

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

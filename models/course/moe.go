package course

import "fmt"

// loadMoE takes the router, the routed experts and the optional shared expert.
func (m *Model) loadMoE(b *block, p string, get func(key, why string, shape ...int) []float32) {
	c := m.cfg
	C, E, F := c.Embed, c.Experts, c.FFN
	b.router = newLinear(get(p+"router.weight", fmt.Sprintf("n_experts=%d, n_embed=%d", E, C), E, C), C)
	why := fmt.Sprintf("n_embed=%d, ffn_hidden=%d", C, F)
	b.experts = make([]swiglu, E)
	for e := range b.experts {
		b.experts[e] = loadSwiGLU(get, fmt.Sprintf("%sexperts.%d.", p, e), why, F, C)
	}
	if c.Shared > 0 {
		b.shared = loadSwiGLU(get, p+"shared.", fmt.Sprintf("n_embed=%d, ffn_hidden=%d, n_shared_experts=%d", C, F, c.Shared), F*c.Shared, C)
	}
}

// moe computes the MoE MLP of n normed rows s.xn into s.tmp. Per token:
// probs = softmax(router(x)); the top-k, renormalised to sum to 1, weight
// their experts; out = Σ w·expert(x) in expert index order, then + shared(x).
// Tokens are grouped per expert so each expert is one batched product.
func (s *State) moe(b *block, n int) {
	c := s.m.cfg
	C, E, K := c.Embed, c.Experts, c.TopK
	s.mul(s.probs, &b.router, s.xn, n)
	for i := 0; i < n; i++ {
		p := s.probs[i*E : (i+1)*E]
		softmax(p)
		sel := topK(s.route[i*K:i*K], p, K)
		var sum float32
		for _, e := range sel {
			sum += p[e]
		}
		for k, e := range sel {
			s.routeW[i*K+k] = p[e] / sum
		}
	}
	out := s.tmp[:n*C]
	clear(out)
	for e := 0; e < E; e++ {
		cnt := 0
		for i := 0; i < n; i++ {
			for k := 0; k < K; k++ {
				if s.route[i*K+k] == e {
					copy(s.gather[cnt*C:(cnt+1)*C], s.xn[i*C:(i+1)*C])
					s.rowIdx[cnt], s.rowW[cnt] = i, s.routeW[i*K+k]
					cnt++
				}
			}
		}
		if cnt == 0 {
			continue
		}
		s.swiglu(&b.experts[e], s.eout, s.gather, cnt)
		for r := 0; r < cnt; r++ {
			o := out[s.rowIdx[r]*C : (s.rowIdx[r]+1)*C]
			w := s.rowW[r]
			for j, v := range s.eout[r*C : (r+1)*C] {
				o[j] += float32(v * w)
			}
		}
	}
	if b.shared.f > 0 {
		s.swiglu(&b.shared, s.eout, s.xn, n)
		addResidual(out, s.eout[:n*C])
	}
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

package course

import (
	"fmt"
	"math"

	"chat/models"

	"chat/models/quant"
)

// State is one sequence's KV cache plus scratch. Each layer's cache is one
// contiguous [Cap][Hkv·dk] key and [Cap][Hkv·dv] value slab. For MLA the
// cache holds the expanded keys (k_up(latent) per head followed by the shared
// rotated k_pos) and values rather than the latent: the numbers are the ones
// the course computes from its latent cache, and attention stays one loop.
type State struct {
	m    *Model
	n    int
	k, v [][]float32
	kv   models.KV   // paged cache (paged.go); nil: the contiguous k, v
	pk   [][]float32 // paged: one layer's key blocks, looked up once per batch
	pv   [][]float32 // and its value blocks
	q    *pagedQuant // paged over an int8 cache: staging and dequantization scratch

	// Scratch, sized for a full-context batch.
	x, xn, tmp []float32      // [ctx][C]
	proj       []float32      // [ctx][projW]
	att        []float32      // [ctx][H·dv]
	hid        []float32      // classic [ctx][4C]; modern [ctx][2F] (gate|up)
	act        []float32      // modern [ctx][F]
	lat, kvx   []float32      // MLA [ctx][R], [ctx][2·H·D]
	probs      []float32      // MoE router [ctx][E]
	route      []int          // MoE chosen experts [ctx][K]
	routeW     []float32      // MoE their weights [ctx][K]
	gather     []float32      // MoE rows routed to one expert [ctx][C]
	rowIdx     []int          // MoE token of each gathered row [ctx]
	rowW       []float32      // MoE weight of each gathered row [ctx]
	eout       []float32      // MoE expert output [ctx][C]
	scores     []float32      // [ctx]
	deq        *quant.Scratch // quantized products' working memory
	logits     []float32      // [rows][V]; grows past one row only for multi-row calls
}

func (m *Model) newState() *State { return m.newStateKV(nil) }

// newStateKV allocates scratch, and the contiguous cache unless kv is set.
func (m *Model) newStateKV(kv models.KV) *State {
	c := m.cfg
	T, C := c.Ctx, c.Embed
	s := &State{m: m, kv: kv}
	if kv == nil {
		s.k = make([][]float32, c.Blocks)
		s.v = make([][]float32, c.Blocks)
		for l := range s.k {
			s.k[l] = make([]float32, T*m.hkv*m.dk)
			s.v[l] = make([]float32, T*m.hkv*m.dv)
		}
	}
	s.x = make([]float32, T*C)
	s.xn = make([]float32, T*C)
	s.tmp = make([]float32, T*C)
	s.proj = make([]float32, T*m.projW)
	s.att = make([]float32, T*m.h*m.dv)
	s.scores = make([]float32, T)
	s.logits = make([]float32, c.Vocab)
	s.deq = m.scratch.New()
	if c.Arch == "classic" {
		s.hid = make([]float32, T*4*C)
		return s
	}
	f := c.FFN
	if c.Experts > 0 {
		f = c.FFN * max(1, c.Shared)
		s.probs = make([]float32, T*c.Experts)
		s.route = make([]int, T*c.TopK)
		s.routeW = make([]float32, T*c.TopK)
		s.gather = make([]float32, T*C)
		s.rowIdx = make([]int, T)
		s.rowW = make([]float32, T)
		s.eout = make([]float32, T*C)
	}
	s.hid = make([]float32, T*2*f)
	s.act = make([]float32, T*f)
	if c.Attention == "mla" {
		s.lat = make([]float32, T*c.Latent)
		s.kvx = make([]float32, T*2*c.Heads*c.HeadDim)
	}
	return s
}

// Len is the number of cached positions.
func (s *State) Len() int {
	if s.kv != nil {
		return s.kv.Len()
	}
	return s.n
}

// Cap is the context length (or less, for a shorter paged cache).
func (s *State) Cap() int {
	if s.kv != nil {
		return min(s.m.cfg.Ctx, s.kv.Cap())
	}
	return s.m.cfg.Ctx
}

// Truncate drops cached positions >= n.
func (s *State) Truncate(n int) {
	if s.kv != nil {
		s.kv.Truncate(n)
		return
	}
	if n < 0 {
		n = 0
	}
	if n < s.n {
		s.n = n
	}
}

// Forward feeds tokens at positions Len().. and returns the logits of the
// last rows tokens, [rows][V].
func (s *State) Forward(tokens []int, rows int) ([]float32, error) {
	m := s.m
	c := m.cfg
	n := len(tokens)
	if n == 0 {
		return nil, fmt.Errorf("course: Forward with no tokens")
	}
	if s.Len()+n > s.Cap() {
		return nil, fmt.Errorf("course: Forward of %d tokens at position %d exceeds the context of %d", n, s.Len(), s.Cap())
	}
	for _, t := range tokens {
		if t < 0 || t >= c.Vocab {
			return nil, fmt.Errorf("course: token id %d out of range [0, %d)", t, c.Vocab)
		}
	}
	rows = min(max(rows, 1), n)
	start := s.Len()
	if s.kv != nil {
		if err := s.kv.Append(n); err != nil {
			return nil, fmt.Errorf("course: %w", err)
		}
	}
	if c.Arch == "classic" {
		s.classic(tokens, start)
	} else {
		s.modern(tokens, start)
	}
	s.n = start + n

	// Final norm and output layer for the requested rows only.
	C, V := c.Embed, c.Vocab
	if len(s.logits) < rows*V {
		s.logits = make([]float32, rows*V)
	}
	out := s.logits[:rows*V]
	for r := 0; r < rows; r++ {
		i := n - rows + r
		xi, xn := s.x[i*C:(i+1)*C], s.xn[:C]
		if c.Arch == "classic" {
			layerNorm(xn, xi, m.normW, m.normB, 1e-5)
		} else {
			rmsNorm(xn, xi, m.normW, float32(c.NormEps))
		}
		lr := out[r*V : (r+1)*V]
		matmul(lr, m.head, xn, 1, V, C)
		if m.headB != nil {
			for j, b := range m.headB {
				lr[j] += b
			}
		}
	}
	return out, nil
}

// attention runs the shared part of every architecture's attention for layer
// l once the queries sit in s.proj (stride projW, [H][dk] each) and the new
// keys/values are in the cache: causal (optionally sliding-window) softmax
// attention per token, written to s.att.
func (s *State) attention(l, n, start int) {
	m := s.m
	if s.kv != nil {
		s.attentionPaged(l, n, start)
		return
	}
	kc, vc := s.k[l], s.v[l]
	hv := m.h * m.dv
	for i := 0; i < n; i++ {
		hi := start + i + 1
		lo := 0
		if w := m.cfg.Sliding; w > 0 && hi > w {
			lo = hi - w
		}
		attend(s.att[i*hv:(i+1)*hv], s.proj[i*m.projW:], kc, vc, s.scores, lo, hi, m.h, m.hkv, m.dk, m.dv, m.scale)
	}
}

func attnScale(d int) float32 { return float32(1 / math.Sqrt(float64(d))) }

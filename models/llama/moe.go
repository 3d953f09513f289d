package llama

import (
	"fmt"

	"chat/models/gguf"
	"chat/models/nn"
	"chat/models/weights"
)

// maxExperts is llama.cpp's LLAMA_MAX_EXPERTS: it refuses files with more.
const maxExperts = 512

// moeArchs are the architectures whose feed-forward is a mixture of
// experts; the others refuse a file with expert_count set.
var moeArchs = map[string]bool{"qwen3moe": true, "granitemoe": true, "olmoe": true}

// moeFFN is llama.cpp's build_moe_ffn with SwiGLU experts (LLM_FFN_SILU,
// softmax gating): the router ffn_gate_inp and each expert's gate, up and
// down matrices, stacked in 3-D tensors, one view of the file per expert.
// The router stays as stored (llama-quantize leaves it F32).
type moeFFN struct {
	Router weights.Linear   `gguf:"ffn_gate_inp.weight,keep" shape:"experts,dim"`
	Gate   []weights.Linear `gguf:"ffn_gate_exps.weight" shape:"experts,ffn_exp,dim"`
	Up     []weights.Linear `gguf:"ffn_up_exps.weight" shape:"experts,ffn_exp,dim"`
	Down   []weights.Linear `gguf:"ffn_down_exps.weight" shape:"experts,dim,ffn_exp"`
}

func (f *moeFFN) forward(p *nn.Pass, r nn.Routing, h nn.Rows) nn.Rows {
	return p.MoE(h, f.Router, r, func(e int, in nn.Rows) nn.Rows {
		g := p.Mul(f.Gate[e], in)
		nn.SwiGLU(g, p.Mul(f.Up[e], in))
		return p.Mul(f.Down[e], g)
	})
}

// readExperts reads expert_count and expert_used_count (both required, as
// llama.cpp's MoE architectures throw without them, the used ones at most
// the experts) and the experts' width: with ownWidth (qwen3moe)
// expert_feed_forward_length, else feed_forward_length / expert_used_count;
// without, feed_forward_length. It returns the routing: llama.cpp's
// rounding, renormalised when renorm.
func readExperts(f *gguf.File, c *Config, ownWidth, renorm bool) (nn.Routing, error) {
	key := func(k string) string { return c.Arch + "." + k }
	n, ok := f.Uint(key("expert_count"))
	if !ok || n == 0 || n > maxExperts {
		return nn.Routing{}, fmt.Errorf("llama: metadata %s missing or out of range (want 1 to %d experts)", key("expert_count"), maxExperts)
	}
	used, ok := f.Uint(key("expert_used_count"))
	if !ok || used == 0 || used > n {
		return nn.Routing{}, fmt.Errorf("llama: metadata %s missing or out of range (want 1 to %s = %d)", key("expert_used_count"), key("expert_count"), n)
	}
	c.Experts, c.ExpertsUsed, c.ExpertFFN = int(n), int(used), c.FFN
	if ownWidth {
		c.ExpertFFN = c.FFN / c.ExpertsUsed
		if f.Has(key("expert_feed_forward_length")) {
			w, ok := f.Uint(key("expert_feed_forward_length"))
			if !ok || w > 1<<24 {
				return nn.Routing{}, fmt.Errorf("llama: metadata %s is out of range", key("expert_feed_forward_length"))
			}
			if w > 0 { // 0 is llama.cpp's "absent"
				c.ExpertFFN = int(w)
			}
		}
	}
	if c.ExpertFFN == 0 {
		return nn.Routing{}, fmt.Errorf("llama: experts of width 0 (%s %d / %s %d)", key("feed_forward_length"), c.FFN, key("expert_used_count"), used)
	}
	return nn.Routing{K: c.ExpertsUsed, Renorm: renorm, GGML: true}, nil
}

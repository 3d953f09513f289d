package llama

import (
	"fmt"
	"sort"
	"strings"
)

// family is what sets one supported architecture apart from the others in
// llama.cpp's graphs (src/models/<arch>.cpp). Everything else — RMSNorm,
// grouped-query attention, SwiGLU feed-forward, optional tied output — is
// shared by one forward pass.
type family struct {
	// neox rotates the pairs (i, i+RopeDim/2) of a head instead of the
	// adjacent pairs (2i, 2i+1): llama_model_rope_type gives
	// LLAMA_ROPE_TYPE_NEOX for qwen2/qwen3 and LLAMA_ROPE_TYPE_NORM for
	// llama, whose converter permutes Q and K for the adjacent layout.
	neox bool
	// qkvBias requires attn_{q,k,v}.bias (llm_build_qwen2 adds them
	// unconditionally); other families take them when present.
	qkvBias bool
	// qkNorm requires attn_q_norm/attn_k_norm: an RMSNorm over each head of
	// Q and K before rope (llama_model_qwen3::graph).
	qkNorm bool
	// ropeFreqs reads rope_freqs.weight, Llama 3.1's per-pair frequency
	// divisors (llama_model_llama::load_arch_tensors).
	ropeFreqs bool
}

// families are the supported values of general.architecture.
var families = map[string]family{
	"llama": {ropeFreqs: true},
	"qwen2": {neox: true, qkvBias: true},
	"qwen3": {neox: true, qkNorm: true},
}

func familyOf(arch string) (family, error) {
	fam, ok := families[arch]
	if !ok {
		names := make([]string, 0, len(families))
		for n := range families {
			names = append(names, n)
		}
		sort.Strings(names)
		if arch == "" {
			return fam, fmt.Errorf("llama: the file names no general.architecture (supported: %s)", strings.Join(names, ", "))
		}
		return fam, fmt.Errorf("llama: unsupported architecture %q (supported: %s)", arch, strings.Join(names, ", "))
	}
	return fam, nil
}

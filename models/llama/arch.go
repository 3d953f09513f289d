package llama

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"chat/models/gguf"
)

// family is what sets one supported architecture apart from the others in
// llama.cpp's graphs (src/models/<arch>.cpp). Everything else — RMSNorm,
// grouped-query attention, gated feed-forward, optional tied output — is
// shared by one forward pass.
type family struct {
	// neox rotates the pairs (i, i+RopeDim/2) of a head instead of the
	// adjacent pairs (2i, 2i+1): llama_model_rope_type gives
	// LLAMA_ROPE_TYPE_NEOX for qwen2/qwen3, phi3 and the Gemmas, and
	// LLAMA_ROPE_TYPE_NORM for llama, whose converter permutes Q and K for
	// the adjacent layout.
	neox bool
	// qkvBias requires attn_{q,k,v}.bias (llm_build_qwen2 adds them
	// unconditionally); other families take them when present.
	qkvBias bool
	// qkNorm requires attn_q_norm/attn_k_norm: an RMSNorm over each head of
	// Q and K before rope (llama_model_qwen3::graph).
	qkNorm bool
	// ropeFreqs reads per-pair rope frequency divisors: rope_freqs.weight
	// (Llama 3.1), else rope_factors_long/short.weight (LongRoPE, Phi-3
	// 128k), long when the context exceeds the original one
	// (llama_model::get_rope_factors).
	ropeFreqs bool
	// qScale multiplies Q by 1/sqrt(HeadDim) before the scores, which are
	// then unscaled (phi3; the Gemmas have their own rule, readGemma).
	qScale bool
	// fusedUp reads ffn_up as [2·FFN][Dim]: the gate's rows, then the up
	// projection's (phi3's LLM_FFN_SWIGLU with LLM_FFN_SEQ).
	fusedUp bool

	// gemma is the Gemma generation (1, 2, 3), 0 for other families. All
	// scale the embeddings by sqrt(Dim), multiply Q by the attention scale
	// before the scores (then unscaled), and use a GELU-gated feed-forward
	// (ggml's geglu); the converter already stored the (1+w) RMSNorm
	// weights as 1+w. Gemma 2 and 3 add post-attention and post-FFN norms
	// and sliding-window layers; Gemma 2 soft-caps the scores and logits;
	// Gemma 3 has q/k norms (see readGemma).
	gemma int
}

// families are the supported values of general.architecture.
var families = map[string]family{
	"llama":  {ropeFreqs: true},
	"qwen2":  {neox: true, qkvBias: true},
	"qwen3":  {neox: true, qkNorm: true},
	"phi3":   {neox: true, ropeFreqs: true, qScale: true, fusedUp: true},
	"gemma":  {neox: true, gemma: 1},
	"gemma2": {neox: true, gemma: 2},
	"gemma3": {neox: true, qkNorm: true, gemma: 3},
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

// readGemma reads what the Gemma graphs add (llama_model_gemma2 and
// llama_model_gemma3::load_arch_hparams): the query scale, Gemma 2's
// soft-caps (defaults 50 and 30), and the sliding-window layers with their
// own rope base and scale.
func readGemma(f *gguf.File, c *Config, gen int) error {
	key := func(k string) string { return c.Arch + "." + k }
	// Q is scaled by 1/sqrt(head size); the 27B models (46 layers of
	// Gemma 2, 62 of Gemma 3) use 1/sqrt(Dim/Heads) instead.
	c.AttnScale = 1 / float32(math.Sqrt(float64(c.HeadDim))) // 1.0f/sqrtf(float(n))
	if (gen == 2 && c.Layers == 46) || (gen == 3 && c.Layers == 62) {
		c.AttnScale = 1 / float32(math.Sqrt(float64(c.Dim/c.Heads)))
	}
	if gen == 1 {
		return nil
	}
	float := func(k string, def float32) float32 {
		if v, ok := f.Float(key(k)); ok {
			return float32(v)
		}
		return def
	}
	uint := func(k string, def int) (int, error) {
		if !f.Has(key(k)) {
			return def, nil
		}
		v, ok := f.Uint(key(k))
		if !ok || v > 1<<24 {
			return 0, fmt.Errorf("llama: metadata %s is not a small unsigned integer (per-layer arrays are not supported)", key(k))
		}
		return int(v), nil
	}
	var err error
	switch gen {
	case 2:
		c.AttnSoftcap = float("attn_logit_softcapping", 50)
		c.FinalSoftcap = float("final_logit_softcapping", 30)
		if c.SWAWindow, err = uint("attention.sliding_window", 4096); err != nil {
			return err
		}
		if c.SWAPeriod, err = uint("attention.sliding_window_pattern", 2); err != nil {
			return err
		}
		c.RopeBaseSWA = float("rope.freq_base_swa", c.RopeBase)
		c.RopeScaleSWA = c.RopeScale
	case 3:
		c.FinalSoftcap = float("final_logit_softcapping", 0)
		if c.SWAWindow, err = uint("attention.sliding_window", 0); err != nil {
			return err
		}
		if c.SWAPeriod, err = uint("attention.sliding_window_pattern", 6); err != nil {
			return err
		}
		c.RopeBaseSWA = float("rope.freq_base_swa", 10000)
		c.RopeScaleSWA = 1
	}
	for _, v := range []float32{c.AttnSoftcap, c.FinalSoftcap, c.RopeBaseSWA} {
		if v < 0 || math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("llama: %s soft-cap or rope base %v", c.Arch, v)
		}
	}
	if c.SWAWindow > 0 && !(c.RopeBaseSWA > 0) {
		return fmt.Errorf("llama: %s sliding-window rope base %v", c.Arch, c.RopeBaseSWA)
	}
	return nil
}

// isSWA is llama_hparams::set_swa_pattern without dense_first: in each
// period of layers all but the last use the sliding window (period 0:
// all do).
func (c *Config) isSWA(layer int) bool {
	if c.SWAWindow <= 0 {
		return false
	}
	return c.SWAPeriod == 0 || layer%c.SWAPeriod < c.SWAPeriod-1
}

package llama

import (
	"fmt"
	"math"

	"chat/models"
	"chat/models/gguf"
	"chat/models/quote"
)

// MaxContext is the default window: a model trained for a longer context
// gets a cache of this many positions unless a longer one is asked for
// (engine.Options.Context, --ctx-size), as llama-cli's and ollama's
// default n_ctx of 4096.
const MaxContext = 4096

// Config is the hyper-parameters read from GGUF metadata (keys "<arch>.*",
// as llama.cpp's llama_model::load_hparams reads them, with its defaults).
type Config struct {
	Arch      string         // general.architecture
	Pooling   models.Pooling // pooling_type (embeddings)
	Dim       int            // embedding_length
	Layers    int            // block_count
	FFN       int            // feed_forward_length
	Heads     int            // attention.head_count
	KVHeads   int            // attention.head_count_kv (default Heads)
	HeadDim   int            // attention.key_length (default Dim/Heads)
	RopeDim   int            // rope.dimension_count (default HeadDim)
	RopeBase  float32        // rope.freq_base (default 10000)
	RopeScale float32        // freq_scale: 1/rope.scaling.factor, 1 without one or for scaling type "none"
	NeoX      bool           // rope rotates (i, i+RopeDim/2) pairs, not adjacent ones
	Eps       float32        // attention.layer_norm_rms_epsilon
	Context   int            // the default window: context_length, at most MaxContext
	// TrainContext is context_length, the positions the model was trained
	// for (the rope tables cover them all).
	TrainContext int
	Vocab        int // rows of token_embd

	// YaRN (rope.scaling.type "yarn"): ext_factor 1, the attention factor
	// llama_context derives from the scaling factor, and the original
	// context (rope.scaling.original_context_length, default Context).
	YarnExt     float32
	YarnAttn    float32 // attn_factor: scales cos and sin (1 without YaRN)
	YarnOrigCtx int

	// The file's per-pair rope factors (ropeFactors): rope_freqs.weight
	// (Llama 3.1), LongRoPE's rope_factors_short and _long.weight (Phi-3
	// 128k); nil when absent or for architectures without them.
	ropeFreqs, ropeShort, ropeLong []float32

	// Gemma (see readGemma): Q is multiplied by AttnScale before the
	// scores when it is set (else the scores by 1/sqrt(HeadDim)); scores
	// and logits are soft-capped, cap·tanh(x/cap), when the caps are set;
	// layers isSWA selects attend to the last SWAWindow positions with
	// their own rope base and scale.
	AttnScale                 float32
	AttnSoftcap, FinalSoftcap float32
	SWAWindow, SWAPeriod      int
	RopeBaseSWA, RopeScaleSWA float32

	// Granite (see readGranite): the embeddings are multiplied by
	// EmbedScale, each block's attention and feed-forward outputs by
	// ResidualScale before the residual add, the scores by KQScale instead
	// of 1/sqrt(HeadDim), and the logits divided by LogitScale; 0 leaves
	// out the first three, as llama.cpp does.
	EmbedScale, ResidualScale, KQScale, LogitScale float32

	// Mixture of experts (readExperts): each block's feed-forward is
	// Experts SwiGLU experts of width ExpertFFN, ExpertsUsed of them per
	// token; 0 in a dense model.
	Experts, ExpertsUsed, ExpertFFN int

	// Llama3 holds rope.scaling.* of type "llama3" when a file carries them
	// as metadata instead of rope_freqs.weight (llama.cpp itself only
	// reads the tensor); nil otherwise.
	Llama3 *Llama3Rope
}

// Llama3Rope is Llama 3.1's rope_scaling: frequencies below the original
// context's low band are divided by Factor, above the high band kept, and
// blended in between.
type Llama3Rope struct {
	Factor, LowFreqFactor, HighFreqFactor float64
	OriginalContext                       int
}

func readConfig(f *gguf.File, arch string) (Config, error) {
	c := Config{Arch: arch}
	key := func(k string) string { return arch + "." + k }
	req := func(k string, dst *int) error {
		v, ok := f.Uint(key(k))
		if !ok {
			return fmt.Errorf("llama: metadata %s missing or not an unsigned integer", key(k))
		}
		if v == 0 || v > 1<<24 {
			return fmt.Errorf("llama: metadata %s = %d is out of range", key(k), v)
		}
		*dst = int(v)
		return nil
	}
	opt := func(k string, dst *int, def int) error {
		if !f.Has(key(k)) {
			*dst = def
			return nil
		}
		return req(k, dst)
	}
	if n, ok := f.Uint(key("expert_count")); ok && n > 0 && !moeArchs[arch] {
		return c, fmt.Errorf("llama: %s with experts (%s = %d) is not supported; mixture-of-experts architectures: qwen3moe, granitemoe, olmoe", arch, key("expert_count"), n)
	}
	for _, r := range []struct {
		k   string
		dst *int
	}{
		{"embedding_length", &c.Dim}, {"block_count", &c.Layers}, {"feed_forward_length", &c.FFN},
		{"attention.head_count", &c.Heads}, {"context_length", &c.Context},
	} {
		if err := req(r.k, r.dst); err != nil {
			return c, err
		}
	}
	if err := opt("attention.head_count_kv", &c.KVHeads, c.Heads); err != nil {
		return c, err
	}
	if err := opt("attention.key_length", &c.HeadDim, c.Dim/c.Heads); err != nil {
		return c, err
	}
	var vlen int
	if err := opt("attention.value_length", &vlen, c.HeadDim); err != nil {
		return c, err
	}
	if vlen != c.HeadDim {
		return c, fmt.Errorf("llama: value_length %d differs from key_length %d (not supported)", vlen, c.HeadDim)
	}
	if err := opt("rope.dimension_count", &c.RopeDim, c.HeadDim); err != nil {
		return c, err
	}
	c.Eps = 1e-5
	if v, ok := f.Float(key("attention.layer_norm_rms_epsilon")); ok {
		c.Eps = float32(v)
	} else {
		return c, fmt.Errorf("llama: metadata %s missing", key("attention.layer_norm_rms_epsilon"))
	}
	if err := readRope(f, arch, &c); err != nil {
		return c, err
	}
	c.Pooling = poolingOf(f, key("pooling_type"))
	switch {
	case c.Heads%c.KVHeads != 0:
		return c, fmt.Errorf("llama: %d heads is not a multiple of %d KV heads", c.Heads, c.KVHeads)
	case c.HeadDim%2 != 0 || c.RopeDim%2 != 0 || c.RopeDim > c.HeadDim:
		return c, fmt.Errorf("llama: head size %d / rope dimensions %d must be even, rope within the head", c.HeadDim, c.RopeDim)
	case !(c.Eps > 0) || math.IsInf(float64(c.Eps), 0):
		return c, fmt.Errorf("llama: rms epsilon %v", c.Eps)
	case !(c.RopeBase > 0) || math.IsInf(float64(c.RopeBase), 0):
		return c, fmt.Errorf("llama: rope base %v", c.RopeBase)
	}
	return c, nil
}

// poolingOf reads llama.cpp's pooling type (0 none, 1 mean, 2 cls, 3 last,
// 4 rank): none and mean, and a file without one, pool by the mean.
func poolingOf(f *gguf.File, k string) models.Pooling {
	v, _ := f.Uint(k)
	switch v {
	case 2:
		return models.PoolCLS
	case 3:
		return models.PoolLast
	case 0, 1:
		return models.PoolMean
	}
	return models.PoolRank // a reranker's, or a type this app does not know
}

// readRope reads the rope metadata as llama.cpp does: freq_base defaults to
// 10000; the scaling type defaults to "linear"; rope.scaling.factor (or the
// older rope.scale_linear) sets freq_scale = 1/factor for every type but
// "none" (llama_context's constructor); "yarn" turns on YaRN's ramp and
// attention factor.
func readRope(f *gguf.File, arch string, c *Config) error {
	key := func(k string) string { return arch + "." + k }
	c.RopeBase = 10000
	if v, ok := f.Float(key("rope.freq_base")); ok {
		c.RopeBase = float32(v)
	}
	typ := "linear"
	if f.Has(key("rope.scaling.type")) {
		s, ok := f.String(key("rope.scaling.type"))
		if !ok {
			return fmt.Errorf("llama: metadata %s is not a string", key("rope.scaling.type"))
		}
		typ = s
	}
	factor, ok := f.Float(key("rope.scaling.factor"))
	if !ok {
		factor, _ = f.Float(key("rope.scale_linear"))
	}
	if factor < 0 || math.IsNaN(factor) || math.IsInf(factor, 0) {
		return fmt.Errorf("llama: rope scaling factor %v", factor)
	}
	c.RopeScale = 1
	if factor != 0 {
		c.RopeScale = float32(1 / factor)
	}
	c.YarnAttn = 1
	c.YarnOrigCtx = c.Context
	if v, ok := f.Uint(key("rope.scaling.original_context_length")); ok && v > 0 && v < 1<<24 {
		c.YarnOrigCtx = int(v)
	}
	switch typ {
	case "none":
		c.RopeScale = 1
	case "linear", "longrope": // LongRoPE's factors are tensors (see family.ropeFreqs)
	case "yarn":
		// llama_context: attn_factor = get_mscale(factor) / (1 + 0.1 ln
		// factor), the second term cancelling the mscale rope_yarn applies.
		c.YarnExt = 1
		fac := 1 / c.RopeScale
		m := float32(1)
		if fac > 1 {
			m = 0.1*logf(fac) + 1
		}
		c.YarnAttn = m * (1 / (1 + 0.1*logf(fac)))
	case "llama3":
		if factor == 0 {
			return fmt.Errorf("llama: rope scaling llama3 without %s", key("rope.scaling.factor"))
		}
		r := &Llama3Rope{Factor: factor, LowFreqFactor: 1, HighFreqFactor: 4, OriginalContext: 8192}
		if v, ok := f.Float(key("rope.scaling.low_freq_factor")); ok {
			r.LowFreqFactor = v
		}
		if v, ok := f.Float(key("rope.scaling.high_freq_factor")); ok {
			r.HighFreqFactor = v
		}
		if v, ok := f.Uint(key("rope.scaling.original_context_length")); ok && v > 0 && v < 1<<24 {
			r.OriginalContext = int(v)
		}
		if !(r.LowFreqFactor > 0) || !(r.HighFreqFactor > r.LowFreqFactor) {
			return fmt.Errorf("llama: llama3 rope frequency factors low %v, high %v", r.LowFreqFactor, r.HighFreqFactor)
		}
		c.Llama3 = r
		c.RopeScale = 1 // the factor goes into the per-pair divisors
	default:
		return fmt.Errorf("llama: rope scaling %s is not supported (none, linear, yarn, longrope, llama3)", quote.Quote(typ))
	}
	attn, hasAttn := f.Float(key("rope.scaling.attn_factor"))
	if hasAttn && attn > 0 {
		c.YarnAttn *= float32(attn)
	}
	// A factor the checks above pass can still overflow float32 here (1e-45
	// gives a rotation scale of +Inf, an attn_factor of Inf or yarn's
	// 1 + 0.1 ln(factor) near 0 an attention factor of Inf), and every
	// logit of the first token was NaN: "no finite logit to sample from".
	for _, v := range []float32{c.RopeScale, c.YarnAttn} {
		if !(v > 0) || math.IsInf(float64(v), 0) {
			return fmt.Errorf("llama: rope scaling factor %v (attn_factor %v) gives a rotation scale of %v and an attention factor of %v",
				factor, attn, c.RopeScale, c.YarnAttn)
		}
	}
	return nil
}

func logf(x float32) float32 { return float32(math.Log(float64(x))) }

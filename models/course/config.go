package course

import (
	"fmt"
	"math"

	"chat/models/nn"
	"chat/models/quote"
)

// config is the model configuration resolved the way the course resolves it:
// the checkpoint's cfg/config merged over generate_text.py's default_config,
// then (modern) ModernConfig.from_mapping with its defaults and derived sizes.
type config struct {
	Arch    string // "classic" or "modern"
	Vocab   int
	Ctx     int
	Embed   int
	Heads   int
	Blocks  int
	HeadDim int // n_embed / n_head

	// TrainWindow is generate_text.py's window, min(t_context_length or
	// ctx, ctx), as parseConfig says.
	TrainWindow int

	// Modern only.
	FFN       int    // SwiGLU hidden width F
	Attention string // "gqa" or "mla"
	KVHeads   int    // Hkv (GQA)
	Latent    int    // MLA latent width R
	RopeDim   int    // MLA position width Dr
	RopeTheta float64
	QKNorm    bool
	AttnGate  bool
	Sliding   int // 0 = no sliding window
	Experts   int
	TopK      int
	Shared    int
	Tied      bool
	NormEps   float64
}

// defaultConfig is config/config.py's default_config as generate_text.py
// merges it under a trainer's config (only the keys this package reads).
var defaultConfig = map[string]any{
	"vocab_size":       int64(50304),
	"context_length":   int64(512),
	"n_embed":          int64(2048),
	"n_head":           int64(16),
	"n_blocks":         int64(64),
	"t_context_length": int64(16),
}

// chatDefaults are what the course's chat loader (src/post_training/
// inference.py, behind scripts/chat.py) merges under a post-training cfg.
// It has no training window: replies may fill the context.
var chatDefaults = map[string]any{
	"vocab_size":     int64(50304),
	"context_length": int64(1024),
	"n_embed":        int64(1024),
	"n_head":         int64(16),
	"n_blocks":       int64(24),
}

// Limits that no course model comes near; they keep a corrupt config from
// making NewState allocate absurd amounts or overflow int.
const (
	maxVocab      = 1 << 22
	maxCtx        = 1 << 20
	maxEmbed      = 1 << 16
	maxBlocks     = 1 << 12
	maxHidden     = 1 << 20
	maxExperts    = 1 << 10
	maxStateBytes = 4 << 30
	maxTensors    = 1 << 20
)

// parseConfig resolves raw, read from the checkpoint's entry from: a
// post-training "cfg" the way the course's chat loader does, a trainer's
// "config" (or none, "") the way generate_text.py does.
func parseConfig(raw map[string]any, from string) (*config, error) {
	defaults := defaultConfig
	if from == "cfg" {
		defaults = chatDefaults
	}
	m := make(map[string]any, len(defaults)+len(raw))
	for k, v := range defaults {
		m[k] = v
	}
	for k, v := range raw {
		m[k] = v
	}
	c := &config{}
	var err error
	get := func(key string) int {
		if err != nil {
			return 0
		}
		var v int
		v, err = reqInt(m, key)
		return v
	}
	c.Vocab = get("vocab_size")
	c.Ctx = get("context_length")
	c.Embed = get("n_embed")
	c.Heads = get("n_head")
	c.Blocks = get("n_blocks")
	if err != nil {
		return nil, err
	}

	c.Arch = "classic"
	if a, ok := m["arch"]; ok && a != nil {
		s, ok := a.(string)
		if !ok {
			return nil, fmt.Errorf("config arch is %T %s, want a string", a, quote.Quote(fmt.Sprint(a)))
		}
		if s != "" { // the course: config.get("arch") or "classic"
			c.Arch = s
		}
	}
	if c.Arch != "classic" && c.Arch != "modern" {
		return nil, fmt.Errorf("config arch %s is unknown (want classic or modern)", quote.Quote(c.Arch))
	}

	for _, f := range []struct {
		name   string
		v, max int
	}{
		{"vocab_size", c.Vocab, maxVocab},
		{"context_length", c.Ctx, maxCtx},
		{"n_embed", c.Embed, maxEmbed},
		{"n_head", c.Heads, maxEmbed},
		{"n_blocks", c.Blocks, maxBlocks},
	} {
		if err := checkRange(f.name, f.v, 1, f.max); err != nil {
			return nil, err
		}
	}
	if c.Embed%c.Heads != 0 {
		return nil, fmt.Errorf("config n_embed=%d is not divisible by n_head=%d", c.Embed, c.Heads)
	}
	c.HeadDim = c.Embed / c.Heads

	// The window generate_text.py keeps to: t_context_length. Only a
	// checkpoint with no config gets default_config's 16 (the legacy model
	// whose sizes it also takes); a config without the key (the root
	// train.py's, which trains on context_length windows and whose
	// generate.py uses them) and a post-training cfg (chat.py) get the
	// context.
	c.TrainWindow = c.Ctx
	src := raw
	if from == "" {
		src = m
	}
	if tw, ok, err := optInt(src, "t_context_length"); err != nil {
		return nil, err
	} else if ok && tw > 0 && tw < c.Ctx && from != "cfg" {
		c.TrainWindow = tw
	}

	if c.Arch == "modern" {
		if err := c.parseModern(m); err != nil {
			return nil, err
		}
	}
	if b := c.stateBytes(); b > maxStateBytes {
		return nil, fmt.Errorf("config needs %d MiB of cache and scratch per sequence (context_length=%d); refusing more than %d MiB",
			int64(b)>>20, c.Ctx, int64(maxStateBytes)>>20)
	}
	// The model is laid out, a slot per tensor, before any is read.
	perBlock := 3*c.Heads + 10 // classic: a key, query and value per head
	if c.Arch == "modern" {
		perBlock = 12 + 3*c.Experts
	}
	if n := c.Blocks * perBlock; n > maxTensors {
		return nil, fmt.Errorf("config asks for %d tensors (n_blocks=%d); refusing more than %d", n, c.Blocks, maxTensors)
	}
	return c, nil
}

// parseModern applies ModernConfig.from_mapping: unknown keys are ignored and
// missing ones take the dataclass defaults.
func (c *config) parseModern(m map[string]any) error {
	if c.HeadDim%2 != 0 {
		return fmt.Errorf("config head_dim = n_embed/n_head = %d/%d = %d is odd; the modern model needs it even", c.Embed, c.Heads, c.HeadDim)
	}
	var err error
	optDef := func(key string, def int) int {
		if err != nil {
			return 0
		}
		v, ok, e := optInt(m, key)
		if e != nil {
			err = e
			return 0
		}
		if !ok {
			return def
		}
		return v
	}
	// ModernConfig derives these with `or` (kv_heads = n_kv_head or n_head):
	// 0, like None, means the default.
	orDef := func(key string, def int) int {
		if v := optDef(key, 0); v != 0 {
			return v
		}
		return def
	}
	c.FFN = orDef("ffn_hidden", roundUp(int(8*float64(c.Embed)/3), 64))
	c.KVHeads = orDef("n_kv_head", c.Heads)
	c.Latent = orDef("kv_latent_dim", max(16, c.Embed/4))
	c.RopeDim = orDef("rope_dim", max(2, c.HeadDim/2))
	c.Sliding = optDef("sliding_window", 0)
	c.Experts = optDef("n_experts", 0)
	c.TopK = optDef("moe_top_k", 2)
	c.Shared = optDef("n_shared_experts", 0)
	if err != nil {
		return err
	}
	if c.RopeTheta, err = optFloat(m, "rope_theta", 10000); err != nil {
		return err
	}
	if c.NormEps, err = optFloat(m, "norm_eps", 1e-6); err != nil {
		return err
	}
	if c.QKNorm, err = optBool(m, "qk_norm", true); err != nil {
		return err
	}
	if c.AttnGate, err = optBool(m, "attn_gate", false); err != nil {
		return err
	}
	if c.Tied, err = optBool(m, "tie_embeddings", true); err != nil {
		return err
	}
	c.Attention = "gqa"
	if a, ok := m["attention"]; ok && a != nil {
		s, ok := a.(string)
		if !ok {
			return fmt.Errorf("config attention is %T %s, want \"gqa\" or \"mla\"", a, quote.Quote(fmt.Sprint(a)))
		}
		c.Attention = s
	}
	if c.Attention != "gqa" && c.Attention != "mla" {
		return fmt.Errorf("config attention %s is unknown (want gqa or mla)", quote.Quote(c.Attention))
	}

	if err := checkRange("ffn_hidden", c.FFN, 1, maxHidden); err != nil {
		return err
	}
	if c.Attention == "gqa" {
		if err := checkRange("n_kv_head", c.KVHeads, 1, c.Heads); err != nil {
			return err
		}
		if c.Heads%c.KVHeads != 0 {
			return fmt.Errorf("config n_head=%d is not divisible by n_kv_head=%d", c.Heads, c.KVHeads)
		}
	} else {
		if err := checkRange("kv_latent_dim", c.Latent, 1, maxHidden); err != nil {
			return err
		}
		if err := checkRange("rope_dim", c.RopeDim, 2, maxHidden); err != nil {
			return err
		}
		if c.RopeDim%2 != 0 {
			return fmt.Errorf("config rope_dim=%d is odd; RoPE needs an even width", c.RopeDim)
		}
	}
	if _, set, _ := optInt(m, "sliding_window"); set && c.Sliding <= 0 {
		// ModernConfig: "sliding_window must be positive" (None: none).
		return fmt.Errorf("config sliding_window=%d is not positive (None means no window)", c.Sliding)
	}
	if c.Experts != 0 {
		if err := checkRange("n_experts", c.Experts, 1, maxExperts); err != nil {
			return err
		}
		if err := checkRange("moe_top_k", c.TopK, 1, c.Experts); err != nil {
			return err
		}
		if err := checkRange("n_shared_experts", c.Shared, 0, maxExperts); err != nil {
			return err
		}
		if c.FFN*max(1, c.Shared) > maxHidden {
			return fmt.Errorf("config ffn_hidden*n_shared_experts = %d is too large", c.FFN*c.Shared)
		}
	}
	if !(c.RopeTheta > 0) || math.IsInf(c.RopeTheta, 0) {
		return fmt.Errorf("config rope_theta=%v must be a positive number", c.RopeTheta)
	}
	if !(c.NormEps >= 0) || math.IsInf(c.NormEps, 0) {
		return fmt.Errorf("config norm_eps=%v must be a non-negative number", c.NormEps)
	}
	return nil
}

// attention is the attention geometry as this package lays out the cache
// (query heads, key/value heads, key and value width per head), with the
// scores scaled by 1/sqrt(key width) and the sliding window. MLA caches the
// expanded keys ([D content | Dr rotated position] per head) and values, not
// the latent.
func (c *config) attention() nn.Attention {
	a := nn.Attention{Heads: c.Heads, KVHeads: c.Heads, DK: c.HeadDim, DV: c.HeadDim, Window: c.Sliding}
	switch {
	case c.Arch == "classic":
	case c.Attention == "mla":
		a.DK += c.RopeDim
	default:
		a.KVHeads = c.KVHeads
	}
	a.Scale = float32(1 / math.Sqrt(float64(a.DK)))
	return a
}

// stateBytes estimates one State's cache plus scratch, in float64 to avoid overflow.
func (c *config) stateBytes() float64 {
	a := c.attention()
	h, hkv, dk, dv := a.Heads, a.KVHeads, a.DK, a.DV
	perPos := float64(c.Blocks) * float64(hkv*(dk+dv))
	hidden := 4 * c.Embed
	if c.Arch == "modern" {
		hidden = 2 * c.FFN * max(1, c.Shared)
	}
	perPos += float64(3*c.Embed + h*dk + hkv*(dk+dv) + h*dv + 3*hidden/2 + c.Latent + 2*c.Heads*c.HeadDim + c.RopeDim + 1)
	if c.Experts > 0 {
		perPos += float64(c.Experts + 2*c.TopK + 2*c.Embed + 2)
	}
	return 4 * (perPos*float64(c.Ctx) + float64(c.Vocab))
}

func (c *config) String() string {
	s := fmt.Sprintf("arch=%s vocab_size=%d context_length=%d n_embed=%d n_head=%d n_blocks=%d",
		c.Arch, c.Vocab, c.Ctx, c.Embed, c.Heads, c.Blocks)
	if c.Arch == "modern" {
		s += fmt.Sprintf(" attention=%s ffn_hidden=%d", c.Attention, c.FFN)
	}
	return s
}

func roundUp(x, m int) int { return (x + m - 1) / m * m }

func checkRange(name string, v, lo, hi int) error {
	if v < lo || v > hi {
		return fmt.Errorf("config %s=%d is out of range [%d, %d]", name, v, lo, hi)
	}
	return nil
}

// reqInt reads a required integer; None or a non-integer is an error.
func reqInt(m map[string]any, key string) (int, error) {
	v, ok, err := optInt(m, key)
	if err != nil {
		return 0, err
	}
	if !ok {
		return 0, fmt.Errorf("config %s is missing or None", key)
	}
	return v, nil
}

// optInt reads an optional integer; absent or None gives ok=false.
func optInt(m map[string]any, key string) (int, bool, error) {
	raw, ok := m[key]
	if !ok || raw == nil {
		return 0, false, nil
	}
	var f float64
	switch v := raw.(type) {
	case int64:
		if v > math.MaxInt32 || v < math.MinInt32 {
			return 0, false, fmt.Errorf("config %s=%d is out of range", key, v)
		}
		return int(v), true, nil
	case int:
		f = float64(v)
	case int32:
		f = float64(v)
	case float64:
		f = v
	case bool: // a Python bool is an int
		if v {
			return 1, true, nil
		}
		return 0, true, nil
	default:
		return 0, false, fmt.Errorf("config %s is %T %s, want an integer", key, raw, quote.Quote(fmt.Sprint(raw)))
	}
	if f != math.Trunc(f) || math.Abs(f) > math.MaxInt32 {
		return 0, false, fmt.Errorf("config %s=%v is not an integer in range", key, raw)
	}
	return int(f), true, nil
}

func optFloat(m map[string]any, key string, def float64) (float64, error) {
	raw, ok := m[key]
	if !ok || raw == nil {
		return def, nil
	}
	switch v := raw.(type) {
	case float64:
		return v, nil
	case int64:
		return float64(v), nil
	case int:
		return float64(v), nil
	case float32:
		return float64(v), nil
	}
	return 0, fmt.Errorf("config %s is %T %s, want a number", key, raw, quote.Quote(fmt.Sprint(raw)))
}

// optBool follows Python truthiness, which is how the course tests these flags.
func optBool(m map[string]any, key string, def bool) (bool, error) {
	raw, ok := m[key]
	if !ok {
		return def, nil
	}
	switch v := raw.(type) {
	case nil:
		return false, nil
	case bool:
		return v, nil
	case int64:
		return v != 0, nil
	case int:
		return v != 0, nil
	case float64:
		return v != 0, nil
	}
	return false, fmt.Errorf("config %s is %T %s, want a bool", key, raw, quote.Quote(fmt.Sprint(raw)))
}

package llama

import (
	"fmt"
	"math"

	"chat/models/gguf"
)

// MaxContext caps the KV cache: a model trained for a longer context gets a
// cache of this many positions.
const MaxContext = 4096

// Config is the llama hyper-parameters read from GGUF metadata (keys
// "llama.*", as llama.cpp's llama_model::load_hparams reads them).
type Config struct {
	Dim       int     // llama.embedding_length
	Layers    int     // llama.block_count
	FFN       int     // llama.feed_forward_length
	Heads     int     // llama.attention.head_count
	KVHeads   int     // llama.attention.head_count_kv (default Heads)
	HeadDim   int     // llama.attention.key_length (default Dim/Heads)
	RopeDim   int     // llama.rope.dimension_count (default HeadDim)
	RopeBase  float32 // llama.rope.freq_base (default 10000)
	RopeScale float32 // 1/llama.rope.scaling.factor for linear scaling, else 1
	Eps       float32 // llama.attention.layer_norm_rms_epsilon
	Context   int     // llama.context_length
	Vocab     int     // rows of token_embd
}

func readConfig(f *gguf.File, arch string) (Config, error) {
	var c Config
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
	if n, ok := f.Uint(key("expert_count")); ok && n > 0 {
		return c, fmt.Errorf("llama: mixture-of-experts models (%s = %d) are not supported", key("expert_count"), n)
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
	c.RopeBase = 10000
	if v, ok := f.Float(key("rope.freq_base")); ok {
		c.RopeBase = float32(v)
	}
	c.RopeScale = 1
	if typ, _ := f.String(key("rope.scaling.type")); typ == "linear" {
		if v, ok := f.Float(key("rope.scaling.factor")); ok && v > 0 {
			c.RopeScale = float32(1 / v)
		}
	} else if typ != "" && typ != "none" {
		return c, fmt.Errorf("llama: rope scaling %q is not supported", typ)
	}
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

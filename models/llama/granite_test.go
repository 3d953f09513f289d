package llama

import (
	"math"
	"strings"
	"testing"

	"chat/models/gguf"
	"chat/models/kvcache"
)

// TestGraniteScales: a granite file whose optional scales are absent and
// whose logit_scale is 1 computes llama's logits bit for bit on the same
// weights, and logit_scale 8 divides them by 8 exactly.
func TestGraniteScales(t *testing.T) {
	s := archSpec("llama", gguf.TypeF32)
	want := logitsOf(t, loadT(t, writeSpec(t, s, nil)), randSeq(12, 264))
	s.Arch = "granite"
	for _, ls := range []float32{1, 8} {
		s.LogitScale = ls
		got := logitsOf(t, loadT(t, writeSpec(t, s, nil)), randSeq(12, 264))
		for i := range want {
			if got[i] != want[i]/ls {
				t.Fatalf("logit_scale %v: logit %d is %v, llama's %v divided by it %v", ls, i, got[i], want[i], want[i]/ls)
			}
		}
	}
}

// TestGraniteHostileScales: a scale that is NaN, infinite, negative, too
// large for a float32, or of the wrong type, and a missing or zero
// logit_scale, are refused with one line naming the key; huge finite
// scales and rope turned off load and run without panicking (the logits
// may overflow; the samplers take NaN as impossible).
func TestGraniteHostileScales(t *testing.T) {
	f32 := func(k string, v float64) gguf.KV {
		return gguf.KV{Key: "granite." + k, Type: gguf.Float32, Value: float32(v)}
	}
	refused := []gguf.KV{
		f32("logit_scale", math.NaN()), f32("logit_scale", math.Inf(1)), f32("logit_scale", 0), f32("logit_scale", -8),
		f32("embedding_scale", math.NaN()), f32("embedding_scale", math.Inf(-1)), f32("embedding_scale", -12),
		f32("residual_scale", math.Inf(1)), f32("attention.scale", math.NaN()),
		{Key: "granite.residual_scale", Type: gguf.Float64, Value: 1e300},
		{Key: "granite.logit_scale", Type: gguf.String, Value: "8"},
		{Key: "granite.rope.scaling.finetuned", Type: gguf.Uint32, Value: uint32(1)},
	}
	for _, kv := range refused {
		path := writeSpec(t, archSpec("granite", gguf.TypeF32), func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
			return setKV(meta, kv), ts
		})
		_, err := Load(path)
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), kv.Key) {
			t.Errorf("%s = %v: got %v, want one line naming the key", kv.Key, kv.Value, err)
		}
	}
	missing := writeSpec(t, archSpec("granite", gguf.TypeF32), func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
		for i := range meta {
			if meta[i].Key == "granite.logit_scale" {
				return append(meta[:i], meta[i+1:]...), ts
			}
		}
		t.Fatal("no granite.logit_scale")
		return nil, nil
	})
	if _, err := Load(missing); err == nil || !strings.Contains(err.Error(), "granite.logit_scale missing") {
		t.Errorf("no logit_scale: %v", err)
	}
	runs := [][]gguf.KV{
		{f32("embedding_scale", 3e38), f32("residual_scale", 1e30)},
		{f32("attention.scale", 1e30), f32("logit_scale", 1e-30)},
		{f32("logit_scale", 3e38), f32("embedding_scale", 1e-30)},
		{{Key: "granite.rope.scaling.finetuned", Type: gguf.Bool, Value: false}},
	}
	for _, kvs := range runs {
		path := writeSpec(t, archSpec("granite", gguf.TypeF32), func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
			return setKV(meta, kvs...), ts
		})
		m := loadT(t, path)
		if _, err := kvcache.NewState(m).Forward(randSeq(6, 264), 1); err != nil {
			t.Errorf("%v: %v", kvs, err)
		}
	}
}

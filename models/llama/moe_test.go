package llama

import (
	"slices"
	"strings"
	"testing"

	"chat/models/gguf"
	"chat/models/kvcache"
)

// TestMoEHostile: expert metadata that disagrees with itself or with the
// tensors is refused with one line naming the key or tensor, before any
// expert is allocated; nothing panics.
func TestMoEHostile(t *testing.T) {
	u32 := func(k string, v int) gguf.KV { return gguf.KV{Key: k, Type: gguf.Uint32, Value: uint32(v)} }
	drop := func(meta []gguf.KV, key string) []gguf.KV {
		out := meta[:0]
		for _, kv := range meta {
			if kv.Key != key {
				out = append(out, kv)
			}
		}
		return out
	}
	cases := []struct {
		name, spec string
		edit       func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor)
		want       string
	}{
		{"used 0", "qwen3moe", func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
			return setKV(meta, u32("qwen3moe.expert_used_count", 0)), ts
		}, "qwen3moe.expert_used_count missing or out of range (want 1 to qwen3moe.expert_count = 8)"},
		{"used > count", "olmoe", func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
			return setKV(meta, u32("olmoe.expert_used_count", 5)), ts
		}, "olmoe.expert_used_count missing or out of range (want 1 to olmoe.expert_count = 4)"},
		{"used missing", "granitemoe", func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
			return drop(meta, "granitemoe.expert_used_count"), ts
		}, "granitemoe.expert_used_count missing"},
		{"count absurd", "qwen3moe", func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
			return setKV(meta, u32("qwen3moe.expert_count", 1<<30)), ts
		}, "qwen3moe.expert_count missing or out of range (want 1 to 512 experts)"},
		{"count missing", "olmoe", func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
			return drop(meta, "olmoe.expert_count"), ts
		}, "olmoe.expert_count missing"},
		{"count against the tensors", "qwen3moe", func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
			return setKV(meta, u32("qwen3moe.expert_count", 500)), ts
		}, "tensor blk.0.ffn_gate_inp.weight has shape [8 64], want [500 64] (experts=500, dim=64)"},
		{"width against the tensors", "qwen3moe", func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
			return setKV(meta, u32("qwen3moe.expert_feed_forward_length", 1<<24)), ts
		}, "tensor blk.0.ffn_gate_exps.weight has shape [8 32 64], want [8 16777216 64]"},
		{"width 0", "qwen3moe", func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
			meta = setKV(meta, u32("qwen3moe.feed_forward_length", 2))
			return drop(meta, "qwen3moe.expert_feed_forward_length"), ts
		}, "experts of width 0"},
		{"a stack as a matrix", "olmoe", func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
			w := tensorByName(ts, "blk.1.ffn_up_exps.weight")
			w.Dims = []int64{w.Dims[0], w.Dims[1] * w.Dims[2]}
			return meta, ts
		}, "tensor blk.1.ffn_up_exps.weight has shape [128 64], want [4 32 64]"},
		{"experts in a dense architecture", "qwen3", func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
			return setKV(meta, u32("qwen3.expert_count", 8)), ts
		}, "qwen3 with experts (qwen3.expert_count = 8) is not supported; mixture-of-experts architectures: qwen3moe, granitemoe, olmoe"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Load(writeSpec(t, archSpec(c.spec, gguf.TypeF32), c.edit))
			if err == nil || !strings.Contains(err.Error(), c.want) || strings.Contains(err.Error(), "\n") {
				t.Errorf("got %v, want one line with %q", err, c.want)
			}
		})
	}
}

// TestMoEQuantize: --quant q8_0 on an F32 MoE file re-encodes every
// expert one by one and keeps the F32 router, as llama-quantize does; the
// model then computes, bit for bit, what the file written so computes.
func TestMoEQuantize(t *testing.T) {
	f32 := loadT(t, writeSpec(t, archSpec("qwen3moe", gguf.TypeF32), nil))
	q, err := f32.Quantize("q8_0")
	if err != nil {
		t.Fatal(err)
	}
	m := q.(*Model).Arch().(*Qwen3MoE)
	b := &m.Blocks[1].MoE
	if b.Router.Format() != "f32" || len(b.Gate) != 8 || b.Gate[7].Format() != "q8_0" || b.Down[0].Format() != "q8_0" {
		t.Fatalf("router %s, %d gate experts, gate[7] %s, down[0] %s", b.Router.Format(), len(b.Gate), b.Gate[7].Format(), b.Down[0].Format())
	}
	// The file as Quantize makes it: the embedding stays F32.
	s := archSpec("qwen3moe", gguf.TypeQ8_0)
	s.TypeOf = func(name string) gguf.Type {
		if name == "token_embd.weight" {
			return gguf.TypeF32
		}
		return gguf.TypeQ8_0
	}
	file := loadT(t, writeSpec(t, s, nil))
	prompt := []int{1, 260, 5, 99, 263, 42}
	got, err := kvcache.NewState(q).Forward(prompt, 1)
	if err != nil {
		t.Fatal(err)
	}
	want, err := kvcache.NewState(file).Forward(prompt, 1)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, want) {
		t.Errorf("quantized logits differ from the Q8_0 file's")
	}
}

package convert

import (
	"fmt"
	"testing"

	"chat/models/gguf"
)

// TestLowBitMixes: llama-quantize's Q2_K, Q3_K_M, IQ4_NL and IQ4_XS rules
// on a 16-layer model, with and without grouped-query attention (n_gqa 4
// moves Q2_K's attn_v to Q4_K, IQ4's to Q5_K).
func TestLowBitMixes(t *testing.T) {
	file := func(kvHeads uint32) *File {
		f := &File{Arch: "llama", Meta: []gguf.KV{
			{Key: "llama.attention.head_count", Type: gguf.Uint32, Value: uint32(8)},
			{Key: "llama.attention.head_count_kv", Type: gguf.Uint32, Value: kvHeads},
		}}
		f.Tensors = append(f.Tensors, Tensor{Name: "token_embd.weight", Shape: []int{32, 256}})
		for i := 0; i < 16; i++ {
			for _, r := range []string{"attn_q", "attn_v", "attn_output", "ffn_down", "ffn_up"} {
				f.Tensors = append(f.Tensors, Tensor{Name: fmt.Sprintf("blk.%d.%s.weight", i, r), Shape: []int{256, 256}})
			}
		}
		return f
	}
	type want struct{ embd, q, v0, v2, out, down0, down1 gguf.Type }
	for _, c := range []struct {
		mix     string
		kvHeads uint32
		want    want
	}{
		{"q2_k", 8, want{gguf.TypeQ6_K, gguf.TypeQ2_K, gguf.TypeQ3_K, gguf.TypeQ3_K, gguf.TypeQ3_K, gguf.TypeQ3_K, gguf.TypeQ3_K}},
		{"q2_k", 2, want{gguf.TypeQ6_K, gguf.TypeQ2_K, gguf.TypeQ4_K, gguf.TypeQ4_K, gguf.TypeQ3_K, gguf.TypeQ3_K, gguf.TypeQ3_K}},
		{"q3_k", 8, want{gguf.TypeQ6_K, gguf.TypeQ3_K, gguf.TypeQ5_K, gguf.TypeQ4_K, gguf.TypeQ4_K, gguf.TypeQ5_K, gguf.TypeQ4_K}},
		{"iq4_nl", 8, want{gguf.TypeQ6_K, gguf.TypeIQ4_NL, gguf.TypeIQ4_NL, gguf.TypeIQ4_NL, gguf.TypeIQ4_NL, gguf.TypeQ5_K, gguf.TypeQ5_K}},
		{"iq4_xs", 2, want{gguf.TypeQ6_K, gguf.TypeIQ4_XS, gguf.TypeQ5_K, gguf.TypeQ5_K, gguf.TypeIQ4_XS, gguf.TypeQ5_K, gguf.TypeQ5_K}},
	} {
		mix, err := ParseMix(c.mix)
		if err != nil {
			t.Fatal(err)
		}
		f := file(c.kvHeads)
		if err := SetTypes(f, mix); err != nil {
			t.Fatal(err)
		}
		types := map[string]gguf.Type{}
		for _, tn := range f.Tensors {
			types[tn.Name] = tn.Type
		}
		got := want{types["token_embd.weight"], types["blk.5.attn_q.weight"], types["blk.0.attn_v.weight"],
			types["blk.2.attn_v.weight"], types["blk.7.attn_output.weight"], types["blk.0.ffn_down.weight"], types["blk.1.ffn_down.weight"]}
		if got != c.want {
			t.Errorf("%s kv heads %d: %+v, want %+v", c.mix, c.kvHeads, got, c.want)
		}
	}
}

package llama

import (
	"strings"
	"testing"

	"chat/models/gguf"
)

// TestOLMo2PostNorms: with OLMo-2's norms of the whole Q and K rows and of
// each sublayer's output, scaling attn_q, attn_k, attn_output and ffn_down
// leaves the logits unchanged (but for the norms' epsilon), which it would
// not with Llama's pre-norms.
func TestOLMo2PostNorms(t *testing.T) {
	s := archSpec("olmo2", gguf.TypeF32)
	seq := randSeq(20, 264)
	want := logitsOf(t, loadT(t, writeSpec(t, s, nil)), seq)
	scaled := writeSpec(t, s, func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
		for i := range ts {
			for _, n := range []string{"attn_q.weight", "attn_k.weight", "attn_output.weight", "ffn_down.weight"} {
				if strings.HasSuffix(ts[i].Name, n) {
					for j := range ts[i].Data {
						ts[i].Data[j] *= 4
					}
				}
			}
		}
		return meta, ts
	})
	if d := maxDiff(logitsOf(t, loadT(t, scaled), seq), want); d > 1e-4 {
		t.Errorf("scaling the normed products changes the logits by %g", d)
	}
}

// TestOLMo2Refuses: OLMo 3's sliding windows and a missing output matrix
// (llama.cpp's olmo2 requires its own) are refused with one line.
func TestOLMo2Refuses(t *testing.T) {
	for _, c := range []struct {
		edit func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor)
		want string
	}{
		{func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
			return setKV(meta, gguf.KV{Key: "olmo2.attention.sliding_window", Type: gguf.Uint32, Value: uint32(8)}), ts
		}, "olmo2.attention.sliding_window = 8: sliding-window OLMo models are not supported"},
		{func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
			var out []gguf.WriteTensor
			for _, w := range ts {
				if w.Name != "output.weight" {
					out = append(out, w)
				}
			}
			return meta, out
		}, "tensor output.weight missing"},
	} {
		_, err := Load(writeSpec(t, archSpec("olmo2", gguf.TypeF32), c.edit))
		if err == nil || strings.Contains(err.Error(), "\n") || !strings.Contains(err.Error(), c.want) {
			t.Errorf("got %v, want one line with %q", err, c.want)
		}
	}
}

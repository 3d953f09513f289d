package llama

import (
	"slices"
	"testing"

	"chat/models/gguf"
)

// TestSmolLM3NoPE: on the same weights, smollm3 computes llama's logits bit
// for bit while every layer is roped (3 layers), and others once layer 3
// goes without rope (4 layers).
func TestSmolLM3NoPE(t *testing.T) {
	seq := randSeq(12, 264)
	for _, layers := range []int{3, 4} {
		s := archSpec("llama", gguf.TypeF32)
		s.Layers = layers
		want := logitsOf(t, loadT(t, writeSpec(t, s, nil)), seq)
		s.Arch = "smollm3"
		got := logitsOf(t, loadT(t, writeSpec(t, s, nil)), seq)
		if same := slices.Equal(got, want); same != (layers == 3) {
			t.Errorf("%d layers: logits equal to llama's: %v", layers, same)
		}
	}
}

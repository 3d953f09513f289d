package llama

import (
	"path/filepath"
	"slices"
	"testing"

	"chat/models/gguf"
	"chat/models/gguf/gguftest"
	"chat/models/testmodels"
)

// TestSplitModel: a model split by gguf-split loads from any part and
// gives the whole file's logits bitwise (stories260K, and a Q8_0 qwen3
// whose fused projections take their rows from different parts).
func TestSplitModel(t *testing.T) {
	for _, path := range []string{
		testmodels.Path(t, "stories260K/stories260K.gguf"),
		writeCase(t, "qwen3", gguf.TypeQ8_0, nil),
	} {
		whole := loadT(t, path)
		seq := randSeq(12, whole.Info().VocabSize)
		want := logitsOf(t, whole, seq)
		parts := gguftest.Split(t, path, t.TempDir(), 3)
		for _, p := range []string{parts[0], parts[2]} {
			m := loadT(t, p)
			if m.Info().Name != whole.Info().Name || m.Info().VocabSize != whole.Info().VocabSize {
				t.Errorf("%s: %+v; want %+v", filepath.Base(p), m.Info(), whole.Info())
			}
			if got := logitsOf(t, m, seq); !slices.Equal(got, want) {
				t.Errorf("%s: logits differ from the whole file's by up to %g", filepath.Base(p), maxDiff(got, want))
			}
		}
	}
}

// TestSplitLlamaCpp (CHAT_LLAMACPP=1): llama.cpp loads the parts
// splitGGUF writes and gives the whole file's greedy ids, so the parts are
// gguf-split's format and not only this loader's.
func TestSplitLlamaCpp(t *testing.T) {
	testmodels.NeedLlamaCpp(t)
	path := testmodels.Path(t, "stories260K/stories260K.gguf")
	parts := gguftest.Split(t, path, t.TempDir(), 3)
	prompts := [][]int{{1, 400, 300, 13}}
	whole := testmodels.LlamaCpp(t, testmodels.LlamaCppRequest{Model: path, Prompts: prompts, NGen: 24})
	split := testmodels.LlamaCpp(t, testmodels.LlamaCppRequest{Model: parts[0], Prompts: prompts, NGen: 24})
	if len(whole.Greedy) != 1 || !slices.Equal(split.Greedy[0], whole.Greedy[0]) {
		t.Errorf("llama.cpp on the parts: %v; on the whole file %v", split.Greedy, whole.Greedy)
	}
}

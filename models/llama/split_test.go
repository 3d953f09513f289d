package llama

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"chat/models/gguf"
	"chat/models/testmodels"
)

// splitGGUF writes the GGUF file at path as llama.cpp's gguf-split does, into
// parts files in dir (every metadata key in the first; split.no,
// split.count and split.tensors.count in each; the tensors in order, about
// as many in each part), and returns the parts' paths.
func splitGGUF(t testing.TB, path, dir string, parts int) []string {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	name := filepath.Join(dir, strings.TrimSuffix(filepath.Base(path), ".gguf"))
	var paths []string
	per := (len(f.Tensors) + parts - 1) / parts
	for i := range parts {
		meta := []gguf.KV{}
		if i == 0 {
			meta = append(meta, f.KV...)
		}
		meta = append(meta,
			gguf.KV{Key: "split.no", Type: gguf.Uint16, Value: uint16(i)},
			gguf.KV{Key: "split.count", Type: gguf.Uint16, Value: uint16(parts)},
			gguf.KV{Key: "split.tensors.count", Type: gguf.Int32, Value: int32(len(f.Tensors))})
		var ts []gguf.WriteTensor
		for _, ti := range f.Tensors[min(i*per, len(f.Tensors)):min((i+1)*per, len(f.Tensors))] {
			raw, err := f.TensorData(&ti)
			if err != nil {
				t.Fatal(err)
			}
			ts = append(ts, gguf.WriteTensor{Name: ti.Name, Dims: ti.Dims, Type: ti.Type, Raw: raw})
		}
		p := fmt.Sprintf("%s-%05d-of-%05d.gguf", name, i+1, parts)
		out, err := os.Create(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := gguf.Write(out, meta, ts); err != nil {
			t.Fatal(err)
		}
		if err := out.Close(); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	return paths
}

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
		parts := splitGGUF(t, path, t.TempDir(), 3)
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
	parts := splitGGUF(t, path, t.TempDir(), 3)
	prompts := [][]int{{1, 400, 300, 13}}
	whole := testmodels.LlamaCpp(t, testmodels.LlamaCppRequest{Model: path, Prompts: prompts, NGen: 24})
	split := testmodels.LlamaCpp(t, testmodels.LlamaCppRequest{Model: parts[0], Prompts: prompts, NGen: 24})
	if len(whole.Greedy) != 1 || !slices.Equal(split.Greedy[0], whole.Greedy[0]) {
		t.Errorf("llama.cpp on the parts: %v; on the whole file %v", split.Greedy, whole.Greedy)
	}
}

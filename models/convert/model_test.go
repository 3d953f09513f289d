package convert

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"chat/models"
	"chat/models/gguf"
	"chat/models/kvcache"
	"chat/models/llama"
	"chat/models/llama/randmodel"
	"chat/models/nn"
	"chat/models/weights"
)

// TestFromModelUnties: a GGUF model whose output layer is token_embd (no
// output.weight), with that layer alone changed (as prune and the
// quantizers change it), is written with an output.weight of its own, and
// the file read back gives the changed model's logits bit for bit.
func TestFromModelUnties(t *testing.T) {
	dir := t.TempDir()
	toks := []string{"<unk>", "<s>", "</s>", "a", "b", "c", "d", "e", "▁"}
	var vb bytes.Buffer
	if err := gguf.Write(&vb, []gguf.KV{
		{Key: "tokenizer.ggml.model", Type: gguf.String, Value: "llama"},
		{Key: "tokenizer.ggml.tokens", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.String, Data: toks}},
		{Key: "tokenizer.ggml.scores", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.Float32, Data: make([]float32, len(toks))}},
		{Key: "tokenizer.ggml.token_type", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.Int32, Data: []int32{2, 3, 3, 1, 1, 1, 1, 1, 1}}},
	}, nil); err != nil {
		t.Fatal(err)
	}
	vocab, err := gguf.Parse(vb.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	spec := randmodel.Spec{Name: "tied", Arch: "llama", Dim: 16, Layers: 1, FFN: 32, Heads: 2, KVHeads: 2,
		Context: 32, Eps: 1e-5, Tied: true, Type: gguf.TypeF32, Seed: 5, Std: 0.5}
	var mb bytes.Buffer
	if err := randmodel.Write(&mb, spec, vocab); err != nil {
		t.Fatal(err)
	}
	// load writes a file's bytes and loads them.
	load := func(name string, b []byte) *llama.Model {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, b, 0o644); err != nil {
			t.Fatal(err)
		}
		m, err := llama.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { m.Close() })
		return m
	}
	base := load("tied.gguf", mb.Bytes())
	// Halve every matrix ConvertArch hands over: the tied output among them,
	// while token_embd (kept) stays.
	arch, err := nn.ConvertArch(base.Arch(), func(l weights.Linear) (weights.Linear, error) {
		w := weights.Dequantize(l)
		for i := range w {
			w[i] /= 2
		}
		return weights.NewF32(w, l.Rows(), l.Cols()), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	changed := base.WithArch(arch)
	f, err := FromModel(changed, base, "+half")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(f.Tensors, func(t Tensor) bool { return t.Name == "output.weight" }) {
		t.Fatal("no output.weight written")
	}
	var out bytes.Buffer
	if err := Write(&out, f, StoredMix(f), nil); err != nil {
		t.Fatal(err)
	}
	back := load("half.gguf", out.Bytes())
	logits := func(m models.Model) []float32 {
		ids := []int{1, 3, 4, 5, 6, 7}
		l, err := kvcache.NewState(m).Forward(ids, len(ids))
		if err != nil {
			t.Fatal(err)
		}
		return l
	}
	want, got, orig := logits(changed), logits(back), logits(base)
	if !slices.Equal(got, want) || slices.Equal(got, orig) {
		t.Fatalf("logits read back differ from the changed model's (or equal the original's)\n got %v\nwant %v", got[:8], want[:8])
	}
}

// Write tells Release the source bytes of each tensor a chunk at a time once
// written, the re-encoded and the copied ones.
func TestWriteReleasesSource(t *testing.T) {
	raw := func(n int) []byte {
		b, err := gguf.Quantize(gguf.TypeF32, make([]float32, n))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	var released []int
	f := &File{Arch: "llama", Tensors: []Tensor{
		{Name: "a.weight", Shape: []int{2 * chunk / 1024, 1024}, Raw: raw(2 * chunk), Src: gguf.TypeF32, Type: gguf.TypeQ8_0},
		{Name: "b.weight", Shape: []int{32}, Raw: raw(32), Src: gguf.TypeF32, Type: gguf.TypeF32},
	}}
	f.Release = func(b []byte) { released = append(released, len(b)) }
	var out bytes.Buffer
	if err := Write(&out, f, StoredMix(f), nil); err != nil {
		t.Fatal(err)
	}
	if want := []int{4 * chunk, 4 * chunk, 4 * 32}; !slices.Equal(released, want) {
		t.Errorf("released %v bytes, want %v", released, want)
	}
}

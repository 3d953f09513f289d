package lora

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"chat/models/gguf"
	"chat/models/llama"
	"chat/models/llama/randmodel"
	"chat/models/weights"
)

// FuzzLoad feeds arbitrary adapter files to both loaders: config and
// tensors as a PEFT folder's adapter_config.json and
// adapter_model.safetensors, and tensors alone as a GGUF adapter. Each
// must load or give one line, never panic or hang, and a loaded adapter's
// pairs must chain; one that loads is applied to a tiny llama model (dim
// 8, two heads), which fits it or says why in one line. The seeds are
// two-pair adapters in both formats (a few hundred bytes), so each input
// is cheap.
func FuzzLoad(f *testing.F) {
	m := tinyLlama(f)
	a := &Adapter{Pairs: []Pair{
		{Target: "blk.0.attn_q.weight", A: weights.NewF32(make([]float32, 8), 2, 4), B: weights.NewF32([]float32{1, 2, 3, 4, 5, 6, 7, 8}, 4, 2)},
		{Target: "blk.0.ffn_up.weight", A: weights.NewF32(make([]float32, 4), 1, 4), B: weights.NewF32([]float32{1, -1}, 2, 1)},
	}}
	seed := f.TempDir()
	if err := WritePEFT(seed, a, 2); err != nil {
		f.Fatal(err)
	}
	config, _ := os.ReadFile(filepath.Join(seed, "adapter_config.json"))
	tensors, _ := os.ReadFile(filepath.Join(seed, "adapter_model.safetensors"))
	var g bytes.Buffer
	if err := WriteGGUF(&g, a, "llama", 2); err != nil {
		f.Fatal(err)
	}
	f.Add(config, tensors)
	f.Add([]byte(`{"r": 2, "lora_alpha": 1e300, "alpha_pattern": {"q_proj": -1}}`), g.Bytes())
	// An update of the model's Q (rows paired by heads for a PEFT adapter)
	// of 8 rows, and one of 6 made for another model, which panicked.
	for _, rows := range []int{8, 6} {
		b := weights.NewF32(make([]float32, 2*rows), rows, 2)
		ad := &Adapter{Pairs: []Pair{{Target: "model.layers.0.self_attn.q_proj.weight", A: weights.NewF32(make([]float32, 16), 2, 8), B: b}}}
		dir := f.TempDir()
		if err := WritePEFT(dir, ad, 2); err != nil {
			f.Fatal(err)
		}
		config, _ := os.ReadFile(filepath.Join(dir, "adapter_config.json"))
		tensors, _ := os.ReadFile(filepath.Join(dir, "adapter_model.safetensors"))
		f.Add(config, tensors)
	}
	// One folder for every input of a worker (a process, which runs its
	// inputs one at a time), its two files written again each time and the
	// GGUF adapter a link to the tensors: a folder of its own for each
	// input, made and removed, and a third file made a run four times as
	// slow (139 inputs a second; the writes are most of an input's time).
	dir := f.TempDir()
	peft := filepath.Join(dir, "peft")
	file := filepath.Join(dir, "adapter.gguf")
	if err := os.Mkdir(peft, 0o755); err != nil {
		f.Fatal(err)
	}
	if err := os.Symlink(filepath.Join(peft, "adapter_model.safetensors"), file); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, config, tensors []byte) {
		for name, b := range map[string][]byte{"adapter_config.json": config, "adapter_model.safetensors": tensors} {
			if err := os.WriteFile(filepath.Join(peft, name), b, 0o644); err != nil {
				t.Fatal(err)
			}
		}
		for _, path := range []string{peft, file} {
			ad, err := Load(path)
			if err != nil {
				if strings.Contains(err.Error(), "\n") || len(err.Error()) > 1000 {
					t.Fatalf("%s: error of %d bytes, not one line: %.200q", path, len(err.Error()), err)
				}
				continue
			}
			for _, p := range ad.Pairs {
				if p.Rank() < 1 || p.B.Cols() != p.Rank() || p.A.Cols() < 1 || p.B.Rows() < 1 {
					t.Fatalf("%s: %s: A [%d][%d], B [%d][%d]", path, p.Target, p.A.Rows(), p.A.Cols(), p.B.Rows(), p.B.Cols())
				}
			}
			if _, err := Apply(m, []*Adapter{ad}); err != nil && (strings.Contains(err.Error(), "\n") || len(err.Error()) > 1000) {
				t.Fatalf("%s: applied: error of %d bytes, not one line: %.200q", path, len(err.Error()), err)
			}
		}
	})
}

// tinyLlama is a random llama model of dim 8 (two heads of 4, rope on
// adjacent pairs, so a PEFT adapter's Q and K rows are reordered), one
// layer and a vocabulary of four tokens.
func tinyLlama(tb testing.TB) *llama.Model {
	toks := []string{"<unk>", "<s>", "a", "b"}
	spec := randmodel.Spec{Name: "tiny", Arch: "llama", Dim: 8, Layers: 1, FFN: 16, Heads: 2, KVHeads: 2, Context: 16,
		Eps: 1e-5, Type: gguf.TypeF32, Seed: 1, Std: 0.5, Tokens: []gguf.KV{
			{Key: "tokenizer.ggml.model", Type: gguf.String, Value: "llama"},
			{Key: "tokenizer.ggml.tokens", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.String, Data: toks}},
			{Key: "tokenizer.ggml.scores", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.Float32, Data: make([]float32, len(toks))}},
			{Key: "tokenizer.ggml.token_type", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.Int32, Data: []int32{2, 3, 1, 1}}},
		}}
	var b bytes.Buffer
	if err := randmodel.Write(&b, spec, nil); err != nil {
		tb.Fatal(err)
	}
	path := filepath.Join(tb.TempDir(), "tiny.gguf")
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		tb.Fatal(err)
	}
	m, err := llama.Load(path)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { m.Close() })
	return m
}

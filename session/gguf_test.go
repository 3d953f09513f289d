package session

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"chat/engine/sampler"
	"chat/models/gguf"
	"chat/models/llama/randmodel"
	"chat/models/load"
	"chat/models/testmodels"
	"chat/session/chattmpl"
)

// ggufChat writes a small random llama model carrying vocab's tokenizer
// (and chat template, if it has one) and opens a greedy session on it.
func ggufChat(t *testing.T, vocab, mode string) (*Session, *gguf.File) {
	t.Helper()
	vocabPath := testmodels.Path(t, "vocab/"+vocab)
	var spec randmodel.Spec
	for _, s := range randmodel.Specs() {
		if s.Arch == "llama" && s.Type == gguf.TypeF32 {
			spec = s
			break
		}
	}
	spec.Name, spec.Vocab = "chat-"+strings.TrimSuffix(vocab, ".gguf"), vocab
	path, _, err := randmodel.WriteFile(t.TempDir(), spec, vocabPath)
	if err != nil {
		t.Fatal(err)
	}
	m, err := load.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(m, Options{Settings: testSettings(mode, 8, sampler.Params{Greedy: true})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return s, f
}

// A GGUF file that carries a chat template opens in chat mode, and a turn's
// prompt is exactly what the template renders: the session hands the
// conversation to chattmpl and stops on the template's end of turn.
func TestGGUFChatTemplate(t *testing.T) {
	s, f := ggufChat(t, "ggml-vocab-phi-3.gguf", "")
	if s.Info().Mode != "chat" {
		t.Fatalf("a file with tokenizer.chat_template opened in %q mode", s.Info().Mode)
	}
	if err := s.Send("Tell me a story."); err != nil {
		t.Fatal(err)
	}
	s.Wait()
	tmpl := chattmpl.FromGGUF(f, s.model.Tokenizer(), "")
	want := tmpl.Render([]chattmpl.Message{{Role: "user", Content: "Tell me a story."}}, true)
	if !slices.Equal(s.LastPrompt(), want) {
		t.Errorf("prompt %v, template renders %v", s.LastPrompt(), want)
	}
	text := tmpl.Text([]chattmpl.Message{{Role: "user", Content: "Tell me a story."}}, true)
	if !strings.Contains(text, "<|user|>") || !strings.HasSuffix(text, "<|assistant|>\n") {
		t.Errorf("phi-3 template text %q", text)
	}
	if end := 32007; !slices.Contains(s.tmpl.Stops(), end) { // <|end|>
		t.Errorf("stops %v lack <|end|>", s.tmpl.Stops())
	}
	// /template spells the special tokens out: the decoded text, which
	// leaves control tokens out as llama.cpp's detokenizer does, showed
	// "system ... SYSTEMuser" with no turn markers.
	_, out, err := s.Command("/template")
	if err != nil || !strings.Contains(out, "<|user|>") || !strings.Contains(out, "USER 1<|end|>") || !strings.Contains(out, `"<|end|>" (32007)`) {
		t.Errorf("/template: %v\n%s", err, out)
	}
}

// A file without a template opens in raw mode; forced into chat mode it gets
// the built-in format its special tokens point to (Llama-3 here).
func TestGGUFBuiltinTemplate(t *testing.T) {
	raw, _ := ggufChat(t, "ggml-vocab-llama-bpe.gguf", "")
	if raw.Info().Mode != "raw" {
		t.Fatalf("a file without a template opened in %q mode", raw.Info().Mode)
	}
	s, _ := ggufChat(t, "ggml-vocab-llama-bpe.gguf", "chat")
	if s.tmpl.Name() != "llama3" {
		t.Errorf("built-in template %q, want llama3", s.tmpl.Name())
	}
	if err := s.Send("Hi"); err != nil {
		t.Fatal(err)
	}
	s.Wait()
	p := s.LastPrompt()
	// <|begin_of_text|> <|start_header_id|> user <|end_header_id|> ...
	if len(p) < 3 || p[0] != 128000 || p[1] != 128006 || !slices.Contains(p, 128007) {
		t.Errorf("prompt %v does not start with the Llama-3 header tokens", p)
	}
	if !slices.Contains(s.tmpl.Stops(), 128009) { // <|eot_id|>
		t.Errorf("stops %v lack <|eot_id|>", s.tmpl.Stops())
	}
}

// A chat template refused before parsing falls back to the built-in format
// of its family, and a notice at start names the refusal.
func TestRefusedTemplateNotice(t *testing.T) {
	toks := []string{"<unk>", "<s>", "</s>", "▁a", "▁b"}
	var vb bytes.Buffer
	err := gguf.Write(&vb, []gguf.KV{
		{Key: "tokenizer.ggml.model", Type: gguf.String, Value: "llama"},
		{Key: "tokenizer.ggml.tokens", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.String, Data: toks}},
		{Key: "tokenizer.ggml.scores", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.Float32, Data: make([]float32, len(toks))}},
		{Key: "tokenizer.ggml.token_type", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.Int32, Data: []int32{2, 3, 3, 1, 1}}},
		{Key: "tokenizer.chat_template", Type: gguf.String, Value: "{% extends 'x' %}"},
	}, nil)
	vocab, perr := gguf.Parse(vb.Bytes())
	var mb bytes.Buffer
	spec := randmodel.Spec{Name: "refused", Arch: "llama", Dim: 16, Layers: 1, FFN: 32, Heads: 2, KVHeads: 2, Context: 64, Eps: 1e-5, Tied: true, Type: gguf.TypeF32, Seed: 1, Std: 0.5}
	if err := errors.Join(err, perr, randmodel.Write(&mb, spec, vocab)); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "refused.gguf")
	os.WriteFile(path, mb.Bytes(), 0o644)
	m, err := load.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(m, Options{Settings: testSettings("chat", 4, sampler.Params{Greedy: true})})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if n := strings.Join(s.Poll().Notices, "\n"); !strings.Contains(n, "chat template failed") || !strings.Contains(n, "extends") {
		t.Errorf("notices at start: %q", n)
	}
}

package gpt2bpe

import (
	"os"
	"testing"

	"chat/models/gguf"
	"chat/models/testmodels"
)

// BenchmarkEncode tokenizes 30 KB of TinyStories text with the Llama-3
// vocabulary, and with DeepSeek's (2398 user-defined tokens to split out).
func BenchmarkEncode(b *testing.B) {
	for _, name := range []string{"llama-bpe", "deepseek-llm"} {
		b.Run(name, func(b *testing.B) { benchEncode(b, name) })
	}
}

func benchEncode(b *testing.B, name string) {
	f, err := gguf.Open(testmodels.Path(b, "vocab/ggml-vocab-"+name+".gguf"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	tok, err := FromGGUF(f)
	if err != nil {
		b.Fatal(err)
	}
	raw, err := os.ReadFile(testmodels.Path(b, "text/TinyStories-valid-head.txt"))
	if err != nil {
		b.Fatal(err)
	}
	text := string(raw)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for range b.N {
		tok.Encode(text)
	}
}

// BenchmarkLongWord merges one 4000-letter word (no cache can help).
func BenchmarkLongWord(b *testing.B) {
	f, err := gguf.Open(testmodels.Path(b, "vocab/ggml-vocab-gpt-2.gguf"))
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	tok, err := FromGGUF(f)
	if err != nil {
		b.Fatal(err)
	}
	w := make([]byte, 4000)
	for i := range w {
		w[i] = "abcdefghij"[i*7%10]
	}
	text := string(w)
	b.SetBytes(int64(len(text)))
	b.ResetTimer()
	for range b.N {
		tok.Encode(text)
	}
}

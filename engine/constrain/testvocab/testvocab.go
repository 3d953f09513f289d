// Package testvocab loads the real tokenizers the constraint tests check
// masks against, from the shared models folder (models/testmodels): a test
// skips with a message naming the file when it is absent.
package testvocab

import (
	"os"
	"testing"

	"chat/models"
	"chat/models/gguf"
	"chat/models/testmodels"
	"chat/models/tokenizer/coursebpe"
	"chat/models/tokenizer/gpt2bpe"
	"chat/models/tokenizer/spm"
)

// Names are the tokenizers every property test runs over: the course BPE,
// SentencePiece with ▁ spaces and <0xNN> byte fallback (stories260K,
// llama-spm, phi-3) and GPT-2 byte-level BPE (gpt-2, llama-bpe with 128k
// tokens).
var Names = []string{"course", "stories260K", "llama-spm", "phi-3", "gpt-2", "llama-bpe"}

var files = map[string]string{
	"course":      "course/tokenizer.json",
	"stories260K": "stories260K/stories260K.gguf",
	"llama-spm":   "vocab/ggml-vocab-llama-spm.gguf",
	"phi-3":       "vocab/ggml-vocab-phi-3.gguf",
	"gpt-2":       "vocab/ggml-vocab-gpt-2.gguf",
	"llama-bpe":   "vocab/ggml-vocab-llama-bpe.gguf",
}

// Load returns the named tokenizer, or skips t.
func Load(t testing.TB, name string) models.Tokenizer {
	t.Helper()
	path := testmodels.Path(t, files[name])
	if name == "course" {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		tok, err := coursebpe.FromJSON(b)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var tok models.Tokenizer
	if m, _ := f.String("tokenizer.ggml.model"); m == "llama" {
		tok, err = spm.FromGGUF(f)
	} else {
		tok, err = gpt2bpe.FromGGUF(f)
	}
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

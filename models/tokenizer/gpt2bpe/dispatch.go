package gpt2bpe

import (
	"fmt"

	"chat/models"
	"chat/models/gguf"
	"chat/models/tokenizer/spm"
)

// ForModel builds the tokenizer a GGUF file's tokenizer.ggml.model names:
// "llama" (SentencePiece, package spm) or "gpt2" (byte-level BPE, this
// package). On error the returned Tokenizer is a nil interface.
func ForModel(f *gguf.File) (models.Tokenizer, error) {
	model, ok := f.String("tokenizer.ggml.model")
	if !ok {
		return nil, fmt.Errorf("tokenizer: tokenizer.ggml.model missing or not a string")
	}
	switch model {
	case "llama":
		t, err := spm.FromGGUF(f)
		if err != nil {
			return nil, err
		}
		return t, nil
	case Model:
		t, err := FromGGUF(f)
		if err != nil {
			return nil, err
		}
		return t, nil
	}
	return nil, fmt.Errorf("tokenizer: tokenizer.ggml.model %q is not supported (only \"llama\" and %q)", model, Model)
}

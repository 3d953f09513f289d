package wpm

import (
	"os"
	"strings"
	"testing"

	"chat/models/gguf"
)

// realVocab loads the BGE vocabulary when the shared folder is there, and
// is nil otherwise (the fuzz target then runs on the synthetic one only).
func realVocab(t testing.TB) *Tokenizer {
	dir := os.Getenv("CHAT_SHARED_MODELS")
	if dir == "" {
		dir = "../../../../shared/models"
	}
	f, err := gguf.Open(dir + "/" + bgeVocab)
	if err != nil {
		return nil
	}
	t.Cleanup(func() { f.Close() })
	tok, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// FuzzEncode checks that any input tokenizes without panicking into ids in
// range, and, on the BGE vocabulary (no user-defined tokens), that each
// preprocessed word comes out either as one UNK or as pieces spelling
// "▁"+word.
func FuzzEncode(f *testing.F) {
	toks := []*Tokenizer{synth(f)}
	real := realVocab(f)
	if real != nil {
		toks = append(toks, real)
	}
	for _, s := range []string{"", "Hello, world!", "ied 4 ½ months", "Äpfel", "[CLS] a [SEP]", "a<x>b",
		"我想在apple工作1314151天～", "🚀 (normal) 😶\u200d🌫️", "\xff\xc1\x81\xed\xa0\x80\xf4\x90\x80\x80", "\x00\ufffd▁▁"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, tok := range toks {
			ids := tok.Encode(s)
			for _, id := range append(ids, tok.EncodeSpecial(s)...) {
				if id < 0 || id >= tok.Size() {
					t.Fatalf("id %d out of range", id)
				}
			}
			_ = tok.Decode(ids)
			if tok != real {
				continue
			}
			k := 0
			for _, w := range preprocess(s, nil) {
				if k < len(ids) && ids[k] == tok.UNK() {
					k++
					continue
				}
				want := strings.ReplaceAll(wordStart+w, wordStart, " ")
				var got []byte
				for k < len(ids) && len(got) < len(want) {
					got = append(got, tok.TokenBytes(ids[k])...)
					k++
				}
				if string(got) != want {
					t.Fatalf("Encode(%q): word %q spelled %q (ids %v)", s, w, got, ids)
				}
			}
			if k != len(ids) {
				t.Fatalf("Encode(%q) = %v: %d ids left over", s, ids, len(ids)-k)
			}
		}
	})
}

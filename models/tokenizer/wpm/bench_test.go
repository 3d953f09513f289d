package wpm

import (
	"os"
	"testing"

	"chat/models/testmodels"
)

func BenchmarkEncode(b *testing.B) {
	tok := load(b, bgeVocab)
	text, err := os.ReadFile(testmodels.Path(b, "text/TinyStories-valid-head.txt"))
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tok.Encode(string(text))
	}
}

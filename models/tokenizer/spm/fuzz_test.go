package spm

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzEncode checks on the stories260K vocabulary, which has all 256 byte
// tokens, that any valid UTF-8 text encodes to pieces that spell the text
// with its space prefix, and that Decode gives the text back. (Invalid
// UTF-8 only has to tokenize: like llama.cpp, a bad lead byte swallows the
// bytes after it, which may split a following ▁.)
func FuzzEncode(f *testing.F) {
	tok := load(f, "stories260K/stories260K.gguf")
	for _, s := range []string{"", "Once upon a time", "  a\tb\n", "日本語 🙂", "<s></s><0x41>", "\xff\xfe", "▁x▁"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ids := tok.Encode(s)
		var b []byte
		for _, id := range ids {
			if id < 0 || id >= tok.Size() {
				t.Fatalf("id %d out of range", id)
			}
			b = append(b, tok.TokenBytes(id)...)
		}
		if !utf8.ValidString(s) {
			return
		}
		want := ""
		if s != "" {
			want = " " + strings.ReplaceAll(s, "▁", " ")
		}
		if string(b) != want {
			t.Fatalf("pieces of %q spell %q", s, b)
		}
		if got := tok.Decode(ids); got != strings.ReplaceAll(s, "▁", " ") {
			t.Fatalf("Decode(Encode(%q)) = %q", s, got)
		}
	})
}

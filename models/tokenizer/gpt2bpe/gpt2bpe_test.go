package gpt2bpe

import (
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"chat/models"
	"chat/models/gguf"
	"chat/models/testmodels"
)

var _ models.Tokenizer = (*Tokenizer)(nil)

var loaded = map[string]*Tokenizer{}

// load reads a vocabulary once per test binary (the Llama-3 one is large).
func load(t *testing.T, rel string) *Tokenizer {
	t.Helper()
	if tok, ok := loaded[rel]; ok {
		return tok
	}
	f, err := gguf.Open(testmodels.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	loaded[rel] = tok
	return tok
}

// TestVocabVectors runs llama.cpp's test-tokenizer-0 vectors
// (add_special=false, parse_special=false) for each BPE vocabulary.
func TestVocabVectors(t *testing.T) {
	for _, name := range []string{"gpt-2", "llama-bpe", "mpt", "starcoder", "refact", "falcon", "deepseek-coder", "deepseek-llm"} {
		t.Run(name, func(t *testing.T) {
			rel := "vocab/ggml-vocab-" + name + ".gguf"
			tok := load(t, rel)
			inp, err := os.ReadFile(testmodels.Path(t, rel+".inp"))
			if err != nil {
				t.Fatal(err)
			}
			outp, err := os.ReadFile(testmodels.Path(t, rel+".out"))
			if err != nil {
				t.Fatal(err)
			}
			texts := strings.Split(string(inp), "\n__ggml_vocab_test__\n")
			texts = texts[:len(texts)-1]
			lines := strings.Split(strings.TrimSuffix(string(outp), "\n"), "\n")
			if len(texts) != len(lines) {
				t.Fatalf("%d inputs, %d outputs", len(texts), len(lines))
			}
			pass := 0
			for i, text := range texts {
				var want []int
				for _, f := range strings.Fields(lines[i]) {
					n, _ := strconv.Atoi(f)
					want = append(want, n)
				}
				got := tok.Encode(text)
				if len(got) == 0 && len(want) == 0 || reflect.DeepEqual(got, want) {
					pass++
				} else {
					t.Errorf("Encode(%q) = %v, want %v", text, got, want)
				}
				// The pieces concatenate back to the text.
				var b []byte
				for _, id := range want {
					b = append(b, tok.TokenBytes(id)...)
				}
				if string(b) != text {
					t.Errorf("pieces of %q give %q", text, b)
				}
			}
			t.Logf("%s: %d/%d vectors pass", name, pass, len(texts))
		})
	}
}

func TestSpecialAndDecode(t *testing.T) {
	tok := load(t, "vocab/ggml-vocab-llama-bpe.gguf")
	bot := tok.Encode("<|begin_of_text|>")
	if len(bot) < 2 {
		t.Errorf("Encode treats a control token as special: %v", bot)
	}
	got := tok.EncodeSpecial("<|begin_of_text|>Hi")
	if len(got) != 2 || string(tok.TokenBytes(got[0])) != "<|begin_of_text|>" {
		t.Errorf("EncodeSpecial = %v", got)
	}
	if tok.BOS() != got[0] || tok.StripsLeadingSpace() {
		t.Errorf("BOS %d", tok.BOS())
	}
	if d := tok.Decode(got); d != "Hi" {
		t.Errorf("Decode = %q", d)
	}
	if d := tok.Decode(tok.Encode("Hello , world ! It 's")); d != "Hello, world! It's" {
		t.Errorf("clean-up: %q", d)
	}
	if tok.TokenBytes(-1) != nil || tok.TokenBytes(tok.Size()) != nil {
		t.Error("TokenBytes out of range")
	}
}

func TestCleanSpaces(t *testing.T) {
	cases := map[string]string{
		"a , b . c ! d ?":   "a, b. c! d?",
		"x ' y":             "x'y",
		"x ' ' y":           "x'' y", // as llama.cpp's in-place passes give it
		"it 's I 'm we 're": "it's I'm we're",
		"don 't":            "don 't",
		"":                  "",
	}
	for in, want := range cases {
		if got := string(cleanSpaces([]byte(in))); got != want {
			t.Errorf("cleanSpaces(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestNewErrors(t *testing.T) {
	if _, err := New(Vocab{}); err == nil {
		t.Error("empty vocab accepted")
	}
	if _, err := New(Vocab{Tokens: []string{"a"}, Pre: "no-such-pre"}); err == nil {
		t.Error("unknown pre-tokenizer accepted")
	}
	tk, err := New(Vocab{Tokens: []string{"a", "b", "ab"}, Merges: []string{"a b"}, Pre: "gpt-2", BOS: -1, EOS: -1, EOT: -1})
	if err != nil {
		t.Fatal(err)
	}
	if got := tk.Encode("abz"); !reflect.DeepEqual(got, []int{2}) {
		t.Errorf("got %v", got) // z has no token and is dropped, as in llama.cpp
	}
}

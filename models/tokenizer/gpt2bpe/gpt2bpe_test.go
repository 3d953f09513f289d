package gpt2bpe

import (
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"chat/models"
	"chat/models/gguf"
	"chat/models/gguf/gguftest"
	"chat/models/testmodels"
	"chat/models/tokenizer/llamavocab"
)

var _ models.Tokenizer = (*Tokenizer)(nil)

var loaded = map[string]*Tokenizer{}

// load reads a vocabulary once per test binary (the Llama-3 one is large).
func load(t *testing.T, rel string) *Tokenizer {
	t.Helper()
	if tok, ok := loaded[rel]; ok {
		return tok
	}
	tok := open(t, testmodels.Path(t, rel))
	loaded[rel] = tok
	return tok
}

// open reads the vocabulary of the GGUF file at path.
func open(t *testing.T, path string) *Tokenizer {
	t.Helper()
	f, err := gguf.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tok, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// vectorVocabs are the byte-level BPE files with test-tokenizer-0 vectors.
var vectorVocabs = []string{"gpt-2", "llama-bpe", "mpt", "starcoder", "refact", "falcon", "deepseek-coder", "deepseek-llm"}

// TestAllVocabFiles goes through every shared vocabulary: files of another
// tokenizer.ggml.model are skipped with a note, every "gpt2" one must load,
// and every one with vectors must be in vectorVocabs.
func TestAllVocabFiles(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(testmodels.Dir(t), "vocab", "ggml-vocab-*.gguf"))
	if err != nil || len(files) == 0 {
		t.Skipf("no vocabulary files (%v)", err)
	}
	for _, p := range files {
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(p), "ggml-vocab-"), ".gguf")
		f, err := gguf.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		model, _ := f.String("tokenizer.ggml.model")
		f.Close()
		if model != Model {
			t.Logf("%s: tokenizer.ggml.model %q, not byte-level BPE: skipped", name, model)
			continue
		}
		tok := load(t, "vocab/"+filepath.Base(p))
		_, statErr := os.Stat(p + ".inp")
		if hasVectors := statErr == nil; hasVectors != slices.Contains(vectorVocabs, name) {
			t.Errorf("%s: vectors present %v but listed %v", name, hasVectors, !hasVectors)
		}
		if statErr != nil {
			t.Logf("%s: loads (pre %q, %d tokens); no test vectors", name, tok.Pre(), tok.Size())
		}
	}
}

// TestVocabVectors runs llama.cpp's test-tokenizer-0 vectors
// (add_special=false, parse_special=false) for each BPE vocabulary.
func TestVocabVectors(t *testing.T) {
	for _, name := range vectorVocabs {
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
				// Decode gives the text back (after llama.cpp's space
				// clean-up, for the vocabularies that ask for it).
				if d := tok.Decode(want); d != cleanIf(tok, text) {
					t.Errorf("Decode(%v) = %q, want %q", want, d, cleanIf(tok, text))
				}
			}
			t.Logf("%s: %d/%d vectors pass", name, pass, len(texts))
		})
	}
}

// TestSpecialIDs checks BOS, EOS and EOT per file against llama.cpp's
// defaults and text rules.
func TestSpecialIDs(t *testing.T) {
	for _, c := range []struct {
		name          string
		bos, eos, eot int
	}{
		{"gpt-2", -1, 50256, 50256},
		{"llama-bpe", 128000, 128001, 128009}, // add_bos by default; <|eot_id|> by text
		{"deepseek-llm", 100000, 100001, 100001},
		{"deepseek-coder", 32013, 32014, 32014},
		{"falcon", -1, 11, 11},
		{"starcoder", -1, 0, 0},
	} {
		tok := load(t, "vocab/ggml-vocab-"+c.name+".gguf")
		if tok.BOS() != c.bos || tok.EOS() != c.eos || tok.EOT() != c.eot || !tok.IsEOG(c.eos) || !tok.IsEOG(c.eot) {
			t.Errorf("%s: BOS %d EOS %d EOT %d EOG %v, want %d %d %d", c.name, tok.BOS(), tok.EOS(), tok.EOT(), tok.EOG(), c.bos, c.eos, c.eot)
		}
	}
}

// TestLlama3Special: control-token texts are ids with EncodeSpecial and
// plain text with Encode.
func TestLlama3Special(t *testing.T) {
	tok := load(t, "vocab/ggml-vocab-llama-bpe.gguf")
	text := "<|begin_of_text|>Hi<|eot_id|>\n"
	got := tok.EncodeSpecial(text)
	if len(got) != 4 || got[0] != 128000 || got[2] != 128009 || !reflect.DeepEqual(got[1:2], tok.Encode("Hi")) {
		t.Errorf("EncodeSpecial(%q) = %v", text, got)
	}
	plain := tok.Encode(text)
	for _, id := range plain {
		if tok.IsControl(id) {
			t.Errorf("Encode(%q) = %v has control id %d", text, plain, id)
		}
	}
	if d := tok.Decode(plain); d != text {
		t.Errorf("Decode(Encode) = %q", d)
	}
	if d := string(tok.Detokenize(got, false, true)); d != text {
		t.Errorf("Detokenize(unparse_special) = %q", d)
	}
	if d := tok.Decode(got); d != "Hi\n" {
		t.Errorf("Decode drops control tokens: %q", d)
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
		if got := string(llamavocab.CleanSpaces([]byte(in))); got != want {
			t.Errorf("llamavocab.CleanSpaces(%q) = %q, want %q", in, got, want)
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

// TestPretokenizeClasses pins splits where the DeepSeek classes matter: the
// LLM letter class is the cased letters only (not U+004B..U+212D, which a
// normalised copy of "K-ℭ" gives), and non-ASCII whitespace never matches a
// class of literal characters (llama.cpp rewrites it to \v first).
func TestPretokenizeClasses(t *testing.T) {
	cases := []struct {
		pre, text string
		want      []string
	}{
		{"deepseek-llm", "x_y", []string{"x", "_", "y"}},
		{"deepseek-llm", "ab~", []string{"ab", "~"}},
		{"deepseek-llm", "\u1f70\u1f7d", []string{"\u1f70\u1f7d"}},
		{"deepseek-llm", "Ѐa", []string{"Ѐ", "a"}}, // the punctuation class has a-z
		{"deepseek-coder", "a\u3000b", []string{"a", "\u3000b"}},
		{"deepseek-llm", "一\u3000二", []string{"一", "\u3000", "二"}},
		{"gpt-2", "Hello  world's", []string{"Hello", " ", " world", "'s"}},
		{"llama-bpe", "12345 ab\n\n x", []string{"123", "45", " ab", "\n\n", " x"}},
		{"qwen2", "123", []string{"1", "2", "3"}},
		{"qwen2", "a\u0301b c\u0301!", []string{"a", "\u0301b", " c", "\u0301!"}},
		{"qwen35", "a\u0301b c\u0301!", []string{"a\u0301b", " c\u0301", "!"}},
	}
	for _, c := range cases {
		steps, err := pretokenizer(c.pre)
		if err != nil {
			t.Fatal(err)
		}
		cpts := decodeRunes(c.text)
		var got []string
		for _, sp := range pretokenize(steps, cpts) {
			got = append(got, string(cpts[sp.start:sp.end]))
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %q: %q, want %q", c.pre, c.text, got, c.want)
		}
	}
	if _, err := pretokenizer("no-such"); err == nil || !strings.Contains(err.Error(), "llama-bpe") {
		t.Errorf("error does not list the supported names: %v", err)
	}
}

// AppendedEOS is EOS when the file's add_eos_token is true (as
// Qwen3-Embedding's is), else -1; Tokenize with its special tokens then
// ends with it, as llama_tokenize does.
func TestAppendedEOS(t *testing.T) {
	src := testmodels.Path(t, "vocab/ggml-vocab-llama-bpe.gguf")
	if tok := load(t, "vocab/ggml-vocab-llama-bpe.gguf"); tok.AppendedEOS() != -1 {
		t.Errorf("no add_eos_token: %d", tok.AppendedEOS())
	}
	path := filepath.Join(t.TempDir(), "eos.gguf")
	gguftest.WithMeta(t, src, path, func(kv []gguf.KV) []gguf.KV {
		return append(kv, gguf.KV{Key: "tokenizer.ggml.add_eos_token", Type: gguf.Bool, Value: true})
	})
	tok := open(t, path)
	ids := tok.Tokenize("hi", true, false)
	if tok.AppendedEOS() != tok.EOS() || tok.EOS() < 0 || ids[len(ids)-1] != tok.AppendedEOS() {
		t.Errorf("add_eos_token: AppendedEOS %d, EOS %d, Tokenize %v", tok.AppendedEOS(), tok.EOS(), ids)
	}
}

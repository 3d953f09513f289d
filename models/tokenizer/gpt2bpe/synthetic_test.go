package gpt2bpe

import (
	"bytes"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"chat/models/gguf"
	"chat/models/tokenizer/llamavocab"
)

// synthVocab is a small byte-level vocabulary: the 256 alphabet characters,
// a few merges, and special tokens of each kind.
func synthVocab() Vocab {
	var toks []string
	var types []int32
	for b := 0; b < 256; b++ {
		toks = append(toks, string(byteRune[b]))
		types = append(types, TypeNormal)
	}
	merges := []string{"Ġ t", "h e", "Ġt he", "l l", "e ll", "h ell", "hell o"}
	for _, m := range merges {
		toks = append(toks, strings.ReplaceAll(m, " ", ""))
		types = append(types, TypeNormal)
	}
	for _, sp := range []struct {
		text string
		typ  int32
	}{
		{"<|endoftext|>", TypeControl},
		{"<|im_end|>", TypeNormal}, // control-looking: llama.cpp makes it control
		{"<tool>", TypeUserDefined},
		{"<|unused|>", TypeUnused},
	} {
		toks = append(toks, sp.text)
		types = append(types, sp.typ)
	}
	return Vocab{Tokens: toks, Types: types, Merges: merges, Pre: "gpt-2", BOS: -1, EOS: 263, EOT: -1}
}

func synth(t testing.TB, pre string) *Tokenizer {
	t.Helper()
	v := synthVocab()
	v.Pre = pre
	tok, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestSynthetic(t *testing.T) {
	tok := synth(t, "gpt-2")
	id := func(s string) int { return tok.ids[s] }
	// "the" has no t+h merge; " the" merges all the way (rank order:
	// Ġ+t, h+e, then Ġt+he).
	if got, want := tok.Encode("the the"), []int{id("t"), id("he"), id("Ġthe")}; !reflect.DeepEqual(got, want) {
		t.Errorf("Encode = %v, want %v", got, want)
	}
	// h+e (rank 1) goes first, so e+ll and h+ell never apply.
	if got, want := tok.Encode("hello"), []int{id("he"), id("ll"), id("o")}; !reflect.DeepEqual(got, want) {
		t.Errorf("Encode(hello) = %v, want %v", got, want)
	}
	// User-defined texts are split out even in Encode; control ones only in
	// EncodeSpecial, and <|im_end|> counts as control although typed normal.
	eot, imEnd, tool := id("<|endoftext|>"), id("<|im_end|>"), id("<tool>")
	got := tok.Encode("a<tool>b<|endoftext|><|im_end|>")
	if got[1] != tool || len(got) < 10 || bytes.Contains([]byte(tok.Decode(got)), []byte("<tool>")) == false {
		t.Errorf("Encode = %v (%q)", got, tok.Decode(got))
	}
	for _, x := range got {
		if x == eot || x == imEnd {
			t.Errorf("Encode made a control id: %v", got)
		}
	}
	if got, want := tok.EncodeSpecial("a<tool>b<|endoftext|><|im_end|>"), []int{id("a"), tool, id("b"), eot, imEnd}; !reflect.DeepEqual(got, want) {
		t.Errorf("EncodeSpecial = %v, want %v", got, want)
	}
	if !tok.IsControl(imEnd) || tok.Type(imEnd) != TypeNormal {
		t.Error("<|im_end|> should be control, stored as normal")
	}
	// EOT is found by text; EOS and EOT both end generation.
	if tok.EOT() != imEnd || tok.EOS() != eot || !tok.IsEOG(eot) || !tok.IsEOG(imEnd) || tok.IsEOG(tool) {
		t.Errorf("EOT %d EOS %d EOG %v", tok.EOT(), tok.EOS(), tok.EOG())
	}
	if tok.BOS() != -1 || tok.Size() != 256+7+4 {
		t.Errorf("BOS %d size %d", tok.BOS(), tok.Size())
	}
	// Pieces: the alphabet undone, special texts literal, unused empty.
	if string(tok.TokenBytes(id("Ġthe"))) != " the" || string(tok.TokenBytes(eot)) != "<|endoftext|>" ||
		len(tok.TokenBytes(id("<|unused|>"))) != 0 || string(tok.TokenBytes(id("Ċ"))) != "\n" {
		t.Error("TokenBytes")
	}
	// Decode drops control tokens, keeps user-defined ones, and replaces
	// invalid UTF-8.
	if d := tok.Decode([]int{id("a"), eot, tool, 0xC3}); d != "a<tool>\uFFFD" {
		t.Errorf("Decode = %q", d)
	}
	// Invalid input bytes become U+FFFD before tokenizing, as in llama.cpp.
	if d := tok.Decode(tok.Encode("x\xffy")); d != "x\uFFFDy" {
		t.Errorf("Decode(Encode(invalid)) = %q", d)
	}
	if tok.Encode("") != nil || tok.EncodeSpecial("") != nil {
		t.Error("empty text gives ids")
	}
}

// TestSyntheticEOG covers the text rules for <|end|> in harmony-style
// vocabularies, and eot_token_id taking precedence.
func TestSyntheticEOG(t *testing.T) {
	v := synthVocab()
	v.Tokens = append(v.Tokens, "<|end|>", "<|return|>", "<|call|>")
	v.Types = append(v.Types, TypeControl, TypeControl, TypeControl)
	v.EOT = 263
	tok, err := New(v)
	if err != nil {
		t.Fatal(err)
	}
	end := tok.ids["<|end|>"]
	if tok.EOT() != 263 || tok.IsEOG(end) || !tok.IsEOG(tok.ids["<|return|>"]) {
		t.Errorf("EOT %d EOG %v", tok.EOT(), tok.EOG())
	}
	// <|end|> is user-defined now, so Encode splits it out.
	if got := tok.Encode("a<|end|>"); len(got) != 2 || got[1] != end {
		t.Errorf("Encode = %v", got)
	}
}

func TestNewVocabErrors(t *testing.T) {
	v := synthVocab()
	v.Tokens = append(v.Tokens, "a") // duplicate
	v.Types = append(v.Types, TypeNormal)
	if _, err := New(v); err == nil || !strings.Contains(err.Error(), "duplicate") {
		t.Errorf("duplicate accepted: %v", err)
	}
	v = synthVocab()
	v.Types = v.Types[:10]
	if _, err := New(v); err == nil {
		t.Error("short types accepted")
	}
	v = synthVocab()
	v.AddBOS = true
	if _, err := New(v); err == nil {
		t.Error("add_bos without a BOS id accepted")
	}
	// Malformed merges are skipped, not fatal.
	v = synthVocab()
	v.Merges = append([]string{"", " ", "x", "a ", " b"}, v.Merges...)
	if _, err := New(v); err != nil {
		t.Error(err)
	}
}

// ggufBytes writes a vocabulary-only GGUF file with the given metadata.
func ggufBytes(t *testing.T, meta []gguf.KV) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := gguf.Write(&buf, meta, nil); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestFromGGUFErrors(t *testing.T) {
	v := synthVocab()
	types := make([]int32, len(v.Types))
	copy(types, v.Types)
	good := func() []gguf.KV {
		return []gguf.KV{
			{Key: "tokenizer.ggml.model", Type: gguf.String, Value: "gpt2"},
			{Key: "tokenizer.ggml.pre", Type: gguf.String, Value: "llama-bpe"},
			{Key: "tokenizer.ggml.tokens", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.String, Data: v.Tokens}},
			{Key: "tokenizer.ggml.merges", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.String, Data: v.Merges}},
			{Key: "tokenizer.ggml.token_type", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.Int32, Data: types}},
			{Key: "tokenizer.ggml.bos_token_id", Type: gguf.Uint32, Value: uint32(262)},
			{Key: "tokenizer.ggml.eos_token_id", Type: gguf.Uint32, Value: uint32(263)},
		}
	}
	with := func(key string, typ gguf.ValueType, val any) []gguf.KV {
		m := good()
		for i := range m {
			if m[i].Key == key {
				if val == nil {
					return append(m[:i], m[i+1:]...)
				}
				m[i] = gguf.KV{Key: key, Type: typ, Value: val}
				return m
			}
		}
		return append(m, gguf.KV{Key: key, Type: typ, Value: val})
	}
	f, err := gguf.Parse(ggufBytes(t, good()))
	if err != nil {
		t.Fatal(err)
	}
	tok, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	// llama-bpe adds BOS by default and ignores merges for whole-token words.
	if tok.BOS() != 262 || !tok.AddBOS() || !tok.ignoreMerges {
		t.Errorf("BOS %d", tok.BOS())
	}
	bad := []struct {
		name string
		meta []gguf.KV
		want string
	}{
		{"spm model", with("tokenizer.ggml.model", gguf.String, "llama"), "want \"gpt2\""},
		{"no tokens", with("tokenizer.ggml.tokens", 0, nil), "tokens"},
		{"int tokens", with("tokenizer.ggml.tokens", gguf.Array, gguf.ArrayValue{Elem: gguf.Int32, Data: []int32{1}}), "tokens"},
		{"no merges", with("tokenizer.ggml.merges", 0, nil), "merges"},
		{"short types", with("tokenizer.ggml.token_type", gguf.Array, gguf.ArrayValue{Elem: gguf.Int32, Data: []int32{1}}), "token types"},
		{"string types", with("tokenizer.ggml.token_type", gguf.Array, gguf.ArrayValue{Elem: gguf.String, Data: []string{"x"}}), "token_type"},
		{"unknown pre", with("tokenizer.ggml.pre", gguf.String, "gemma4"), "supported: "},
		{"numeric pre", with("tokenizer.ggml.pre", gguf.Uint32, uint32(1)), "pre"},
		{"string add_bos", with("tokenizer.ggml.add_bos_token", gguf.String, "yes"), "add_bos_token"},
	}
	for _, c := range bad {
		f, err := gguf.Parse(ggufBytes(t, c.meta))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := FromGGUF(f); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", c.name, err, c.want)
		}
	}
	// An out-of-range id keeps llama.cpp's default (11 for BPE vocabularies).
	f, err = gguf.Parse(ggufBytes(t, with("tokenizer.ggml.bos_token_id", gguf.Uint32, uint32(1e6))))
	if err != nil {
		t.Fatal(err)
	}
	if tok, err := FromGGUF(f); err != nil || tok.BOS() != 11 {
		t.Errorf("bos out of range: %v", err)
	}
	// gpt-2 without add_bos_token takes no BOS, and an out-of-range BOS is
	// then harmless.
	m := with("tokenizer.ggml.pre", gguf.String, "gpt-2")
	f, err = gguf.Parse(ggufBytes(t, m))
	if err != nil {
		t.Fatal(err)
	}
	if tok, err := FromGGUF(f); err != nil || tok.BOS() != -1 {
		t.Errorf("gpt-2: %v", err)
	}
}

// normalized is s as llama.cpp reads it: each malformed UTF-8 sequence
// becomes U+FFFD.
func normalized(s string) string {
	var b []byte
	for _, r := range decodeRunes(s) {
		b = appendUTF8(b, r)
	}
	return string(b)
}

var fuzzPre = []string{"gpt-2", "llama-bpe", "qwen2", "qwen35", "starcoder", "falcon", "default", "deepseek-llm", "deepseek-coder",
	"tekken", "gpt-4o", "granite-embed-multi-97m", "tiny_aya", "youtu", "deepseek-v3", "afmoe", "kimi-k2", "seed-coder",
	"exaone-moe", "jais-2", "minicpm5", "laguna", "bloom", "viking", "chameleon", "superbpe"}

// FuzzEncode checks on the synthetic vocabulary, under each kind of
// pre-tokenizer, that encoding never panics, gives ids in range, and that
// the pieces give the text back.
func FuzzEncode(f *testing.F) {
	for _, s := range []string{"", "hello the world", "  \n\n\t x", "I'll 've 'RE", "12345 ½ 三四五",
		"a<tool>b<|endoftext|>", "\xff\xc3(", "ὰά x_y", "\u3000\u2028 z", "...!!??", "\xed\xa0\x80"} {
		f.Add(s)
	}
	toks := map[string]*Tokenizer{}
	for _, p := range fuzzPre {
		toks[p] = synth(f, p)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want := normalized(s)
		for _, p := range fuzzPre {
			tok := toks[p]
			for _, special := range []bool{false, true} {
				ids := tok.Tokenize(s, false, special)
				var b []byte
				for _, id := range ids {
					if id < 0 || id >= tok.Size() {
						t.Fatalf("%s: id %d out of range", p, id)
					}
					b = append(b, tok.TokenBytes(id)...)
				}
				if string(b) != want {
					t.Fatalf("%s special=%v: %q gives %q", p, special, s, b)
				}
			}
			if utf8.ValidString(s) && !strings.ContainsAny(s, "<>") && tok.Decode(tok.Encode(s)) != cleanIf(tok, s) {
				t.Fatalf("%s: Decode(Encode(%q)) = %q", p, s, tok.Decode(tok.Encode(s)))
			}
		}
	})
}

// cleanIf is what Decode gives for text without special tokens.
func cleanIf(tok *Tokenizer, s string) string {
	if tok.cleanUp {
		return string(llamavocab.CleanSpaces([]byte(s)))
	}
	return s
}

// TestConcurrentEncode: the word cache is shared by goroutines.
func TestConcurrentEncode(t *testing.T) {
	tok := synth(t, "llama-bpe")
	want := tok.Encode("the hello world, the end")
	done := make(chan []int)
	for range 4 {
		go func() {
			var got []int
			for range 200 {
				got = tok.Encode("the hello world, the end")
			}
			done <- got
		}()
	}
	for range 4 {
		if got := <-done; !reflect.DeepEqual(got, want) {
			t.Errorf("got %v, want %v", got, want)
		}
	}
}

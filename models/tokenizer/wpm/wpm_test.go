package wpm

import (
	"bytes"
	"os"
	"reflect"
	"strconv"
	"strings"
	"testing"

	"chat/models/gguf"
	"chat/models/testmodels"
	"chat/models/tokenizer/llamavocab"
)

const bgeVocab = "vocab/ggml-vocab-bert-bge.gguf"

func load(t testing.TB, rel string) *Tokenizer {
	t.Helper()
	f, err := gguf.Open(testmodels.Path(t, rel))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	tok, err := FromGGUF(f)
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// TestVectors checks llama.cpp's test-tokenizer-0 vectors for the BGE
// vocabulary (add_special=false, parse_special=false).
func TestVectors(t *testing.T) {
	tok := load(t, bgeVocab)
	path := testmodels.Path(t, bgeVocab)
	inp, err := os.ReadFile(path + ".inp")
	if err != nil {
		t.Fatal(err)
	}
	out, err := os.ReadFile(path + ".out")
	if err != nil {
		t.Fatal(err)
	}
	tests := strings.Split(string(inp), "\n__ggml_vocab_test__\n")
	if tests[len(tests)-1] == "" {
		tests = tests[:len(tests)-1]
	}
	lines := strings.Split(strings.TrimSuffix(string(out), "\n"), "\n")
	if len(tests) != len(lines) {
		t.Fatalf("%d inputs, %d outputs", len(tests), len(lines))
	}
	pass := 0
	for i, s := range tests {
		want := []int{}
		for _, f := range strings.Fields(lines[i]) {
			id, err := strconv.Atoi(f)
			if err != nil {
				t.Fatal(err)
			}
			want = append(want, id)
		}
		got := tok.Encode(s)
		if got == nil {
			got = []int{}
		}
		if reflect.DeepEqual(got, want) {
			pass++
		} else {
			t.Errorf("Encode(%q)\n got %v\nwant %v", s, got, want)
		}
	}
	t.Logf("%d/%d vectors exact", pass, len(tests))
}

func TestBGEMetadata(t *testing.T) {
	tok := load(t, bgeVocab)
	if tok.Size() != 30522 || tok.BOS() != 101 || tok.CLS() != 101 || tok.SEP() != 102 ||
		tok.EOT() != 102 || tok.EOS() != -1 || tok.UNK() != 100 || tok.PAD() != 0 || tok.MASK() != 103 {
		t.Errorf("size %d bos %d sep %d eot %d eos %d unk %d pad %d mask %d", tok.Size(), tok.BOS(), tok.SEP(),
			tok.EOT(), tok.EOS(), tok.UNK(), tok.PAD(), tok.MASK())
	}
	if got := string(tok.TokenBytes(7592)); got != " hello" {
		t.Errorf("TokenBytes(7592) = %q", got)
	}
	if got := string(tok.TokenBytes(2094)); got != "d" { // a continuation piece
		t.Errorf("TokenBytes(2094) = %q", got)
	}
	if got := string(tok.TokenBytes(101)); got != "[CLS]" {
		t.Errorf("TokenBytes(101) = %q", got)
	}
	if tok.TokenBytes(-1) != nil || tok.TokenBytes(tok.Size()) != nil {
		t.Error("TokenBytes out of range is not nil")
	}
}

func TestEncodeSpecial(t *testing.T) {
	tok := load(t, bgeVocab)
	s := "[CLS] Hello world[SEP][MASK]!"
	if got, want := tok.EncodeSpecial(s), []int{101, 7592, 2088, 102, 103, 999}; !reflect.DeepEqual(got, want) {
		t.Errorf("EncodeSpecial(%q) = %v, want %v", s, got, want)
	}
	// As plain text the brackets are punctuation: [ cl ##s ] ...
	for _, id := range tok.Encode(s) {
		if id == 101 || id == 102 || id == 103 {
			t.Errorf("Encode(%q) = %v has a control id", s, tok.Encode(s))
		}
	}
	if got, want := tok.Tokenize("Hello world", true, false), []int{101, 7592, 2088, 102}; !reflect.DeepEqual(got, want) {
		t.Errorf("Tokenize(add_special) = %v, want %v", got, want)
	}
	if got := tok.Tokenize("", true, false); !reflect.DeepEqual(got, []int{101, 102}) {
		t.Errorf("Tokenize(\"\", add_special) = %v", got)
	}
}

func TestDecodeRoundTrip(t *testing.T) {
	tok := load(t, bgeVocab)
	for _, s := range []string{
		"hello world",
		"Hello, World!",
		"y'all, he's there?",
		"the quick brown fox jumps over the lazy dog.",
		"Äpfel und Birnen", // accents are dropped: "apfel und birnen"
	} {
		ids := tok.Encode(s)
		for _, id := range ids {
			if id == tok.UNK() {
				t.Fatalf("%q has an unknown word: %v", s, ids)
			}
		}
		got := tok.Decode(ids)
		// llama.cpp keeps the space of the first word's "▁".
		want := " " + strings.ToLower(strings.ReplaceAll(s, "Ä", "A"))
		if got != want {
			t.Errorf("Decode(Encode(%q)) = %q, want %q", s, got, want)
		}
		// The pieces concatenate to the same text before clean-up.
		var b []byte
		for _, id := range ids {
			b = append(b, tok.TokenBytes(id)...)
		}
		if string(llamavocab.CleanSpaces(b)) != got {
			t.Errorf("pieces of %q: %q", s, b)
		}
	}
	// Control and unknown tokens decode to nothing; unparse renders them.
	ids := []int{101, 7592, 100, 102}
	if got := tok.Decode(ids); got != " hello" {
		t.Errorf("Decode(%v) = %q", ids, got)
	}
	if got := string(tok.Detokenize(ids, true, true)); got != " hello[UNK][SEP]" {
		t.Errorf("Detokenize(%v, remove, unparse) = %q", ids, got)
	}
}

// synth is a tiny vocabulary with llama.cpp's BERT layout: word starts
// carry "▁", continuations are bare, specials at the usual ids.
func synth(t testing.TB) *Tokenizer {
	t.Helper()
	toks := make([]string, 0, 120)
	for i := 0; i < 100; i++ {
		toks = append(toks, "[unused"+strconv.Itoa(i)+"]")
	}
	toks[0] = "[PAD]"
	toks = append(toks, "[UNK]", "[CLS]", "[SEP]", "[MASK]")
	toks = append(toks, "▁un", "▁una", "ble", "▁able", "▁the", "s", "▁,", "▁!", "▁a", "b", "▁中", "▁é", "<x>")
	types := make([]int32, len(toks))
	for i := range types {
		types[i] = TypeNormal
	}
	for _, id := range []int{0, 100, 101, 102, 103} {
		types[id] = TypeControl
	}
	types[len(toks)-1] = TypeUserDefined
	tok, err := New(DefaultVocab(toks, types))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func TestSynthetic(t *testing.T) {
	tok := synth(t)
	id := func(s string) int { return tok.ids[s] }
	cases := []struct {
		in   string
		want []int
	}{
		// Longest match first: "▁una" then "ble", not "▁un" + "able".
		{"Unable", []int{id("▁una"), id("ble")}},
		{"the ables", []int{id("▁the"), id("▁able"), id("s")}},
		{"ab,ab!", []int{id("▁a"), id("b"), id("▁,"), id("▁a"), id("b"), id("▁!")}},
		{"unx", []int{100}}, // "x" matches nothing: the whole word is UNK
		{"a中b", []int{id("▁a"), id("▁中"), 100}},
		{"\x00a\u200db\ufffd", []int{id("▁a"), id("b")}}, // NUL, ZWJ (Cf) and U+FFFD vanish
		{"É", []int{100}},                                // the accent is dropped, and "▁e" is not in the vocab
		{"a<x>b", []int{id("▁a"), id("<x>"), 100}},       // user-defined tokens split even in Encode; "▁b" is unknown
		{" \t\n", nil},
	}
	for _, c := range cases {
		if got := tok.Encode(c.in); !reflect.DeepEqual(got, c.want) {
			t.Errorf("Encode(%q) = %v, want %v", c.in, got, c.want)
		}
	}
	if got, want := tok.EncodeSpecial("[CLS]ab[SEP]"), []int{101, id("▁a"), id("b"), 102}; !reflect.DeepEqual(got, want) {
		t.Errorf("EncodeSpecial = %v, want %v", got, want)
	}
	if got := tok.Decode(tok.Encode("The ables, unable!")); got != " the ables, unable!" {
		t.Errorf("Decode = %q", got)
	}
	if tok.BOS() != 101 || tok.EOT() != 102 || tok.Size() != 117 {
		t.Errorf("BOS %d EOT %d size %d", tok.BOS(), tok.EOT(), tok.Size())
	}
	if got := string(tok.TokenBytes(id("<x>"))); got != "<x>" {
		t.Errorf("TokenBytes(<x>) = %q", got)
	}
}

func TestPreprocess(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string
	}{
		{"Hello, World!", []string{"hello", ",", "world", "!"}},
		{"Äpfel Cửa Việt", []string{"apfel", "cua", "viet"}},
		{"a$b+c～d", []string{"a", "$", "b", "+", "c～d"}}, // only ASCII symbols split
		{"我想apple", []string{"我", "想", "apple"}},
		{"½ 🦙.cpp", []string{"½", "🦙", ".", "cpp"}},
		{"한", []string{"\u1112"}}, // Hangul keeps only its leading jamo
		// Overlong and surrogate forms decode as llama.cpp does: "\xc1\x81"
		// is 'A'; a surrogate is a control character and vanishes.
		{"x\xc1\x81\xed\xa0\x80y\xff", []string{"xay"}},
	} {
		if got := preprocess(c.in, nil); !reflect.DeepEqual(got, c.want) {
			t.Errorf("preprocess(%q) = %q, want %q", c.in, got, c.want)
		}
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
	base := synth(t)
	good := func() []gguf.KV {
		return []gguf.KV{
			{Key: "tokenizer.ggml.model", Type: gguf.String, Value: "bert"},
			{Key: "tokenizer.ggml.tokens", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.String, Data: append([]string(nil), base.texts...)}},
			{Key: "tokenizer.ggml.token_type", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.Int32, Data: append([]int32(nil), base.types...)}},
			{Key: "tokenizer.ggml.unknown_token_id", Type: gguf.Uint32, Value: uint32(100)},
			{Key: "tokenizer.ggml.seperator_token_id", Type: gguf.Uint32, Value: uint32(102)},
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
	parse := func(meta []gguf.KV) *gguf.File {
		f, err := gguf.Parse(ggufBytes(t, meta))
		if err != nil {
			t.Fatal(err)
		}
		return f
	}
	tok, err := FromGGUF(parse(good()))
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(tok.Encode("Unable"), base.Encode("Unable")) || tok.BOS() != 101 {
		t.Errorf("from GGUF: %v, BOS %d", tok.Encode("Unable"), tok.BOS())
	}
	dup := append([]string(nil), base.texts...)
	dup[5] = dup[6]
	bad := []struct {
		name string
		meta []gguf.KV
		want string
	}{
		{"gpt2 model", with("tokenizer.ggml.model", gguf.String, "gpt2"), `want "bert"`},
		{"no model", with("tokenizer.ggml.model", 0, nil), `want "bert"`},
		{"no tokens", with("tokenizer.ggml.tokens", 0, nil), "tokens"},
		{"empty tokens", with("tokenizer.ggml.tokens", gguf.Array, gguf.ArrayValue{Elem: gguf.String, Data: []string{}}), "empty"},
		{"int tokens", with("tokenizer.ggml.tokens", gguf.Array, gguf.ArrayValue{Elem: gguf.Int32, Data: []int32{1}}), "tokens"},
		{"duplicate", with("tokenizer.ggml.tokens", gguf.Array, gguf.ArrayValue{Elem: gguf.String, Data: dup}), "duplicate"},
		{"short types", with("tokenizer.ggml.token_type", gguf.Array, gguf.ArrayValue{Elem: gguf.Int32, Data: []int32{1}}), "token types"},
		{"string types", with("tokenizer.ggml.token_type", gguf.Array, gguf.ArrayValue{Elem: gguf.String, Data: []string{"x"}}), "token_type"},
		{"string unk", with("tokenizer.ggml.unknown_token_id", gguf.String, "100"), "unknown_token_id"},
		{"negative sep", with("tokenizer.ggml.seperator_token_id", gguf.Int32, int32(-1)), "seperator_token_id"},
		{"string add_bos", with("tokenizer.ggml.add_bos_token", gguf.String, "yes"), "add_bos_token"},
	}
	for _, c := range bad {
		if _, err := FromGGUF(parse(c.meta)); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want it to mention %q", c.name, err, c.want)
		}
	}
	// A vocabulary too small for the default ids: UNK is required, CLS and
	// SEP only while they are added.
	small := []gguf.KV{
		{Key: "tokenizer.ggml.model", Type: gguf.String, Value: "bert"},
		{Key: "tokenizer.ggml.tokens", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.String, Data: []string{"[UNK]", "▁a"}}},
	}
	if _, err := FromGGUF(parse(small)); err == nil || !strings.Contains(err.Error(), "UNK") {
		t.Errorf("small vocab: err = %v", err)
	}
	small = append(small, gguf.KV{Key: "tokenizer.ggml.unknown_token_id", Type: gguf.Uint32, Value: uint32(0)})
	if _, err := FromGGUF(parse(small)); err == nil || !strings.Contains(err.Error(), "BOS") {
		t.Errorf("small vocab without CLS: err = %v", err)
	}
	small = append(small,
		gguf.KV{Key: "tokenizer.ggml.add_bos_token", Type: gguf.Bool, Value: false},
		gguf.KV{Key: "tokenizer.ggml.add_sep_token", Type: gguf.Bool, Value: false})
	tok, err = FromGGUF(parse(small))
	if err != nil {
		t.Fatal(err)
	}
	if got := tok.Tokenize("a b", true, false); !reflect.DeepEqual(got, []int{1, 0}) || tok.BOS() != -1 || tok.EOT() != -1 {
		t.Errorf("small vocab: %v BOS %d EOT %d", got, tok.BOS(), tok.EOT())
	}
	// An out-of-range id keeps llama.cpp's default.
	tok, err = FromGGUF(parse(with("tokenizer.ggml.seperator_token_id", gguf.Uint32, uint32(1e6))))
	if err != nil || tok.SEP() != 102 {
		t.Errorf("sep out of range: %v", err)
	}
	if _, err := FromGGUF(nil); err == nil {
		t.Error("nil file accepted")
	}
}

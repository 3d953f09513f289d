package spm

import (
	"encoding/json"
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

type golden struct {
	Prompts []struct {
		Prompt       string `json:"prompt"`
		PromptTokens []int  `json:"prompt_tokens"`
		InputIDs     []int  `json:"input_ids"`
		GreedyIDs    []int  `json:"greedy_ids"`
		GreedyText   string `json:"greedy_text"`
		FullText     string `json:"full_text"`
	} `json:"prompts"`
	TokenizerTests []struct {
		Text                string `json:"text"`
		IDs                 []int  `json:"ids"`
		Detokenized         string `json:"detokenized"`
		DetokenizedAfterBOS string `json:"detokenized_after_bos"`
	} `json:"tokenizer_tests"`
}

func TestStories260KGolden(t *testing.T) {
	tok := load(t, "stories260K/stories260K.gguf")
	raw, err := os.ReadFile(testmodels.Path(t, "stories260K/golden-llamacpp.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g golden
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	if tok.Size() != 512 || tok.BOS() != 1 || tok.EOT() != 2 || !tok.StripsLeadingSpace() {
		t.Fatalf("size %d bos %d eot %d", tok.Size(), tok.BOS(), tok.EOT())
	}
	pass := 0
	for _, c := range g.TokenizerTests {
		ids := tok.Encode(c.Text)
		if !reflect.DeepEqual(ids, c.IDs) && !(len(ids) == 0 && len(c.IDs) == 0) {
			t.Errorf("Encode(%q) = %v, want %v", c.Text, ids, c.IDs)
			continue
		}
		if got := tok.Decode(c.IDs); got != c.Detokenized {
			t.Errorf("Decode(%v) = %q, want %q", c.IDs, got, c.Detokenized)
			continue
		}
		if got := tok.Decode(append([]int{1}, c.IDs...)); got != c.DetokenizedAfterBOS {
			t.Errorf("Decode(BOS %v) = %q, want %q", c.IDs, got, c.DetokenizedAfterBOS)
			continue
		}
		pass++
	}
	t.Logf("tokenizer_tests: %d/%d pass", pass, len(g.TokenizerTests))
	for _, p := range g.Prompts {
		if got := tok.Encode(p.Prompt); !reflect.DeepEqual(got, p.PromptTokens) && len(p.PromptTokens) > 0 {
			t.Errorf("Encode(%q) = %v, want %v", p.Prompt, got, p.PromptTokens)
		}
		if got := tok.Tokenize(p.Prompt, true, false); !reflect.DeepEqual(got, p.InputIDs) {
			t.Errorf("Tokenize(%q, add_special) = %v, want %v", p.Prompt, got, p.InputIDs)
		}
		if got := tok.Decode(p.GreedyIDs); got != p.GreedyText {
			t.Errorf("Decode(greedy) = %q, want %q", got, p.GreedyText)
		}
		if got := tok.Decode(append(append([]int{}, p.InputIDs...), p.GreedyIDs...)); got != p.FullText {
			t.Errorf("Decode(full) = %q, want %q", got, p.FullText)
		}
	}
}

// TestLlamaSPMVocab runs llama.cpp's test-tokenizer-0 vectors for the
// Llama-2 and Phi-3 SentencePiece vocabularies (add_special=false,
// parse_special=false).
func TestLlamaSPMVocab(t *testing.T) {
	for _, name := range []string{"llama-spm", "phi-3"} {
		t.Run(name, func(t *testing.T) { testVocab(t, "vocab/ggml-vocab-"+name+".gguf") })
	}
}

func testVocab(t *testing.T, rel string) {
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
	texts = texts[:len(texts)-1] // the file ends with a separator
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
			continue
		}
		t.Errorf("Encode(%q) = %v, want %v", text, got, want)
	}
	t.Logf("%s vectors: %d/%d pass", rel, pass, len(texts))
}

func TestSpecialTokens(t *testing.T) {
	tok := load(t, "stories260K/stories260K.gguf")
	if got := tok.EncodeSpecial("<s>Hi</s>"); got[0] != 1 || got[len(got)-1] != 2 {
		t.Errorf("EncodeSpecial = %v", got)
	}
	// After a special token the text gets the space prefix again.
	a := tok.EncodeSpecial("</s>Once")
	b := tok.Encode("Once")
	if !reflect.DeepEqual(a[1:], b) {
		t.Errorf("%v vs %v", a, b)
	}
	if got := tok.Encode("<s>"); len(got) < 2 || got[0] == 1 {
		t.Errorf("Encode treats <s> as special: %v", got)
	}
	if string(tok.TokenBytes(1)) != "<s>" || string(tok.TokenBytes(13)) != "\n" || string(tok.TokenBytes(410)) != " " {
		t.Errorf("TokenBytes: %q %q %q", tok.TokenBytes(1), tok.TokenBytes(13), tok.TokenBytes(410))
	}
	if tok.TokenBytes(-1) != nil || tok.TokenBytes(512) != nil {
		t.Error("TokenBytes out of range")
	}
	// A lone continuation byte decodes to U+FFFD.
	if got := tok.Decode([]int{3 + 0x80}); got != "\uFFFD" {
		t.Errorf("Decode invalid = %q", got)
	}
	if got := string(tok.Detokenize([]int{1, 346, 2}, true, false)); got != " He" { // BOS removed keeps the space, as llama.cpp does
		t.Errorf("Detokenize(remove_special) = %q", got)
	}
	if got := string(tok.Detokenize([]int{1, 346, 2}, false, true)); got != "<s> He</s>" {
		t.Errorf("Detokenize(unparse_special) = %q", got)
	}
}

func TestNewErrors(t *testing.T) {
	if _, err := New(Vocab{}); err == nil {
		t.Error("empty vocab accepted")
	}
	if _, err := New(Vocab{Tokens: []string{"a", "a"}}); err == nil {
		t.Error("duplicate tokens accepted")
	}
	if _, err := New(Vocab{Tokens: []string{"a", "b"}, Scores: []float32{1}}); err == nil {
		t.Error("short scores accepted")
	}
	// A vocabulary without byte tokens falls back to unk.
	tk, err := New(Vocab{Tokens: []string{"<unk>", "▁a"}, Types: []int32{2, 1}, UNK: 0, BOS: -1, EOS: -1, EOT: -1, AddSpacePrefix: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := tk.Encode("a!"); !reflect.DeepEqual(got, []int{1, 0}) {
		t.Errorf("got %v", got)
	}
	if tk.BOS() != -1 || tk.EOT() != -1 {
		t.Error("absent specials")
	}
}

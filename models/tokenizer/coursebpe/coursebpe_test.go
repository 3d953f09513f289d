package coursebpe

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"chat/models/testmodels"
)

// tinySpec is a hand-made spec so the tests run without the shared files.
// Merges: 256 = "ab", 257 = "abc", 258 = "aa", 259 = " a", 260 = "  ".
const tinySpec = `{"type": "bpe", "version": 1,
 "pattern": "'(?i:[sdmt]|ll|ve|re)|[^\\r\\n\\p{L}\\p{N}]?+\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]++[\\r\\n]*|\\s*[\\r\\n]|\\s+(?!\\S)|\\s+",
 "merges": [[97, 98], [256, 99], [97, 97], [32, 97], [32, 32]],
 "special_tokens": ["<|endoftext|>", "<|pad|>"]}`

func tiny(t testing.TB) *Tokenizer {
	t.Helper()
	tk, err := FromJSON([]byte(tinySpec))
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

func real(t testing.TB) *Tokenizer {
	t.Helper()
	b, err := os.ReadFile(testmodels.Path(t, "course/tokenizer.json"))
	if err != nil {
		t.Fatal(err)
	}
	tk, err := FromJSON(b)
	if err != nil {
		t.Fatal(err)
	}
	return tk
}

// realOrNil loads the shared tokenizer without skipping (for the fuzz target).
func realOrNil() *Tokenizer {
	dir := os.Getenv("CHAT_SHARED_MODELS")
	if dir == "" {
		dir = filepath.Join("..", "..", "..", "..", "shared", "models")
	}
	b, err := os.ReadFile(filepath.Join(dir, "course", "tokenizer.json"))
	if err != nil {
		return nil
	}
	tk, err := FromJSON(b)
	if err != nil {
		return nil
	}
	return tk
}

func TestTinySpec(t *testing.T) {
	tk := tiny(t)
	if tk.Size() != 256+5+2 || tk.EOT() != 261 || tk.BOS() != -1 || tk.Merges() != 5 {
		t.Fatalf("Size %d EOT %d BOS %d Merges %d", tk.Size(), tk.EOT(), tk.BOS(), tk.Merges())
	}
	cases := []struct {
		text string
		ids  []int
	}{
		{"", []int{}},
		{"abc", []int{257}},
		// " aab": (a,b) has the lowest rank, so the a,a pair never forms.
		{" aab", []int{259, 256}},
		{"aaaa", []int{258, 258}},
		{"aaa", []int{258, 97}},
		{" aaaa", []int{32, 258, 258}},
		// Three spaces before a word: "  " then " abc", where "ab" (rank 0)
		// wins over " a" (rank 3).
		{"   abc", []int{260, 32, 257}},
		{"<|pad|>", []int{60, 124, 112, 97, 100, 124, 62}},
	}
	for _, c := range cases {
		if got := tk.Encode(c.text); !reflect.DeepEqual(got, c.ids) {
			t.Errorf("Encode(%q) = %v, want %v", c.text, got, c.ids)
		}
		if got := tk.Decode(c.ids); got != c.text {
			t.Errorf("Decode(%v) = %q, want %q", c.ids, got, c.text)
		}
	}
	got := tk.EncodeSpecial("x<|pad|>y<|endoftext|><|endoftext|>")
	if want := []int{120, 262, 121, 261, 261}; !reflect.DeepEqual(got, want) {
		t.Errorf("EncodeSpecial = %v, want %v", got, want)
	}
	if s := tk.Decode([]int{262, -1, 9999, 257, 263}); s != "<|pad|>abc" {
		t.Errorf("Decode with out-of-range ids = %q", s)
	}
	if b := tk.TokenBytes(257); string(b) != "abc" {
		t.Errorf("TokenBytes(257) = %q", b)
	}
	if b := tk.TokenBytes(261); string(b) != "<|endoftext|>" {
		t.Errorf("TokenBytes(261) = %q", b)
	}
	for _, id := range []int{-1, 263, 1 << 40} {
		if b := tk.TokenBytes(id); b != nil {
			t.Errorf("TokenBytes(%d) = %q, want nil", id, b)
		}
	}
	// TokenBytes shares the vocabulary's bytes, so the engine's decode step
	// does not allocate.
	if a := testing.AllocsPerRun(10, func() { tk.TokenBytes(257) }); a != 0 {
		t.Errorf("TokenBytes allocates %v times", a)
	}
}

// A spec without <|endoftext|> has EOT -1; a missing special_tokens key
// means [<|endoftext|>] as in the course.
func TestSpecials(t *testing.T) {
	tk, err := FromSpec(map[string]any{"type": "bpe", "pattern": GPT4SplitPattern, "merges": []any{}, "special_tokens": []any{"<s>"}})
	if err != nil {
		t.Fatal(err)
	}
	if tk.EOT() != -1 || tk.Size() != 257 {
		t.Errorf("EOT %d Size %d", tk.EOT(), tk.Size())
	}
	tk, err = FromSpec(map[string]any{"type": "bpe", "pattern": GPT4SplitPattern, "merges": []any{}})
	if err != nil {
		t.Fatal(err)
	}
	if tk.EOT() != 256 || tk.Size() != 257 {
		t.Errorf("EOT %d Size %d", tk.EOT(), tk.Size())
	}
	// Overlapping specials: the leftmost occurrence wins, then list order.
	tk, err = FromSpec(map[string]any{"type": "bpe", "pattern": GPT4SplitPattern, "merges": []any{}, "special_tokens": []any{"bc", "abcd", "ab"}})
	if err != nil {
		t.Fatal(err)
	}
	if got, want := tk.EncodeSpecial("xabcd"), []int{120, 257}; !reflect.DeepEqual(got, want) {
		t.Errorf("EncodeSpecial(xabcd) = %v, want %v", got, want)
	}
	if got, want := tk.EncodeSpecial("xabc"), []int{120, 258, 99}; !reflect.DeepEqual(got, want) {
		t.Errorf("EncodeSpecial(xabc) = %v, want %v", got, want)
	}
}

type goldenCase struct {
	Text                 string `json:"text"`
	EncodeOrdinary       []int  `json:"encode_ordinary"`
	Encode               []int  `json:"encode"`
	DecodeEncodeOrdinary string `json:"decode_encode_ordinary"`
	RoundtripOK          bool   `json:"roundtrip_ok"`
	DecodeEncode         string `json:"decode_encode"`
}

func TestGolden(t *testing.T) {
	tk := real(t)
	b, err := os.ReadFile(testmodels.Path(t, "course/golden/tokenizer-cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g struct {
		NVocab  int          `json:"n_vocab"`
		EOT     int          `json:"eot_id"`
		NMerges int          `json:"n_merges"`
		Pattern string       `json:"pattern"`
		Cases   []goldenCase `json:"cases"`
	}
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	if tk.Size() != g.NVocab || tk.EOT() != g.EOT || tk.Merges() != g.NMerges || tk.Pattern() != g.Pattern {
		t.Fatalf("Size %d EOT %d Merges %d, want %d %d %d", tk.Size(), tk.EOT(), tk.Merges(), g.NVocab, g.EOT, g.NMerges)
	}
	if len(g.Cases) != 30 {
		t.Errorf("%d golden cases, want 30", len(g.Cases))
	}
	for _, c := range g.Cases {
		if got := tk.Encode(c.Text); !equalIDs(got, c.EncodeOrdinary) {
			t.Errorf("Encode(%q) = %v, want %v", c.Text, got, c.EncodeOrdinary)
		}
		if got := tk.EncodeSpecial(c.Text); !equalIDs(got, c.Encode) {
			t.Errorf("EncodeSpecial(%q) = %v, want %v", c.Text, got, c.Encode)
		}
		if got := tk.Decode(c.EncodeOrdinary); got != c.DecodeEncodeOrdinary {
			t.Errorf("Decode(encode_ordinary(%q)) = %q, want %q", c.Text, got, c.DecodeEncodeOrdinary)
		}
		if got := tk.Decode(c.Encode); got != c.DecodeEncode {
			t.Errorf("Decode(encode(%q)) = %q, want %q", c.Text, got, c.DecodeEncode)
		}
		if ok := tk.Decode(tk.Encode(c.Text)) == c.Text; ok != c.RoundtripOK {
			t.Errorf("round trip of %q: %v, want %v", c.Text, ok, c.RoundtripOK)
		}
	}
}

func equalIDs(a, b []int) bool { return len(a) == len(b) && (len(a) == 0 || reflect.DeepEqual(a, b)) }

// The checkpoint reader hands over plain Go values: []any of []any of int64.
func TestFromSpecCheckpointValues(t *testing.T) {
	path := testmodels.Path(t, "course/tokenizer.json")
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	var merges []any
	for _, p := range m["merges"].([]any) {
		q := p.([]any)
		merges = append(merges, []any{int64(q[0].(float64)), int64(q[1].(float64))})
	}
	m["merges"] = merges
	m["version"] = int64(1)
	a, err := FromSpec(m)
	if err != nil {
		t.Fatal(err)
	}
	c, err := FromSpec(" \n" + string(b)) // the JSON-string form
	if err != nil {
		t.Fatal(err)
	}
	text := "Once upon a time, Lily's cat said \"hi\" 123 <|endoftext|> 日本"
	if x, y := a.EncodeSpecial(text), c.EncodeSpecial(text); !reflect.DeepEqual(x, y) || a.Size() != 4096 {
		t.Errorf("map spec %v, JSON string spec %v", x, y)
	}
}

func TestSpecErrors(t *testing.T) {
	t.Setenv("TIKTOKEN_CACHE_DIR", t.TempDir()) // an empty cache
	missing := "rank file is not in tiktoken's cache"
	tik := []struct {
		spec     any
		name, in string
	}{
		{nil, "r50k_base", missing},
		{"r50k_base", "r50k_base", missing},
		{"gpt2", "gpt2", missing},
		{"cl100k_base", "cl100k_base", missing},
		{"p50k_base", "p50k_base", "not one of the encodings the course offers"},
		{map[string]any{"type": "tiktoken", "name": "r50k_base"}, "r50k_base", missing},
		{map[string]any{"type": "tiktoken"}, "r50k_base", missing},
		{`{"type": "tiktoken", "name": "o200k_base"}`, "o200k_base", missing},
	}
	for _, c := range tik {
		_, err := FromSpec(c.spec)
		if !errors.Is(err, ErrTiktoken) || !strings.Contains(err.Error(), "tokenizer: tiktoken "+c.name+": ") || !strings.Contains(err.Error(), c.in) {
			t.Errorf("FromSpec(%v) = %v, want tiktoken %s ... %q (ErrTiktoken)", c.spec, err, c.name, c.in)
		}
		var te *TiktokenError
		if !errors.As(err, &te) || te.Name != c.name {
			t.Errorf("FromSpec(%v): not a *TiktokenError for %s", c.spec, c.name)
		}
		testmodels.OneShortLine(t, err, 400)
	}
	bpe := func(merges any, specials any, pattern any) map[string]any {
		return map[string]any{"type": "bpe", "version": 1, "pattern": pattern, "merges": merges, "special_tokens": specials}
	}
	eot := []any{"<|endoftext|>"}
	bad := map[string]any{
		"unknown type":      map[string]any{"type": "sentencepiece"},
		"no type":           map[string]any{},
		"bad JSON":          `{"type": "bpe", `,
		"null JSON":         []byte("  {"),
		"int spec":          42,
		"merge out of 256":  bpe([]any{[]any{97, 256}}, eot, GPT4SplitPattern),
		"merge uses itself": bpe([]any{[]any{97, 98}, []any{257, 98}}, eot, GPT4SplitPattern),
		"merge later id":    bpe([]any{[]any{97, 300}, []any{97, 98}}, eot, GPT4SplitPattern),
		"negative id":       bpe([]any{[]any{-1, 98}}, eot, GPT4SplitPattern),
		"triple":            bpe([]any{[]any{97, 98, 99}}, eot, GPT4SplitPattern),
		"not a list":        bpe("nope", eot, GPT4SplitPattern),
		"nil merges":        bpe(nil, eot, GPT4SplitPattern),
		"string id":         bpe([]any{[]any{"a", 98}}, eot, GPT4SplitPattern),
		"fraction id":       bpe([]any{[]any{97.5, 98}}, eot, GPT4SplitPattern),
		"huge id":           bpe([]any{[]any{int64(1) << 40, 98}}, eot, GPT4SplitPattern),
		"duplicate merge":   bpe([]any{[]any{97, 98}, []any{97, 98}}, eot, GPT4SplitPattern),
		"special not str":   bpe([]any{}, []any{1}, GPT4SplitPattern),
		"specials null":     bpe([]any{}, nil, GPT4SplitPattern),
		"empty special":     bpe([]any{}, []any{""}, GPT4SplitPattern),
		"dup special":       bpe([]any{}, []any{"<a>", "<a>"}, GPT4SplitPattern),
		"pattern not str":   bpe([]any{}, eot, 5),
		"pattern missing":   map[string]any{"type": "bpe", "merges": []any{}},
		"merges missing":    map[string]any{"type": "bpe", "pattern": GPT4SplitPattern},
		"bad pattern":       bpe([]any{}, eot, `(\p{L}`),
		"bad pattern 2":     bpe([]any{}, eot, `[a-`),
		"two groups":        bpe([]any{}, eot, `(a)|(b)`),
		"non-string key":    map[any]any{1: "bpe"},
		// Megabytes of a checkpoint's spec in an error are cut (issue 16).
		"long bad pattern":  bpe([]any{}, eot, "("+strings.Repeat("a", 1<<20)),
		"long unrewritable": bpe([]any{}, eot, strings.Repeat("a", 1<<20)+`\`),
		"long two groups":   bpe([]any{}, eot, "(a)|(b)"+strings.Repeat("a", 1<<20)),
		"long dup special":  bpe([]any{}, []any{strings.Repeat("s", 1<<20), strings.Repeat("s", 1<<20)}, GPT4SplitPattern),
	}
	for name, spec := range bad {
		tk, err := FromSpec(spec)
		if err == nil || tk != nil {
			t.Errorf("%s: FromSpec = %v, %v; want an error", name, tk, err)
			continue
		}
		if errors.Is(err, ErrTiktoken) || !strings.HasPrefix(err.Error(), "tokenizer: ") || len(err.Error()) > 400 {
			t.Errorf("%s: error %.300q", name, err)
		}
	}
	if _, err := FromJSON([]byte(`null`)); err == nil {
		t.Error("FromJSON(null) gave no error")
	}
	if _, err := FromJSON([]byte(tinySpec + " {}")); err == nil {
		t.Error("FromJSON with trailing data gave no error")
	}
	// Typed Go slices work as well as []any.
	for _, merges := range []any{[][]int64{{97, 98}}, [][2]int{{97, 98}}, []any{[]int32{97, 98}}, []any{[]any{97.0, json.Number("98")}}} {
		tk, err := FromSpec(map[string]any{"type": "bpe", "pattern": GPT4SplitPattern, "merges": merges, "special_tokens": []string{EndOfText}})
		if err != nil {
			t.Errorf("merges %T: %v", merges, err)
		} else if got := tk.Encode("ab"); !reflect.DeepEqual(got, []int{256}) {
			t.Errorf("merges %T: Encode(ab) = %v", merges, got)
		}
	}
	for _, merges := range []any{[]any{nil}, []any{[]any{nil, 1}}, [][]string{{"a", "b"}}, 5} {
		if _, err := FromSpec(map[string]any{"type": "bpe", "pattern": GPT4SplitPattern, "merges": merges}); err == nil {
			t.Errorf("merges %#v: no error", merges)
		}
	}
	// map[any]any with string keys (as some pickle readers give) works.
	var m map[string]any
	if err := json.Unmarshal([]byte(tinySpec), &m); err != nil {
		t.Fatal(err)
	}
	mm := map[any]any{}
	for k, v := range m {
		mm[k] = v
	}
	if tk, err := FromSpec(mm); err != nil || tk.Size() != 263 {
		t.Errorf("map[any]any spec: %v", err)
	}
}

func TestDecodeUTF8Replace(t *testing.T) {
	// Expected values are Python's bytes.decode("utf-8", errors="replace").
	cases := []struct{ in, want string }{
		{"", ""},
		{"abc", "abc"},
		{"\xe2\x82A", "\uFFFDA"},               // truncated 3-byte sequence, then ASCII: ONE U+FFFD
		{"\xe2\x82\xac", "€"},                  // complete
		{"\xff\xfe", "\uFFFD\uFFFD"},           // each invalid byte
		{"\xc0\xaf", "\uFFFD\uFFFD"},           // overlong lead bytes are not lead bytes
		{"\xe0\x80\xaf", "\uFFFD\uFFFD\uFFFD"}, // E0 needs A0..BF next
		{"\xed\xa0\x80", "\uFFFD\uFFFD\uFFFD"}, // surrogates
		{"\xf0\x9f\x98", "\uFFFD"},             // truncated 4-byte at the end
		{"\xf0\x9f\x98\x80", "😀"},
		{"\xf0\x9f\x98A\xf0\x9f", "\uFFFDA\uFFFD"},
		{"\xf4\x90\x80\x80", "\uFFFD\uFFFD\uFFFD\uFFFD"}, // above U+10FFFF
		{"\x80\x80", "\uFFFD\uFFFD"},
		{"a\xc3", "a\uFFFD"},
	}
	for _, c := range cases {
		if got := DecodeUTF8Replace([]byte(c.in)); got != c.want {
			t.Errorf("DecodeUTF8Replace(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	// Go's own helpers differ, which is why the package has its own.
	if strings.ToValidUTF8("\xff\xfe", "\uFFFD") == "\uFFFD\uFFFD" {
		t.Error("strings.ToValidUTF8 now matches Python; DecodeUTF8Replace could use it")
	}
	if string([]rune("\xe2\x82A")) == "\uFFFDA" {
		t.Error("rune conversion now matches Python on a truncated sequence")
	}
	tk := tiny(t)
	if got := tk.Decode([]int{0xe2, 0x82, 'A'}); got != "\uFFFDA" {
		t.Errorf("Decode(e2 82 41) = %q", got)
	}
}

// pyCases are reference results computed by Python itself (gen_pycases.py).
type pyCases struct {
	RegexVersion string `json:"regex_version"`
	Split        []struct {
		Text string   `json:"text"`
		GPT4 []string `json:"gpt4"`
		GPT2 []string `json:"gpt2"`
		IDs  []int    `json:"ids"`
	} `json:"split"`
	Decode []struct {
		Hex  string `json:"hex"`
		Text string `json:"text"`
	} `json:"decode"`
}

func loadPyCases(t *testing.T) pyCases {
	b, err := os.ReadFile("testdata/pycases.json")
	if err != nil {
		t.Fatal(err)
	}
	var pc pyCases
	if err := json.Unmarshal(b, &pc); err != nil {
		t.Fatal(err)
	}
	if len(pc.Split) == 0 || len(pc.Decode) == 0 {
		t.Fatal("empty testdata/pycases.json")
	}
	return pc
}

func chunks(sp splitter, s string) []string {
	out := []string{}
	sp(s, func(c string) { out = append(out, c) })
	return out
}

func TestPythonSplit(t *testing.T) {
	pc := loadPyCases(t)
	if pc.RegexVersion != tablesSource[len("regex "):] {
		t.Logf("pycases from regex %s, tables from %s", pc.RegexVersion, tablesSource)
	}
	for _, c := range pc.Split {
		if got := chunks(splitGPT4, c.Text); !reflect.DeepEqual(got, c.GPT4) {
			t.Errorf("GPT-4 split of %q:\n got %q\nwant %q", c.Text, got, c.GPT4)
		}
		if got := chunks(splitGPT2, c.Text); !reflect.DeepEqual(got, c.GPT2) {
			t.Errorf("GPT-2 split of %q:\n got %q\nwant %q", c.Text, got, c.GPT2)
		}
	}
	for _, c := range pc.Decode {
		b, err := hex.DecodeString(c.Hex)
		if err != nil {
			t.Fatal(err)
		}
		if got := DecodeUTF8Replace(b); got != c.Text {
			t.Errorf("DecodeUTF8Replace(%x) = %q, Python %q", b, got, c.Text)
		}
	}
}

func TestPythonEncode(t *testing.T) {
	tk := real(t)
	for _, c := range loadPyCases(t).Split {
		if got := tk.Encode(c.Text); !equalIDs(got, c.IDs) {
			t.Errorf("Encode(%q) = %v, Python %v", c.Text, got, c.IDs)
		}
	}
}

// The scanners' Unicode tables come from the regex module; spot-check the
// points where they differ from Go's older unicode package and the \s set.
func TestClasses(t *testing.T) {
	cases := []struct {
		r rune
		c uint8
	}{
		{'a', cL}, {'É', cL}, {'日', cL}, {0x0301, 0}, {'5', cN}, {0x00B2, cN}, {0x216B, cN},
		{' ', cS}, {'\t', cS}, {'\v', cS}, {0x85, cS}, {0xA0, cS}, {0x2028, cS}, {0x3000, cS},
		{0x1C, 0}, {0x1F, 0}, {0x200B, 0}, {'!', 0}, {0x1F600, 0},
		{0x105C0, cL}, {0x0C5C, cL}, {0x31350, cL}, // newer than Go's Unicode 15 tables
	}
	for _, c := range cases {
		if got := classOf(c.r); got != c.c {
			t.Errorf("classOf(%U) = %b, want %b", c.r, got, c.c)
		}
	}
}

// randText builds random strings from pieces that stress the scanners.
var pieces = []string{
	"a", "Z", "hello", "World", " ", "  ", "   ", "\t", "\n", "\r\n", "\r", "\n\n", " \n ", "\v", "\f",
	"\x1c", "\u0085", "\u00a0", "\u2028", "\u3000", "\u200b", "'", "'s", "'S", "'ll", "'LL", "'Ve", "'re",
	"'d", "'M", "'t", "'x", "0", "7", "12", "1234", "\u0663", "\u00b2", "\u216b", ".", ",", "!", "?", "...",
	"\"", "(", "#", "$", "<|endoftext|>", "e\u0301", "\u0301", "caf\u00e9", "\u00df", "日本", "語",
	"テキ", "한", "😀", "🐱🎉", "❤️", "👍🏽", "\ufffd", "©", "€", "\u0600", "אב",
}

func randText(rng *rand.Rand, extra ...string) string {
	var sb strings.Builder
	n := rng.IntN(30)
	for range n {
		if len(extra) > 0 && rng.IntN(8) == 0 {
			sb.WriteString(extra[rng.IntN(len(extra))])
			continue
		}
		sb.WriteString(pieces[rng.IntN(len(pieces))])
	}
	return sb.String()
}

// randRunes draws single characters from a wide range, including invalid
// bytes when invalid is set.
func randRunes(rng *rand.Rand, invalid bool) string {
	var sb strings.Builder
	n := rng.IntN(20)
	for range n {
		switch k := rng.IntN(10); {
		case k < 4:
			sb.WriteByte(byte(rng.IntN(128)))
		case k < 7:
			sb.WriteRune(rune(rng.IntN(0x3000)))
		case k < 9:
			r := rune(rng.IntN(0x110000))
			if r >= 0xD800 && r <= 0xDFFF {
				r = 'x'
			}
			sb.WriteRune(r)
		default:
			if invalid {
				sb.WriteByte(byte(0x80 + rng.IntN(128)))
			} else {
				sb.WriteString(" ")
			}
		}
	}
	return sb.String()
}

func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	tks := []*Tokenizer{tiny(t)}
	if tk := realOrNil(); tk != nil {
		tks = append(tks, tk)
	}
	for _, tk := range tks {
		for range 2000 {
			s := randText(rng, "in<|endoftext|>side", "x<|endo", "ftext|>")
			if rng.IntN(3) == 0 {
				s = randRunes(rng, false)
			}
			if got := tk.Decode(tk.Encode(s)); got != s {
				t.Fatalf("Decode(Encode(%q)) = %q", s, got)
			}
			if got := tk.Decode(tk.EncodeSpecial(s)); got != s {
				t.Fatalf("Decode(EncodeSpecial(%q)) = %q", s, got)
			}
		}
		// Invalid UTF-8 keeps its bytes through the token pieces.
		for range 500 {
			s := randRunes(rng, true)
			var b []byte
			for _, id := range tk.Encode(s) {
				b = append(b, tk.TokenBytes(id)...)
			}
			if string(b) != s {
				t.Fatalf("pieces of Encode(%q) = %q", s, b)
			}
			if got, want := tk.Decode(tk.Encode(s)), DecodeUTF8Replace([]byte(s)); got != want {
				t.Fatalf("Decode(Encode(%q)) = %q, want %q", s, got, want)
			}
		}
	}
}

func TestChunksConcat(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for range 3000 {
		s := randText(rng)
		if rng.IntN(2) == 0 {
			s = randRunes(rng, true)
		}
		for name, sp := range map[string]splitter{"gpt4": splitGPT4, "gpt2": splitGPT2} {
			cs := chunks(sp, s)
			if strings.Join(cs, "") != s {
				t.Fatalf("%s chunks of %q = %q", name, s, cs)
			}
			for _, c := range cs {
				if c == "" {
					t.Fatalf("%s: empty chunk in %q", name, s)
				}
			}
		}
	}
}

// sameClassesInGo reports whether Go's unicode tables (which regexp2 uses)
// agree with the scanners' tables on every rune of s, and s has no long s
// (regexp2 does not fold ſ to s as the regex module does).
func sameClassesInGo(s string) bool {
	for _, r := range s {
		var c uint8
		if unicode.IsLetter(r) {
			c |= cL
		}
		if unicode.IsNumber(r) {
			c |= cN
		}
		if unicode.IsSpace(r) {
			c |= cS
		}
		if r == 0x17F || c != classOf(r) {
			return false
		}
	}
	return true
}

// The hand scanners must agree with regexp2 running the rewritten patterns:
// an independent implementation of the same regex.
func TestScannersMatchRegexp2(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, c := range []struct {
		name, pattern string
		hand          splitter
	}{
		{"gpt4", GPT4SplitPattern, splitGPT4},
		{"gpt2", GPT2SplitPattern, splitGPT2},
		{"gpt2-tiktoken", GPT2TiktokenSplitPattern, splitGPT2},
	} {
		rs, err := newRegexSplitter(c.pattern)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for n < 1500 {
			s := randText(rng)
			if rng.IntN(2) == 0 {
				s = randRunes(rng, true)
			}
			if !utf8.ValidString(s) && rng.IntN(2) == 0 {
				continue
			}
			if !sameClassesInGo(s) {
				continue
			}
			n++
			got, want := chunks(c.hand, s), chunks(rs.split, s)
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("%s split of %q:\nhand    %q\nregexp2 %q", c.name, s, got, want)
			}
		}
	}
}

func TestRewritePattern(t *testing.T) {
	cases := []struct{ in, out string }{
		{`a?+b`, `(?>a?)b`},
		{`[^\r\n\p{L}\p{N}]?+\p{L}+`, `(?>[^\r\n\p{L}\p{N}]?)\p{L}+`},
		{` ?[^\s\p{L}\p{N}]++[\r\n]*`, ` ?(?>[^\s\p{L}\p{N}]+)[\r\n]*`},
		{`(ab)*+c`, `(?>(ab)*)c`},
		{`x{2,3}+y{1}`, `(?>x{2,3})y{1}`},
		{`a+?b??`, `a+?b??`},
		{`\x41++`, `(?>\x41+)`},
		{`日*+`, `(?>日*)`},
		{`(?P<w>\w+)(?P=w)`, `(?<w>\w+)\k<w>`},
		{`a{b`, `a{b`},
		{`[]a]++`, `(?>[]a]+)`},
	}
	for _, c := range cases {
		got, err := RewritePattern(c.in)
		if err != nil || got != c.out {
			t.Errorf("RewritePattern(%q) = %q, %v; want %q", c.in, got, err, c.out)
		}
	}
	for _, bad := range []string{`(a`, `a)`, `[a`, `\`, `|++`} {
		if got, err := RewritePattern(bad); err == nil {
			t.Errorf("RewritePattern(%q) = %q, want an error", bad, got)
		}
	}
}

// A pattern that is neither course pattern goes through regexp2, with
// findall's rules: unmatched text is dropped, one group returns the group.
func TestRegexFallback(t *testing.T) {
	spec := func(p string) *Tokenizer {
		tk, err := FromSpec(map[string]any{"type": "bpe", "pattern": p, "merges": []any{[]any{97, 98}}})
		if err != nil {
			t.Fatal(err)
		}
		return tk
	}
	if got, want := spec(`\p{L}++`).Encode("ab1 é"), []int{256, 0xc3, 0xa9}; !reflect.DeepEqual(got, want) {
		t.Errorf("letters only: %v, want %v", got, want)
	}
	if got, want := spec(`x(a+)`).Encode("xaab xa"), []int{97, 97, 97}; !reflect.DeepEqual(got, want) {
		t.Errorf("one group: %v, want %v", got, want)
	}
	// Invalid UTF-8 keeps its bytes through the rune conversion.
	if got, want := spec(`.`).Encode("a\xffb"), []int{97, 0xff, 98}; !reflect.DeepEqual(got, want) {
		t.Errorf("invalid byte: %v, want %v", got, want)
	}
}

// naiveMerge is the course's loop written plainly, the reference for both
// merge paths.
func naiveMerge(tk *Tokenizer, chunk string) []int {
	ids := []int{}
	for i := 0; i < len(chunk); i++ {
		ids = append(ids, int(chunk[i]))
	}
	for len(ids) >= 2 {
		best := int32(-1)
		for i := 0; i+1 < len(ids); i++ {
			if r, ok := tk.ranks[pairKey(ids[i], ids[i+1])]; ok && (best < 0 || r < best) {
				best = r
			}
		}
		if best < 0 {
			break
		}
		p := tk.merges[best]
		var out []int
		for i := 0; i < len(ids); {
			if i+1 < len(ids) && ids[i] == p[0] && ids[i+1] == p[1] {
				out = append(out, 256+int(best))
				i += 2
			} else {
				out = append(out, ids[i])
				i++
			}
		}
		ids = out
	}
	return ids
}

func TestMergePaths(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	tks := []*Tokenizer{tiny(t)}
	if tk := realOrNil(); tk != nil {
		tks = append(tks, tk)
	}
	words := []string{"a", "b", "c", "aa", "ab", "abc", " ", "the", " the", "e", "he", "ing", "日", "x", "  "}
	old := heapThreshold
	defer func() { heapThreshold = old }()
	for _, tk := range tks {
		for range 1500 {
			var sb strings.Builder
			for n := rng.IntN(40); n > 0; n-- {
				sb.WriteString(words[rng.IntN(len(words))])
			}
			s := sb.String()
			want := naiveMerge(tk, s)
			heapThreshold = 1 << 30
			simple := tk.mergeChunk(nil, s)
			heapThreshold = 0
			heap := tk.mergeChunk([]int{-7}, s)[1:]
			if !equalIDs(simple, want) || !equalIDs(heap, want) {
				t.Fatalf("merge %q: simple %v heap %v, want %v", s, simple, heap, want)
			}
		}
	}
}

// Long chunks (a run of spaces, a long word) take the heap path end to end.
func TestLongChunks(t *testing.T) {
	for _, tk := range []*Tokenizer{tiny(t), realOrNil()} {
		if tk == nil {
			continue
		}
		for _, s := range []string{
			strings.Repeat(" ", 1000) + "x",
			strings.Repeat("ab", 500),
			strings.Repeat("a", 999),
			strings.Repeat("the", 300),
			strings.Repeat("!?", 300) + "\n",
		} {
			if got := tk.Decode(tk.Encode(s)); got != s {
				t.Errorf("round trip of a %d-byte chunk failed", len(s))
			}
			var want []int
			splitGPT4(s, func(c string) { want = append(want, naiveMerge(tk, c)...) })
			if got := tk.Encode(s); !reflect.DeepEqual(got, want) {
				t.Errorf("Encode of a %d-byte chunk differs from the plain loop", len(s))
			}
		}
	}
}

func TestConcurrentEncode(t *testing.T) {
	tk := tiny(t)
	done := make(chan bool)
	for g := range 4 {
		go func() {
			rng := rand.New(rand.NewPCG(uint64(g), 9))
			for range 300 {
				s := randText(rng)
				if tk.Decode(tk.Encode(s)) != s {
					t.Error("round trip failed under concurrency")
				}
			}
			done <- true
		}()
	}
	for range 4 {
		<-done
	}
}

func FuzzEncode(f *testing.F) {
	for _, s := range []string{"", "Once upon a time", "I'M here\r\n\r\n  x", "日本語 😀 <|endoftext|>", "\xe2\x82A\xff", "'ſ 'LL", "  \t\n\v  1234567"} {
		f.Add(s)
	}
	tks := []*Tokenizer{tiny(f)}
	if tk := realOrNil(); tk != nil {
		tks = append(tks, tk)
	}
	gpt2, err := New(tks[0].merges, []string{EndOfText}, GPT2SplitPattern)
	if err != nil {
		f.Fatal(err)
	}
	tks = append(tks, gpt2)
	f.Fuzz(func(t *testing.T, s string) {
		for _, tk := range tks {
			ids := tk.Encode(s)
			var b []byte
			for _, id := range ids {
				if id < 0 || id >= tk.Size()-len(tk.specials) {
					t.Fatalf("Encode(%q) gave id %d", s, id)
				}
				b = append(b, tk.TokenBytes(id)...)
			}
			if !bytes.Equal(b, []byte(s)) {
				t.Fatalf("pieces of Encode(%q) = %q", s, b)
			}
			if utf8.ValidString(s) {
				if got := tk.Decode(ids); got != s {
					t.Fatalf("Decode(Encode(%q)) = %q", s, got)
				}
				if got := tk.Decode(tk.EncodeSpecial(s)); got != s {
					t.Fatalf("Decode(EncodeSpecial(%q)) = %q", s, got)
				}
			}
		}
	})
}

func benchText(b *testing.B) (*Tokenizer, string) {
	tk := real(b)
	text, err := os.ReadFile(testmodels.Path(b, "text/TinyStories-valid-head.txt"))
	if err != nil {
		b.Fatal(err)
	}
	return tk, string(text)
}

// BenchmarkEncode is the chat case: the chunk cache is warm.
func BenchmarkEncode(b *testing.B) {
	tk, text := benchText(b)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tk.Encode(text)
	}
}

// BenchmarkEncodeCold clears the chunk cache before every pass.
func BenchmarkEncodeCold(b *testing.B) {
	tk, text := benchText(b)
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		tk.mu.Lock()
		clear(tk.cache)
		tk.mu.Unlock()
		tk.Encode(text)
	}
}

// naiveSpecial is EncodeSpecial's cutting rule done the slow obvious way.
func naiveSpecial(tk *Tokenizer, text string) []int {
	out := []int{}
	for {
		at, which := -1, -1
		for j, s := range tk.specials {
			if i := strings.Index(text, s); i >= 0 && (at < 0 || i < at) {
				at, which = i, j
			}
		}
		if at < 0 {
			return append(out, tk.Encode(text)...)
		}
		out = append(out, tk.Encode(text[:at])...)
		out = append(out, len(tk.vocab)+which)
		text = text[at+len(tk.specials[which]):]
	}
}

func TestEncodeSpecialRandom(t *testing.T) {
	tk, err := New([][2]int{{97, 98}}, []string{"bc", "abcd", "ab", "<|endoftext|>", "a"}, GPT4SplitPattern)
	if err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewPCG(13, 14))
	for range 2000 {
		s := randText(rng, "bc", "abcd", "ab", "<|endoftext|>", "a", "abc", "cd")
		if got, want := tk.EncodeSpecial(s), naiveSpecial(tk, s); !equalIDs(got, want) {
			t.Fatalf("EncodeSpecial(%q) = %v, want %v", s, got, want)
		}
	}
}

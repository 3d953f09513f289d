package llama

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"chat/models/gguf"
	"chat/models/testmodels"
)

// preTypes are the tokenizer.ggml.pre values TestPreTokenizersLlamaCpp
// checks: one of each older kind, and every one added with the regex
// scanners of gpt2bpe's pretok_more.go.
var preTypes = []string{
	"default", "gpt-2", "llama-bpe", "qwen2", "qwen35", "starcoder", "falcon", "deepseek-llm", "deepseek-coder",
	"tekken", "gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2", "granite-embed-multi-97m", "tiny_aya", "cohere2moe",
	"youtu", "deepseek-v3", "hunyuan-dense", "joyai-llm", "afmoe", "kimi-k2", "bailingmoe", "bailingmoe2", "llada-moe",
	"seed-coder", "exaone-moe", "jais-2", "minicpm5", "laguna", "bloom", "gpt3-finnish", "poro-chat", "viking",
	"chameleon", "superbpe",
}

// aliasTypes are the other names llama.cpp knows for those kinds (its flags
// may differ: ignore_merges, clean_spaces), checked on Llama 3's vocabulary
// only.
var aliasTypes = []string{
	"a.x-4.0", "chatglm-bpe", "codeshell", "command-r", "dbrx", "deepseek-r1-qwen", "exaone", "exaone4",
	"f2llmv2", "falcon-h1", "falcon3", "gigachat", "glm4", "granite-docling", "grok-2", "hunyuan", "jais",
	"jina-de", "jina-es", "jina-v1-en", "jina-v2-code", "jina-v2-de", "jina-v2-es", "jina-v5-nano", "kormo",
	"lfm2", "llama-v3", "llama3", "megrez", "mellum", "mellum2", "midm-2.0", "minerva-7b", "modern-bert", "mpt",
	"olmo", "phi-2", "pixtral", "refact", "roberta-bpe", "smaug-bpe", "smollm", "solar-open", "stablelm2",
	"trillion",
}

// preTexts are texts that tell the pre-tokenizers apart.
var preTexts = []string{
	"I'm sure you'll see they've done it; we'd said he's right, THEY'RE sure and I'LL go. 'tis O'Neil's",
	"1 22 333 4444 55555 666666 7777777 12345678901234567890 3.14159 1,000,000 $42.50 ²³ ٣٤٥ ١٢٣٤ ⅫⅣ",
	"func main() {\n\tfmt.Println(\"hi\") // x<=y && a!=b\n\treturn x->y::z\n}\n\n\n    indented\r\n  \t end",
	"这是一个测试。日本語のテキスト、カタカナとひらがな。한국어 텍스트입니다! ㄅㄆㄇ 豈更",
	"مرحبا بالعالم، كيف حالك؟ שלום עולם. ۔ ، ।",
	"emoji 🦙🚀👍🏽 family 👨‍👩‍👧 flags 🇫🇷 ❤️",
	"Café naïve résumé ÉCOLE École Ünïcödé e\u0301 A\u0308bc ÀÉÎÕÜ ǅ ʰ ꟸ ß ẞ ΣΊΣΥΦΟΣ ἀρχή Привет МИР",
	"   leading and trailing   \n\n \t\t\n\r\n  ",
	"wait... what?!?! (yes) [no] {maybe} <tag> --- *** ___ ~~~ ``` ''' \"\" ;;; ::: /// \\\\",
	"HelloWorld camelCase snake_case SCREAMING_CASE kebab-case PascalCase iPhone McDonald's ABCdef",
	"<sentinel:12> IMGIMGABZ IMGIMGABCDEZ IMGIMGJZ <|endoftext|> <|begin_of_text|>",
	"ไทย ລາວ ខ្មែរ မြန်မာ ꩠ ･ｶﾀｶﾅ ⼀⼁ ᄀ",
	"a b c d e f hello world  two  spaces   three\u00a0nbsp\u3000ideographic\u2028line",
	"http://example.com/path?q=1&r=2#frag user@mail.org C:\\Users\\x file.txt v1.2.3-beta+build.5",
	"x/y\n/\n//\n\r\n/ab/ 12/34/56 ab/\ncd",
	"\x01\x02 ctrl\x7f \u200b zero\u200dwidth \ufeffbom \ue000private",
	"1234567 a1234567b 12345x67 ١٢٣4567 ab123 123ab ..123.. 00000",
	"x  123   4567\t 89  \n  12 a  b   c\t\td  .  !!  é",
	"ÜBER ÉTATS-UNIS ÀbC aÉb ÉÉa DŽungla ǅemal",
}

// TestPreTokenizersLlamaCpp writes, for each pre-tokenizer, a tiny model
// whose tokenizer is Llama 3's real vocabulary (ggml-vocab-llama-bpe.gguf)
// with that tokenizer.ggml.pre, and checks that chat and llama.cpp give the
// same ids for varied texts and the .inp texts of every vocabulary test
// file, with and without special-token parsing, and that the ids decode to
// the same text (llama.cpp's clean_spaces differs by pre-tokenizer). One
// llama.cpp process does all the models.
func TestPreTokenizersLlamaCpp(t *testing.T) {
	testmodels.NeedLlamaCpp(t)
	texts := slices.Clone(preTexts)
	inps, _ := filepath.Glob(filepath.Join(testmodels.Dir(t), "vocab", "*.inp"))
	seen := map[string]bool{}
	for _, f := range inps {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range strings.Split(string(b), "\n__ggml_vocab_test__\n") {
			if !seen[s] {
				seen[s] = true
				texts = append(texts, s)
			}
		}
	}
	texts = append(texts, mixedTexts(120, 24)...)
	vocab, err := gguf.Open(testmodels.Path(t, "vocab/ggml-vocab-llama-bpe.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer vocab.Close()
	var realKV []gguf.KV
	for _, kv := range vocab.KV {
		if strings.HasPrefix(kv.Key, "tokenizer.") {
			realKV = append(realKV, kv)
		}
	}
	toks, merges := revealingVocab(texts, 12)
	types := make([]int32, len(toks))
	for i := range types {
		types[i] = 1
	}
	revealKV := []gguf.KV{
		{Key: "tokenizer.ggml.model", Type: gguf.String, Value: "gpt2"},
		{Key: "tokenizer.ggml.pre", Type: gguf.String, Value: ""},
		{Key: "tokenizer.ggml.tokens", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.String, Data: toks}},
		{Key: "tokenizer.ggml.token_type", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.Int32, Data: types}},
		{Key: "tokenizer.ggml.merges", Type: gguf.Array, Value: gguf.ArrayValue{Elem: gguf.String, Data: merges}},
	}
	type model struct{ pre, vocab string }
	var models []model
	var reqs []testmodels.TokenizeRequest
	for _, pre := range append(preTypes, aliasTypes...) {
		for _, v := range []struct {
			name string
			kv   []gguf.KV
		}{{"llama-bpe", realKV}, {"revealing", revealKV}} {
			if v.name == "revealing" && slices.Contains(aliasTypes, pre) {
				continue
			}
			models = append(models, model{pre, v.name})
			reqs = append(reqs, testmodels.TokenizeRequest{Model: writeVocabModel(t, v.kv, pre), Texts: texts})
		}
	}
	res := testmodels.LlamaCppTokenize(t, reqs)
	for i, md := range models {
		if res[i].Error != "" {
			t.Errorf("%s (%s): llama.cpp: %s", md.pre, md.vocab, res[i].Error)
			continue
		}
		m := loadT(t, reqs[i].Model)
		tok := m.Tokenizer()
		bad := 0
		for j, s := range texts {
			got, gotSp := tok.Encode(s), tok.EncodeSpecial(s)
			if !slices.Equal(got, nonNil(res[i].Tokens[j])) || !slices.Equal(gotSp, nonNil(res[i].TokensSpecial[j])) {
				if bad++; bad <= 3 {
					t.Errorf("%s (%s) %q:\n chat      %v\n llama.cpp %v\n (special: chat %v, llama.cpp %v)",
						md.pre, md.vocab, s, got, res[i].Tokens[j], gotSp, res[i].TokensSpecial[j])
				}
			} else if d := tok.Decode(got); d != res[i].Detok[j] {
				// clean_spaces, which llama.cpp sets per pre-tokenizer.
				if bad++; bad <= 3 {
					t.Errorf("%s (%s) %q: chat decodes %q, llama.cpp %q", md.pre, md.vocab, s, d, res[i].Detok[j])
				}
			}
		}
		if bad > 0 {
			t.Errorf("%s (%s): %d of %d texts differ", md.pre, md.vocab, bad, len(texts))
		} else {
			t.Logf("%s (%s): %d texts agree", md.pre, md.vocab, len(texts))
		}
		m.Close()
	}
}

// mixedTexts are n pseudo-random strings of 1 to maxLen characters drawn
// from the characters the expressions tell apart: ASCII and non-ASCII
// letters of each case, marks, digits, newlines and other whitespace,
// punctuation, symbols, contractions, Han, kana, Hangul, Thai.
func mixedTexts(n, maxLen int) []string {
	alphabet := []string{"a", "b", "Z", "Q", "É", "é", "ǅ", "ß", "\u0301", "\u0e31", " ", " ", "  ", "\n", "\r\n", "\t",
		"\u00a0", "\u3000", "0", "7", "٣", "²", "!", ".", ",", "'", "'s", "'LL", "/", "$", "(", "|", "…", "、", "中", "豈",
		"の", "カ", "한", "ㄅ", "ไ", "🙂", "\u200d", "\x01", "<", "-", "_"}
	x := uint32(12345)
	next := func(k int) int {
		x ^= x << 13
		x ^= x >> 17
		x ^= x << 5
		return int(x % uint32(k))
	}
	out := make([]string, n)
	for i := range out {
		var b strings.Builder
		for range 1 + next(maxLen) {
			b.WriteString(alphabet[next(len(alphabet))])
		}
		out[i] = b.String()
	}
	return out
}

// writeVocabModel writes a tiny Llama model with the tokenizer metadata kv
// (tokenizer.ggml.pre set to pre) and a zero embedding of its size.
func writeVocabModel(t *testing.T, kv []gguf.KV, pre string) string {
	return writeSpec(t, archSpec("llama3", gguf.TypeF32), func(meta []gguf.KV, ts []gguf.WriteTensor) ([]gguf.KV, []gguf.WriteTensor) {
		var out []gguf.KV
		for _, kv := range meta {
			if !strings.HasPrefix(kv.Key, "tokenizer.") {
				out = append(out, kv)
			}
		}
		n := 0
		for _, kv := range kv {
			switch kv.Key {
			case "tokenizer.ggml.pre":
				kv = gguf.KV{Key: kv.Key, Type: gguf.String, Value: pre}
			case "tokenizer.ggml.tokens":
				n = kv.Value.(gguf.ArrayValue).Len()
			}
			out = append(out, kv)
		}
		ts = slices.DeleteFunc(ts, func(w gguf.WriteTensor) bool { return w.Name == "output.weight" })
		for i := range ts {
			if ts[i].Name == "token_embd.weight" {
				ts[i].Dims[1] = int64(n)
				ts[i].Data = make([]float32, int(ts[i].Dims[0])*n)
			}
		}
		return out, ts
	})
}

// revealingVocab is a byte-level BPE vocabulary in which every word of up
// to maxLen bytes that occurs in texts becomes one token: the 256 bytes,
// every such substring, and a merge for each way of cutting a substring in
// two, shorter results first. BPE then undoes nothing of the
// pre-tokenizer's work and only its cuts show in the ids, where a real
// vocabulary often gives the same ids for different cuts.
func revealingVocab(texts []string, maxLen int) (tokens, merges []string) {
	var b2u [256]rune
	n := 0
	for b := 0; b < 256; b++ {
		if b >= '!' && b <= '~' || b >= 0xA1 && b <= 0xAC || b >= 0xAE {
			b2u[b] = rune(b)
		} else {
			b2u[b] = rune(256 + n)
			n++
		}
	}
	enc := func(bs []byte) string {
		var sb strings.Builder
		for _, b := range bs {
			sb.WriteRune(b2u[b])
		}
		return sb.String()
	}
	seen := map[string]bool{}
	for b := 0; b < 256; b++ {
		s := enc([]byte{byte(b)})
		tokens = append(tokens, s)
		seen[s] = true
	}
	byLen := make([][]string, maxLen+1)
	for _, text := range texts {
		bs := []byte(text)
		for i := range bs {
			for l := 2; l <= maxLen && i+l <= len(bs); l++ {
				w := bs[i : i+l]
				s := enc(w)
				if seen[s] {
					continue
				}
				seen[s] = true
				tokens = append(tokens, s)
				for k := 1; k < l; k++ {
					byLen[l] = append(byLen[l], enc(w[:k])+" "+enc(w[k:]))
				}
			}
		}
	}
	for _, ms := range byLen {
		merges = append(merges, ms...)
	}
	return tokens, merges
}

func nonNil(ids []int) []int {
	if ids == nil {
		return []int{}
	}
	return ids
}

// TestVocabFilesLlamaCpp (CHAT_LLAMACPP=1) tokenizes preTexts and every
// test-vector input under each shared vocabulary file's own tokenizer
// (SentencePiece and byte-level BPE; not bert-bge's WordPiece, which this
// app does not read), in llama.cpp and here: the files without vectors
// (baichuan, gpt-neox) included, and special-token text parsed too.
func TestVocabFilesLlamaCpp(t *testing.T) {
	testmodels.NeedLlamaCpp(t)
	texts := slices.Clone(preTexts)
	inps, _ := filepath.Glob(filepath.Join(testmodels.Dir(t), "vocab", "*.inp"))
	for _, f := range inps {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, strings.Split(string(b), "\n__ggml_vocab_test__\n")...)
	}
	files, _ := filepath.Glob(filepath.Join(testmodels.Dir(t), "vocab", "ggml-vocab-*.gguf"))
	var names []string
	var reqs []testmodels.TokenizeRequest
	for _, p := range files {
		f, err := gguf.Open(p)
		if err != nil {
			t.Fatal(err)
		}
		model, _ := f.String("tokenizer.ggml.model")
		pre, _ := f.String("tokenizer.ggml.pre")
		var kv []gguf.KV
		for _, x := range f.KV {
			if strings.HasPrefix(x.Key, "tokenizer.") {
				kv = append(kv, x)
			}
		}
		f.Close()
		if model != "llama" && model != "gpt2" {
			continue
		}
		names = append(names, filepath.Base(p))
		reqs = append(reqs, testmodels.TokenizeRequest{Model: writeVocabModel(t, kv, pre), Texts: texts})
	}
	res := testmodels.LlamaCppTokenize(t, reqs)
	for i, name := range names {
		if res[i].Error != "" {
			t.Errorf("%s: llama.cpp: %s", name, res[i].Error)
			continue
		}
		m := loadT(t, reqs[i].Model)
		tok := m.Tokenizer()
		bad := 0
		for j, s := range texts {
			got, gotSp := tok.Encode(s), tok.EncodeSpecial(s)
			if !slices.Equal(got, nonNil(res[i].Tokens[j])) || !slices.Equal(gotSp, nonNil(res[i].TokensSpecial[j])) {
				if bad++; bad <= 3 {
					t.Errorf("%s %q:\n chat      %v\n llama.cpp %v\n (special: chat %v, llama.cpp %v)", name, s, got, res[i].Tokens[j], gotSp, res[i].TokensSpecial[j])
				}
			}
		}
		if bad > 0 {
			t.Errorf("%s: %d of %d texts differ", name, bad, len(texts))
		} else {
			t.Logf("%s: %d texts agree", name, len(texts))
		}
		m.Close()
	}
}

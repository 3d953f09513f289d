// Package gpt2bpe is llama.cpp's byte-level BPE tokenizer ("gpt2" in
// tokenizer.ggml.model: GPT-2, Llama 3, Qwen2, StarCoder, Falcon, DeepSeek,
// ...) built from GGUF metadata: a pre-tokenizer chosen by
// tokenizer.ggml.pre splits the text into words, each word's UTF-8 bytes
// are shown in GPT-2's byte alphabet, and the merges of
// tokenizer.ggml.merges are applied lowest rank first
// (llm_tokenizer_bpe_session in src/llama-vocab.cpp). Special tokens are
// split out first (tokenizer_st_partition), and the special ids follow
// llama_vocab::impl::load, including the tokens it recognises by their text
// (<|eot_id|>, <|im_end|>, ...). Encode gives llama_tokenize's ids.
//
// FromGGUF builds a Tokenizer; the llama loader picks this package or spm
// by tokenizer.ggml.model.
package gpt2bpe

import (
	"fmt"
	"sort"
	"sync"

	"chat/models/gguf"
	"chat/models/quote"
	"chat/models/tokenizer/llamavocab"
)

// Token types as stored in tokenizer.ggml.token_type.
const (
	TypeNormal      = 1
	TypeUnknown     = 2
	TypeControl     = 3
	TypeUserDefined = 4
	TypeUnused      = 5
	TypeByte        = 6
)

// Tokenizer is a byte-level BPE vocabulary. It is safe for concurrent use
// (only its word cache changes).
type Tokenizer struct {
	texts   []string
	types   []int32
	attrs   []attr // types as llama.cpp's attribute bits, after its overrides
	ids     map[string]int
	merges  *mergeTable
	pieces  [][]byte
	special []int // control/user-defined/unknown ids, longest text first
	steps   []step
	pre     string

	bos, eos, eot         int
	eog                   map[int]bool
	addBOS, addEOS        bool
	ignoreMerges, cleanUp bool

	mu    sync.Mutex
	cache map[string][]int // byte-level word -> its ids
}

// The word cache holds short words only and starts over when full, so its
// memory stays bounded whatever the input.
const (
	maxCachedWord = 64
	maxCache      = 1 << 15
)

// Vocab is the raw material of a Tokenizer, as GGUF stores it.
type Vocab struct {
	Tokens        []string
	Types         []int32  // nil means all normal
	Merges        []string // "left right", in rank order
	Pre           string   // tokenizer.ggml.pre
	BOS, EOS, EOT int      // -1 when absent
	AddBOS        bool
	AddEOS        bool

	// meta holds the other special ids FromGGUF found (eom, fim_pre, ...).
	meta map[string]int
}

// attr is llama.cpp's llama_token_attr: a token type as bits, so that the
// loader's overrides can add to it.
type attr uint8

const (
	attrUnknown attr = 1 << iota
	attrUnused
	attrNormal
	attrControl
	attrUserDefined
	attrByte
)

func attrOf(typ int32) attr {
	switch typ {
	case TypeNormal:
		return attrNormal
	case TypeUnknown:
		return attrUnknown
	case TypeControl:
		return attrControl
	case TypeUserDefined:
		return attrUserDefined
	case TypeUnused:
		return attrUnused
	case TypeByte:
		return attrByte
	}
	return 0 // undefined
}

// Special tokens llama.cpp recognises by their text when the metadata does
// not name them (llama_vocab::impl::load); it marks them control tokens.
// Where several are present llama.cpp takes whichever its hash map yields
// first; here the first in list order wins.
var (
	eotTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>",
		"<|end_of_text|>", "<EOT>", "_<EOT>", "[EOT]", "<｜end▁of▁sentence｜>", "<end_of_utterance>"}
	// Per metadata key suffix: eom, then the FIM tokens.
	textSpecials = []struct {
		key   string
		eog   bool
		texts []string
	}{
		{"eom_token_id", true, []string{"<|eom_id|>"}},
		{"fim_pre_token_id", false, []string{"<|fim_prefix|>", "<fim-prefix>", "<fim_prefix>", "<｜fim▁begin｜>", "<PRE>", "▁<PRE>", "<|code_prefix|>", "<|prefix|>"}},
		{"fim_suf_token_id", false, []string{"<|fim_suffix|>", "<fim-suffix>", "<fim_suffix>", "<｜fim▁hole｜>", "<SUF>", "▁<SUF>", "<|code_suffix|>", "<|suffix|>"}},
		{"fim_mid_token_id", false, []string{"<|fim_middle|>", "<fim-middle>", "<fim_middle>", "<｜fim▁end｜>", "<MID>", "▁<MID>", "<|code_middle|>", "<|middle|>"}},
		{"fim_pad_token_id", true, []string{"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]"}},
		{"fim_rep_token_id", true, []string{"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>"}},
		{"fim_sep_token_id", true, []string{"<|file_sep|>"}},
	}
	// End-of-generation texts; llama.cpp marks them control tokens too.
	eogTexts = []string{"<|eot_id|>", "<|im_end|>", "<|end|>", "<|return|>", "<|call|>", "<|flush|>", "<|calls|>",
		"<end_of_turn>", "<|endoftext|>", "</s>", "<|eom_id|>", "<EOT>", "_<EOT>", "[EOT]", "[EOS]",
		"<|end_of_text|>", "<end_of_utterance>", "<eos>", "<turn|>", "<|tool_response>", "<｜end▁of▁sentence｜>", "[e~["}
	// gpt-oss tokens llama.cpp always renders: it makes them user-defined.
	alwaysRendered = []string{"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>"}
)

// Model is the tokenizer.ggml.model value of byte-level BPE vocabularies.
const Model = "gpt2"

// FromGGUF builds the tokenizer from a GGUF file's tokenizer.ggml.* keys,
// with llama.cpp's defaults for BPE vocabularies.
func FromGGUF(f *gguf.File) (*Tokenizer, error) {
	model, _ := f.String("tokenizer.ggml.model")
	if model != Model {
		return nil, fmt.Errorf("gpt2bpe: tokenizer.ggml.model is %s, want %q", quote.Quote(model), Model)
	}
	v := Vocab{BOS: 11, EOS: 11, EOT: -1}
	var ok bool
	if v.Tokens, ok = f.Strings("tokenizer.ggml.tokens"); !ok {
		return nil, fmt.Errorf("gpt2bpe: tokenizer.ggml.tokens missing or not a string array")
	}
	if v.Merges, ok = f.Strings("tokenizer.ggml.merges"); !ok {
		return nil, fmt.Errorf("gpt2bpe: tokenizer.ggml.merges missing or not a string array")
	}
	if f.Has("tokenizer.ggml.token_type") {
		ints, ok := f.Ints("tokenizer.ggml.token_type")
		if !ok {
			return nil, fmt.Errorf("gpt2bpe: tokenizer.ggml.token_type is not an integer array")
		}
		v.Types = make([]int32, len(ints))
		for i, x := range ints {
			v.Types[i] = int32(x)
		}
	}
	if f.Has("tokenizer.ggml.pre") {
		if v.Pre, ok = f.String("tokenizer.ggml.pre"); !ok {
			return nil, fmt.Errorf("gpt2bpe: tokenizer.ggml.pre is not a string")
		}
	}
	switch v.Pre {
	case "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano",
		"tekken", "chameleon":
		v.AddBOS = true
	case "glm4", "chatglm-bpe":
		v.BOS = -1 // llama.cpp: no default BOS for ChatGLM
	}
	// An id out of range keeps the default, as llama.cpp does.
	for key, dst := range map[string]*int{
		"tokenizer.ggml.bos_token_id": &v.BOS,
		"tokenizer.ggml.eos_token_id": &v.EOS,
		"tokenizer.ggml.eot_token_id": &v.EOT,
	} {
		if id, ok := f.Uint(key); ok && id < uint64(len(v.Tokens)) {
			*dst = int(id)
		}
	}
	v.meta = map[string]int{}
	for _, sp := range textSpecials {
		if id, ok := f.Uint("tokenizer.ggml." + sp.key); ok && id < uint64(len(v.Tokens)) {
			v.meta[sp.key] = int(id)
		}
	}
	// Older files name three FIM ids differently.
	for old, key := range map[string]string{"prefix_token_id": "fim_pre_token_id",
		"suffix_token_id": "fim_suf_token_id", "middle_token_id": "fim_mid_token_id"} {
		if id, ok := f.Uint("tokenizer.ggml." + old); ok && id < uint64(len(v.Tokens)) {
			v.meta[key] = int(id)
		}
	}
	if f.Has("tokenizer.ggml.add_bos_token") {
		if v.AddBOS, ok = f.Bool("tokenizer.ggml.add_bos_token"); !ok {
			return nil, fmt.Errorf("gpt2bpe: tokenizer.ggml.add_bos_token is not a bool")
		}
	}
	if b, ok := f.Bool("tokenizer.ggml.add_eos_token"); ok {
		v.AddEOS = b
	}
	return New(v)
}

// New builds a tokenizer from a vocabulary.
func New(v Vocab) (*Tokenizer, error) {
	n := len(v.Tokens)
	if n == 0 {
		return nil, fmt.Errorf("gpt2bpe: empty vocabulary")
	}
	if v.Types != nil && len(v.Types) < n {
		return nil, fmt.Errorf("gpt2bpe: %d token types for %d tokens", len(v.Types), n)
	}
	steps, err := pretokenizer(v.Pre)
	if err != nil {
		return nil, err
	}
	t := &Tokenizer{
		texts: make([]string, n), types: make([]int32, n), attrs: make([]attr, n),
		eog:    map[int]bool{},
		ids:    make(map[string]int, n),
		pieces: make([][]byte, n), steps: steps,
		bos: validID(v.BOS, n), eos: validID(v.EOS, n), eot: validID(v.EOT, n),
		addBOS: v.AddBOS, addEOS: v.AddEOS,
		cleanUp: true,
		cache:   map[string][]int{},
		pre:     v.Pre,
	}
	switch v.Pre {
	case "llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0", "lfm2", "jina-v5-nano", "minicpm5":
		t.ignoreMerges = true
	case "tekken", "youtu", "granite-embed-multi-97m":
		t.ignoreMerges = true
		t.cleanUp = false
	case "deepseek-llm", "deepseek-coder", "qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "command-r", "smollm", "trillion",
		"granite-docling", "solar-open", "hunyuan", "grok-2", "qwen35",
		"deepseek-v3", "hunyuan-dense", "joyai-llm", "poro-chat", "viking", "chameleon", "gpt-4o", "llama4", "kanana2",
		"talkie", "tiny_aya", "cohere2moe", "superbpe", "bailingmoe", "bailingmoe2", "llada-moe", "seed-coder", "kimi-k2",
		"afmoe", "laguna", "minimax-m2":
		t.cleanUp = false // llama.cpp turns clean_spaces off for these
	}
	for i, s := range v.Tokens {
		if s == "" {
			s = fmt.Sprintf("[EMPTY_%d]", i)
		}
		if j, dup := t.ids[s]; dup {
			return nil, fmt.Errorf("gpt2bpe: duplicate token %s has ids %d and %d", quote.Quote(s), j, i)
		}
		t.ids[s] = i
		t.texts[i] = s
		t.types[i] = TypeNormal
		if v.Types != nil {
			t.types[i] = v.Types[i]
		}
		t.attrs[i] = attrOf(t.types[i])
	}
	if t.addBOS && t.bos < 0 {
		// llama.cpp refuses this too (check_add_special_token).
		return nil, fmt.Errorf("gpt2bpe: add_bos_token is set but the BOS id is missing or out of range")
	}
	t.textSpecials(v.meta)
	if t.merges, err = newMergeTable(v.Merges, t.ids); err != nil {
		return nil, err
	}
	for i := range t.texts {
		t.pieces[i] = t.piece(i)
		if t.attrs[i]&(attrControl|attrUserDefined|attrUnknown) != 0 {
			t.special = append(t.special, i)
		}
	}
	sort.SliceStable(t.special, func(a, b int) bool {
		return len(t.texts[t.special[a]]) > len(t.texts[t.special[b]])
	})
	return t, nil
}

// textSpecials applies llama.cpp's text-based special tokens: the EOT and
// EOM ids and the FIM ids when the metadata names none, the
// end-of-generation set, and the attribute overrides that come with them.
func (t *Tokenizer) textSpecials(meta map[string]int) {
	control := func(s string) int {
		id, ok := t.ids[s]
		if !ok {
			return -1
		}
		t.attrs[id] |= attrControl
		return id
	}
	firstOf := func(texts []string) int {
		for _, s := range texts {
			if id := control(s); id >= 0 {
				return id
			}
		}
		return -1
	}
	if t.eot < 0 {
		t.eot = firstOf(eotTexts)
	}
	for _, sp := range textSpecials {
		id, ok := meta[sp.key]
		if !ok {
			id = firstOf(sp.texts)
		}
		if id >= 0 && sp.eog {
			t.eog[id] = true
		}
	}
	for _, s := range eogTexts {
		if id := control(s); id >= 0 {
			t.eog[id] = true
		}
	}
	for _, s := range alwaysRendered {
		if id, ok := t.ids[s]; ok {
			t.attrs[id] = attrUserDefined
		}
	}
	for _, id := range []int{t.eos, t.eot} {
		if id >= 0 {
			t.eog[id] = true
		}
	}
	// o200k_harmony and solar-open: there <|end|> ends a message, not the
	// generation.
	has := func(s string) bool { id, ok := t.ids[s]; return ok && t.eog[id] }
	if has("<|end|>") && (has("<|return|>") && has("<|call|>") || has("<|calls|>") && has("<|flush|>")) {
		id := t.ids["<|end|>"]
		delete(t.eog, id)
		t.attrs[id] = attrUserDefined
	}
}

func validID(id, n int) int {
	if id < 0 || id >= n {
		return -1
	}
	return id
}

// piece is token_to_piece with special=true: special tokens give their text,
// normal tokens their byte-alphabet text decoded back to bytes.
func (t *Tokenizer) piece(id int) []byte {
	s, a := t.texts[id], t.attrs[id]
	switch {
	case a&(attrControl|attrUnknown|attrUserDefined) != 0:
		return []byte(s)
	case a&attrNormal != 0:
		var out []byte
		for _, r := range decodeRunes(s) {
			if b, ok := runeByte[r]; ok {
				out = append(out, b)
			} else {
				// llama_decode_text's marker for a rune outside the alphabet
				out = append(out, fmt.Sprintf("[UNK_BYTE_0x%x%s]", appendUTF8(nil, r), s)...)
			}
		}
		return out
	case a&attrByte != 0:
		var b byte
		if len(s) == 6 && s[:3] == "<0x" && s[5] == '>' {
			if _, err := fmt.Sscanf(s[3:5], "%02X", &b); err == nil {
				return []byte{b}
			}
		}
	}
	return nil
}

// Pre is the tokenizer.ggml.pre value ("" for llama.cpp's default).
func (t *Tokenizer) Pre() string { return t.pre }

// Size is the number of tokens.
func (t *Tokenizer) Size() int { return len(t.texts) }

// BOS is the id prepended to a prompt, or -1 when the model takes none.
func (t *Tokenizer) BOS() int {
	if !t.addBOS {
		return -1
	}
	return t.bos
}

// EOS is the end-of-sequence id, or -1.
func (t *Tokenizer) EOS() int { return t.eos }

// AppendedEOS is the id appended to a text tokenized with its special
// tokens (tokenizer.ggml.add_eos_token, as an embedding model such as
// Qwen3-Embedding asks), or -1 when none is.
func (t *Tokenizer) AppendedEOS() int {
	if !t.addEOS {
		return -1
	}
	return t.eos
}

// EOT is the end-of-turn id: tokenizer.ggml.eot_token_id, else a token
// llama.cpp recognises by its text (<|eot_id|>, <|im_end|>, <|endoftext|>,
// ...), else EOS.
func (t *Tokenizer) EOT() int {
	if t.eot >= 0 {
		return t.eot
	}
	return t.eos
}

// IsEOG reports whether id ends generation in llama.cpp
// (llama_vocab_is_eog): EOS, EOT and the tokens it recognises by text, e.g.
// both <|end_of_text|> and <|eot_id|> for Llama 3.
func (t *Tokenizer) IsEOG(id int) bool { return t.eog[id] }

// EOG lists the end-of-generation ids in increasing order.
func (t *Tokenizer) EOG() []int {
	out := make([]int, 0, len(t.eog))
	for id := range t.eog {
		out = append(out, id)
	}
	sort.Ints(out)
	return out
}

// AddBOS reports whether a prompt gets BOS prepended.
func (t *Tokenizer) AddBOS() bool { return t.addBOS }

// Text is the token's text as the vocabulary stores it ("Ġthe").
func (t *Tokenizer) Text(id int) string {
	if id < 0 || id >= len(t.texts) {
		return ""
	}
	return t.texts[id]
}

// Type is the token's type as stored (TypeNormal, ...), or -1 out of range.
func (t *Tokenizer) Type(id int) int {
	if id < 0 || id >= len(t.types) {
		return -1
	}
	return int(t.types[id])
}

// IsControl reports whether id is a control token: stored as one, or
// recognised by its text like <|eot_id|>. Decode renders such tokens as
// nothing and Encode treats their text as plain text.
func (t *Tokenizer) IsControl(id int) bool {
	return id >= 0 && id < len(t.attrs) && t.attrs[id]&attrControl != 0
}

// IsSpecial reports whether id is anything but a normal or byte token
// (control, user-defined, unknown, unused, undefined, or recognised by its
// text like <|eot_id|>; out of range too): constrained decoding allows such
// tokens only as an end token.
func (t *Tokenizer) IsSpecial(id int) bool {
	return id < 0 || id >= len(t.attrs) || t.attrs[id]&(attrNormal|attrByte) == 0 || t.attrs[id]&attrControl != 0
}

// StripsLeadingSpace is false: byte-level BPE adds no space prefix.
func (t *Tokenizer) StripsLeadingSpace() bool { return false }

// TokenBytes is the raw bytes of id (a special token gives its text); nil
// when out of range. The slice is shared; do not modify it.
func (t *Tokenizer) TokenBytes(id int) []byte {
	if id < 0 || id >= len(t.pieces) {
		return nil
	}
	return t.pieces[id]
}

// Encode tokenizes text with special-token texts as plain characters (except
// user-defined tokens, which llama.cpp always matches) and no BOS.
func (t *Tokenizer) Encode(text string) []int { return t.Tokenize(text, false, false) }

// EncodeSpecial is Encode with control-token texts recognised.
func (t *Tokenizer) EncodeSpecial(text string) []int { return t.Tokenize(text, false, true) }

// Tokenize is llama_tokenize for a BPE vocabulary.
func (t *Tokenizer) Tokenize(text string, addSpecial, parseSpecial bool) []int {
	var out []int
	if addSpecial && t.addBOS && t.bos >= 0 {
		out = append(out, t.bos)
	}
	for _, fr := range t.partition(text, parseSpecial) {
		if fr.ID >= 0 {
			out = append(out, fr.ID)
			continue
		}
		cpts := decodeRunes(fr.Text)
		var w []byte
		for _, sp := range pretokenize(t.steps, cpts) {
			w = byteEncode(w[:0], cpts[sp.start:sp.end])
			out = t.cachedWord(w, out)
		}
	}
	if addSpecial && t.addEOS && t.eos >= 0 {
		out = append(out, t.eos)
	}
	return out
}

// cachedWord is word with a cache in front.
func (t *Tokenizer) cachedWord(w []byte, out []int) []int {
	if len(w) > maxCachedWord {
		return t.word(string(w), out)
	}
	t.mu.Lock()
	ids, ok := t.cache[string(w)]
	t.mu.Unlock()
	if ok {
		return append(out, ids...)
	}
	n := len(out)
	out = t.word(string(w), out)
	ids = append([]int(nil), out[n:]...)
	t.mu.Lock()
	if len(t.cache) >= maxCache {
		clear(t.cache)
	}
	t.cache[string(w)] = ids
	t.mu.Unlock()
	return out
}

// partition splits text around special-token texts (llama.cpp's
// tokenizer_st_partition); control and unknown tokens only when
// parseSpecial.
func (t *Tokenizer) partition(text string, parseSpecial bool) []llamavocab.Fragment {
	return llamavocab.Partition(text, t.special, func(id int) string { return t.texts[id] }, func(id int) bool {
		return parseSpecial || t.attrs[id]&(attrControl|attrUnknown) == 0
	})
}

// Detokenize is llama_detokenize: the pieces of ids, control tokens rendered
// only when unparseSpecial, then llama.cpp's clean-up of spaces before
// punctuation and contractions when the vocabulary asks for it.
func (t *Tokenizer) Detokenize(ids []int, removeSpecial, unparseSpecial bool) []byte {
	if removeSpecial && t.addBOS && len(ids) > 0 && ids[0] == t.bos {
		ids = ids[1:]
	}
	if removeSpecial && t.addEOS && len(ids) > 0 && ids[len(ids)-1] == t.eos {
		ids = ids[:len(ids)-1]
	}
	var out []byte
	for _, id := range ids {
		if id < 0 || id >= len(t.pieces) {
			continue
		}
		if !unparseSpecial && t.attrs[id]&(attrControl|attrUnknown) != 0 {
			continue
		}
		out = append(out, t.pieces[id]...)
	}
	if t.cleanUp {
		out = llamavocab.CleanSpaces(out)
	}
	return out
}

// Decode is the text of ids (llama_detokenize with remove_special=false,
// unparse_special=false), invalid UTF-8 bytes replaced by U+FFFD.
func (t *Tokenizer) Decode(ids []int) string {
	b := t.Detokenize(ids, false, false)
	return llamavocab.Text(b)
}

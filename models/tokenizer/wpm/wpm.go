// Package wpm is llama.cpp's WordPiece tokenizer for BERT-style GGUF
// vocabularies ("bert" in tokenizer.ggml.model, LLAMA_VOCAB_TYPE_WPM): the
// text is split into words at whitespace, punctuation, ASCII symbols and CJK
// ideographs after llama.cpp's one-to-one "NFD" (accents of precomposed
// letters dropped) and lowercasing, and each word, prefixed with U+2581 "▁",
// is cut greedily into the longest vocabulary pieces, or becomes [UNK] as a
// whole when some part of it matches nothing (llm_tokenizer_wpm_session in
// src/llama-vocab.cpp). llama.cpp's converter stores word-start pieces with
// the "▁" prefix and continuation pieces bare (no "##"). Special tokens are
// split out first (tokenizer_st_partition), and the special ids follow
// llama_vocab::impl::load for "bert": CLS (101) is BOS, SEP 102, UNK 100,
// PAD 0, MASK 103, no EOS. Encode gives llama_tokenize's ids.
package wpm

import (
	"fmt"
	"sort"
	"strings"

	"chat/models"
	"chat/models/gguf"
	"chat/models/tokenizer/llamavocab"
)

// Model is the tokenizer.ggml.model value of WordPiece vocabularies.
const Model = "bert"

// Token types as stored in tokenizer.ggml.token_type.
const (
	TypeNormal      = 1
	TypeUnknown     = 2
	TypeControl     = 3
	TypeUserDefined = 4
	TypeUnused      = 5
	TypeByte        = 6
)

// The phantom space llama.cpp puts before every word.
const wordStart = "\u2581"

var _ models.Tokenizer = (*Tokenizer)(nil)

// Tokenizer is a WordPiece vocabulary. It is immutable after New and safe
// for concurrent use.
type Tokenizer struct {
	texts   []string
	types   []int32
	ids     map[string]int
	pieces  [][]byte
	special []int // control/user-defined/unknown ids, longest text first
	maxLen  int   // longest token text in bytes (max_token_len)

	bos, eos, eot, unk, sep, pad, mask int
	addBOS, addSEP                     bool
}

// Vocab is the raw material of a Tokenizer, as GGUF stores it. Ids are -1
// when absent.
type Vocab struct {
	Tokens []string
	Types  []int32 // nil means all normal

	BOS, EOS, EOT, UNK, SEP, PAD, MASK int
	AddBOS, AddSEP                     bool
}

// DefaultVocab is a Vocab with llama.cpp's defaults for "bert" and the given
// tokens: CLS=101 as BOS, UNK=100, SEP=102, PAD=0, MASK=103, and CLS/SEP
// added around a prompt.
func DefaultVocab(tokens []string, types []int32) Vocab {
	return Vocab{Tokens: tokens, Types: types,
		BOS: 101, EOS: -1, EOT: -1, UNK: 100, SEP: 102, PAD: 0, MASK: 103,
		AddBOS: true, AddSEP: true}
}

// FromGGUF builds the tokenizer from a GGUF file's tokenizer.ggml.* keys,
// with llama.cpp's defaults for WPM vocabularies.
func FromGGUF(f *gguf.File) (*Tokenizer, error) {
	if f == nil {
		return nil, fmt.Errorf("wpm: nil GGUF file")
	}
	model, _ := f.String("tokenizer.ggml.model")
	if model != Model {
		return nil, fmt.Errorf("wpm: tokenizer.ggml.model is %q, want %q", model, Model)
	}
	tokens, ok := f.Strings("tokenizer.ggml.tokens")
	if !ok {
		return nil, fmt.Errorf("wpm: tokenizer.ggml.tokens missing or not a string array")
	}
	var types []int32
	if f.Has("tokenizer.ggml.token_type") {
		ints, ok := f.Ints("tokenizer.ggml.token_type")
		if !ok {
			return nil, fmt.Errorf("wpm: tokenizer.ggml.token_type is not an integer array")
		}
		types = make([]int32, len(ints))
		for i, x := range ints {
			types[i] = int32(x)
		}
	}
	v := DefaultVocab(tokens, types)
	// An id out of range keeps the default, as llama.cpp does (it warns).
	// llama.cpp reads no cls_token_id: BOS is the CLS token.
	for key, dst := range map[string]*int{
		"tokenizer.ggml.bos_token_id":       &v.BOS,
		"tokenizer.ggml.eos_token_id":       &v.EOS,
		"tokenizer.ggml.eot_token_id":       &v.EOT,
		"tokenizer.ggml.unknown_token_id":   &v.UNK,
		"tokenizer.ggml.seperator_token_id": &v.SEP, // sic: GGUF's spelling
		"tokenizer.ggml.padding_token_id":   &v.PAD,
		"tokenizer.ggml.mask_token_id":      &v.MASK,
	} {
		if !f.Has(key) {
			continue
		}
		id, ok := f.Uint(key)
		if !ok {
			return nil, fmt.Errorf("wpm: %s is not a non-negative integer", key)
		}
		if id < uint64(len(tokens)) {
			*dst = int(id)
		}
	}
	for key, dst := range map[string]*bool{
		"tokenizer.ggml.add_bos_token": &v.AddBOS,
		"tokenizer.ggml.add_sep_token": &v.AddSEP,
	} {
		if !f.Has(key) {
			continue
		}
		b, ok := f.Bool(key)
		if !ok {
			return nil, fmt.Errorf("wpm: %s is not a bool", key)
		}
		*dst = b
	}
	return New(v)
}

// New builds a tokenizer from a vocabulary.
func New(v Vocab) (*Tokenizer, error) {
	n := len(v.Tokens)
	if n == 0 {
		return nil, fmt.Errorf("wpm: empty vocabulary")
	}
	if v.Types != nil && len(v.Types) != n {
		return nil, fmt.Errorf("wpm: %d token types for %d tokens", len(v.Types), n)
	}
	t := &Tokenizer{
		texts: make([]string, n), types: make([]int32, n),
		ids:    make(map[string]int, n),
		pieces: make([][]byte, n),
		bos:    validID(v.BOS, n), eos: validID(v.EOS, n), eot: validID(v.EOT, n),
		unk: validID(v.UNK, n), sep: validID(v.SEP, n),
		pad: validID(v.PAD, n), mask: validID(v.MASK, n),
		addBOS: v.AddBOS, addSEP: v.AddSEP,
	}
	// llama.cpp aborts on a word it cannot piece together without [UNK], and
	// on add_special without CLS/SEP (GGML_ASSERT): refuse such vocabularies.
	if t.unk < 0 {
		return nil, fmt.Errorf("wpm: UNK id %d is missing or out of range for %d tokens", v.UNK, n)
	}
	if t.addBOS && t.bos < 0 {
		return nil, fmt.Errorf("wpm: add_bos_token is set but the BOS (CLS) id %d is out of range for %d tokens", v.BOS, n)
	}
	if t.addSEP && t.sep < 0 {
		return nil, fmt.Errorf("wpm: add_sep_token is set but the SEP id %d is out of range for %d tokens", v.SEP, n)
	}
	for i, s := range v.Tokens {
		if s == "" {
			s = fmt.Sprintf("[EMPTY_%d]", i) // llama.cpp's name for an empty token
		}
		if j, dup := t.ids[s]; dup {
			// llama.cpp asserts id_to_token.size() == token_to_id.size().
			return nil, fmt.Errorf("wpm: duplicate token %q has ids %d and %d", s, j, i)
		}
		t.ids[s] = i
		t.texts[i] = s
		t.maxLen = max(t.maxLen, len(s))
		t.types[i] = TypeNormal
		if v.Types != nil {
			t.types[i] = v.Types[i]
		}
	}
	for i := range t.texts {
		t.pieces[i] = t.piece(i)
		switch t.types[i] {
		case TypeControl, TypeUserDefined, TypeUnknown:
			t.special = append(t.special, i)
		}
	}
	sort.SliceStable(t.special, func(a, b int) bool {
		return len(t.texts[t.special[a]]) > len(t.texts[t.special[b]])
	})
	return t, nil
}

func validID(id, n int) int {
	if id < 0 || id >= n {
		return -1
	}
	return id
}

// piece is token_to_piece with special=true: special and user-defined
// tokens give their text, normal tokens their text with "▁" as a space,
// other types nothing.
func (t *Tokenizer) piece(id int) []byte {
	s := t.texts[id]
	switch t.types[id] {
	case TypeControl, TypeUnknown, TypeUserDefined:
		return []byte(s)
	case TypeNormal:
		return []byte(strings.ReplaceAll(s, wordStart, " "))
	}
	return nil
}

// Size is the number of tokens.
func (t *Tokenizer) Size() int { return len(t.texts) }

// BOS is the CLS id when a prompt gets it prepended (llama.cpp's default
// for WPM), else -1.
func (t *Tokenizer) BOS() int {
	if !t.addBOS {
		return -1
	}
	return t.bos
}

// CLS is the classification id (llama.cpp's BOS for WPM), or -1.
func (t *Tokenizer) CLS() int { return t.bos }

// SEP is the separator id, or -1.
func (t *Tokenizer) SEP() int { return t.sep }

// UNK is the unknown-word id.
func (t *Tokenizer) UNK() int { return t.unk }

// PAD is the padding id, or -1.
func (t *Tokenizer) PAD() int { return t.pad }

// MASK is the mask id, or -1.
func (t *Tokenizer) MASK() int { return t.mask }

// EOS is the end-of-sequence id, or -1 (BERT vocabularies have none).
func (t *Tokenizer) EOS() int { return t.eos }

// EOT is the end-of-text id: tokenizer.ggml.eot_token_id, else EOS, else
// SEP, which ends a BERT sequence.
func (t *Tokenizer) EOT() int {
	switch {
	case t.eot >= 0:
		return t.eot
	case t.eos >= 0:
		return t.eos
	}
	return t.sep
}

// AddBOS reports whether a prompt gets CLS prepended.
func (t *Tokenizer) AddBOS() bool { return t.addBOS }

// AddSEP reports whether a prompt gets SEP appended.
func (t *Tokenizer) AddSEP() bool { return t.addSEP }

// StripsLeadingSpace is false: llama.cpp keeps the space the first word's
// "▁" decodes to (add_space_prefix is off for WPM).
func (t *Tokenizer) StripsLeadingSpace() bool { return false }

// Text is the token's text as the vocabulary stores it ("▁hello").
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

// IsSpecial reports whether id is anything but a normal token ([CLS],
// [SEP], [UNK], unused...; out of range too): constrained decoding allows
// such tokens only as an end token.
func (t *Tokenizer) IsSpecial(id int) bool { return t.Type(id) != TypeNormal }

// TokenBytes is the text of id with "▁" as a space (a special token gives
// its text); nil when out of range. The slice is shared; do not modify it.
func (t *Tokenizer) TokenBytes(id int) []byte {
	if id < 0 || id >= len(t.pieces) {
		return nil
	}
	return t.pieces[id]
}

// Encode tokenizes text with special-token texts as plain characters
// (except user-defined tokens, which llama.cpp always matches), without
// CLS/SEP.
func (t *Tokenizer) Encode(text string) []int { return t.Tokenize(text, false, false) }

// EncodeSpecial is Encode with control-token texts ([CLS], [SEP], [MASK],
// ...) recognised.
func (t *Tokenizer) EncodeSpecial(text string) []int { return t.Tokenize(text, false, true) }

// Tokenize is llama_tokenize for a WPM vocabulary: with addSpecial, CLS
// before and SEP after. llama.cpp adds both whenever add_special is set; here
// tokenizer.ggml.add_bos_token/add_sep_token = false can turn them off
// (they default to true, so BERT files behave the same).
func (t *Tokenizer) Tokenize(text string, addSpecial, parseSpecial bool) []int {
	var out []int
	if addSpecial && t.addBOS && t.bos >= 0 {
		out = append(out, t.bos)
	}
	var words []string
	for _, fr := range t.partition(text, parseSpecial) {
		if fr.ID >= 0 {
			out = append(out, fr.ID)
			continue
		}
		words = preprocess(fr.Text, words[:0])
		for _, w := range words {
			out = t.word(w, out)
		}
	}
	if addSpecial && t.addSEP && t.sep >= 0 {
		out = append(out, t.sep)
	}
	return out
}

// word appends the pieces of one preprocessed word: from each position the
// longest vocabulary entry (llama.cpp tries lengths up to max_token_len+1
// bytes), the first piece including the "▁" prefix; if some position
// matches nothing the whole word becomes UNK.
func (t *Tokenizer) word(w string, out []int) []int {
	w = wordStart + w
	start := len(out)
	for i := 0; i < len(w); {
		matched := false
		for j := min(len(w), i+t.maxLen+1); j > i; j-- {
			if id, ok := t.ids[w[i:j]]; ok {
				out = append(out, id)
				i = j
				matched = true
				break
			}
		}
		if !matched {
			return append(out[:start], t.unk)
		}
	}
	return out
}

// partition splits text around special-token texts (llama.cpp's
// tokenizer_st_partition); control and unknown tokens only when
// parseSpecial.
func (t *Tokenizer) partition(text string, parseSpecial bool) []llamavocab.Fragment {
	return llamavocab.Partition(text, t.special, func(id int) string { return t.texts[id] }, func(id int) bool {
		ty := t.types[id]
		return parseSpecial || (ty != TypeControl && ty != TypeUnknown)
	})
}

// Detokenize is llama_detokenize: the pieces of ids concatenated (control
// and unknown tokens only when unparseSpecial), then the clean-up of spaces
// before punctuation and in contractions that WPM vocabularies turn on
// (clean_spaces). removeSpecial drops a leading CLS; llama.cpp drops no SEP
// (add_eos is off). The leading space of the first word is kept, as in
// llama.cpp. The result is raw bytes.
func (t *Tokenizer) Detokenize(ids []int, removeSpecial, unparseSpecial bool) []byte {
	if removeSpecial && t.addBOS && len(ids) > 0 && ids[0] == t.bos {
		ids = ids[1:]
	}
	var out []byte
	for _, id := range ids {
		if id < 0 || id >= len(t.pieces) {
			continue
		}
		if !unparseSpecial && (t.types[id] == TypeControl || t.types[id] == TypeUnknown) {
			continue
		}
		out = append(out, t.pieces[id]...)
	}
	return llamavocab.CleanSpaces(out)
}

// Decode is the text of ids (llama_detokenize with remove_special=false,
// unparse_special=false), invalid UTF-8 bytes replaced by U+FFFD.
func (t *Tokenizer) Decode(ids []int) string {
	b := t.Detokenize(ids, false, false)
	return llamavocab.Text(b)
}

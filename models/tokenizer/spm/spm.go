// Package spm is llama.cpp's SentencePiece-style ("llama") tokenizer built
// from GGUF metadata: the score-driven bigram merge of llm_tokenizer_spm,
// byte fallback to <0xNN> tokens, the leading space prefix, and the
// detokenizer rules of llama_vocab::impl::detokenize
// (src/llama-vocab.cpp in ggml-org/llama.cpp).
package spm

import (
	"container/heap"
	"fmt"
	"sort"
	"strings"

	"chat/models/gguf"
	"chat/models/quote"
	"chat/models/tokenizer/llamavocab"
)

// Token types as stored in tokenizer.ggml.token_type (llama.h
// llama_token_type).
const (
	TypeUndefined   = 0
	TypeNormal      = 1
	TypeUnknown     = 2
	TypeControl     = 3
	TypeUserDefined = 4
	TypeUnused      = 5
	TypeByte        = 6
)

const spaceMark = "\u2581" // ▁, SentencePiece's visible space

// Tokenizer is an SPM vocabulary. It is immutable and safe for concurrent use.
type Tokenizer struct {
	texts  []string
	scores []float32
	types  []int32
	ids    map[string]int
	pieces [][]byte // token_to_piece with special=true, cached as llama.cpp does
	byteID [256]int // <0xNN> token for each byte, or -1

	special []int // control/user-defined/unknown ids, longest text first

	bos, eos, eot, unk int
	addBOS, addEOS     bool
	addSpacePrefix     bool
}

// Vocab is the raw material of a Tokenizer, as GGUF stores it.
type Vocab struct {
	Tokens         []string
	Scores         []float32 // nil means all 0
	Types          []int32   // nil means all normal
	BOS, EOS, EOT  int       // -1 when absent
	UNK            int
	AddBOS, AddEOS bool
	AddSpacePrefix bool
}

// FromGGUF builds the tokenizer from a GGUF file's tokenizer.ggml.* keys.
// Defaults follow llama.cpp for SPM vocabularies: bos 1, eos 2, unk 0,
// add_bos true, add_eos false, add_space_prefix true.
func FromGGUF(f *gguf.File) (*Tokenizer, error) {
	model, _ := f.String("tokenizer.ggml.model")
	if model != "llama" {
		return nil, fmt.Errorf("spm: tokenizer.ggml.model is %s, want \"llama\"", quote.Quote(model))
	}
	v := Vocab{BOS: 1, EOS: 2, EOT: -1, UNK: 0, AddBOS: true, AddSpacePrefix: true}
	var ok bool
	if v.Tokens, ok = f.Strings("tokenizer.ggml.tokens"); !ok {
		return nil, fmt.Errorf("spm: tokenizer.ggml.tokens missing or not a string array")
	}
	if f.Has("tokenizer.ggml.scores") {
		if v.Scores, ok = f.Float32s("tokenizer.ggml.scores"); !ok {
			return nil, fmt.Errorf("spm: tokenizer.ggml.scores is not a numeric array")
		}
	}
	if f.Has("tokenizer.ggml.token_type") {
		ints, ok := f.Ints("tokenizer.ggml.token_type")
		if !ok {
			return nil, fmt.Errorf("spm: tokenizer.ggml.token_type is not an integer array")
		}
		v.Types = make([]int32, len(ints))
		for i, x := range ints {
			v.Types[i] = int32(x)
		}
	}
	// Special ids out of range are ignored, as llama.cpp does.
	for key, dst := range map[string]*int{
		"tokenizer.ggml.bos_token_id":     &v.BOS,
		"tokenizer.ggml.eos_token_id":     &v.EOS,
		"tokenizer.ggml.eot_token_id":     &v.EOT,
		"tokenizer.ggml.unknown_token_id": &v.UNK,
	} {
		if id, ok := f.Uint(key); ok && id < uint64(len(v.Tokens)) {
			*dst = int(id)
		}
	}
	if b, ok := f.Bool("tokenizer.ggml.add_bos_token"); ok {
		v.AddBOS = b
	}
	if b, ok := f.Bool("tokenizer.ggml.add_eos_token"); ok {
		v.AddEOS = b
	}
	if b, ok := f.Bool("tokenizer.ggml.add_space_prefix"); ok {
		v.AddSpacePrefix = b
	}
	return New(v)
}

// New builds a tokenizer from a vocabulary.
func New(v Vocab) (*Tokenizer, error) {
	n := len(v.Tokens)
	if n == 0 {
		return nil, fmt.Errorf("spm: empty vocabulary")
	}
	if v.Scores != nil && len(v.Scores) < n {
		return nil, fmt.Errorf("spm: %d scores for %d tokens", len(v.Scores), n)
	}
	if v.Types != nil && len(v.Types) < n {
		return nil, fmt.Errorf("spm: %d token types for %d tokens", len(v.Types), n)
	}
	t := &Tokenizer{
		texts:          make([]string, n),
		scores:         make([]float32, n),
		types:          make([]int32, n),
		ids:            make(map[string]int, n),
		pieces:         make([][]byte, n),
		bos:            validID(v.BOS, n),
		eos:            validID(v.EOS, n),
		eot:            validID(v.EOT, n),
		unk:            validID(v.UNK, n),
		addBOS:         v.AddBOS,
		addEOS:         v.AddEOS,
		addSpacePrefix: v.AddSpacePrefix,
	}
	for i, s := range v.Tokens {
		if s == "" {
			s = fmt.Sprintf("[EMPTY_%d]", i) // as llama.cpp names empty tokens
		}
		if j, dup := t.ids[s]; dup {
			return nil, fmt.Errorf("spm: duplicate token %s has ids %d and %d", quote.Quote(s), j, i)
		}
		t.ids[s] = i
		t.texts[i] = s
		if v.Scores != nil {
			t.scores[i] = v.Scores[i]
		}
		t.types[i] = TypeNormal
		if v.Types != nil {
			t.types[i] = v.Types[i]
		}
	}
	for b := range t.byteID {
		t.byteID[b] = -1
		if id, ok := t.ids[fmt.Sprintf("<0x%02X>", b)]; ok {
			t.byteID[b] = id
		} else if id, ok := t.ids[string([]byte{byte(b)})]; ok {
			t.byteID[b] = id // llama.cpp's fallback: the byte itself as a token
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

// piece is llama.cpp's token_to_piece with special=true and no lstrip.
func (t *Tokenizer) piece(id int) []byte {
	s := t.texts[id]
	switch t.types[id] {
	case TypeControl, TypeUnknown, TypeUserDefined:
		return []byte(s)
	case TypeNormal:
		return []byte(strings.ReplaceAll(s, spaceMark, " "))
	case TypeByte:
		if b, ok := parseByteToken(s); ok {
			return []byte{b}
		}
	}
	return nil // unused and undefined tokens render as nothing
}

func parseByteToken(s string) (byte, bool) {
	if len(s) != 6 || s[:3] != "<0x" || s[5] != '>' {
		return 0, false
	}
	var v byte
	for _, c := range s[3:5] {
		switch {
		case c >= '0' && c <= '9':
			v = v<<4 | byte(c-'0')
		case c >= 'A' && c <= 'F':
			v = v<<4 | byte(c-'A'+10)
		case c >= 'a' && c <= 'f':
			v = v<<4 | byte(c-'a'+10)
		default:
			return 0, false
		}
	}
	return v, true
}

// Size is the number of tokens.
func (t *Tokenizer) Size() int { return len(t.texts) }

// BOS is the beginning-of-sequence id, or -1 when the model takes none.
func (t *Tokenizer) BOS() int {
	if !t.addBOS {
		return -1
	}
	return t.bos
}

// EOS is the end-of-sequence id, or -1.
func (t *Tokenizer) EOS() int { return t.eos }

// EOT is the end-of-turn id when the vocabulary names one, else EOS.
func (t *Tokenizer) EOT() int {
	if t.eot >= 0 {
		return t.eot
	}
	return t.eos
}

// AddBOS and AddEOS report whether a prompt gets BOS / EOS added.
func (t *Tokenizer) AddBOS() bool { return t.addBOS }
func (t *Tokenizer) AddEOS() bool { return t.addEOS }

// StripsLeadingSpace reports whether the detokenizer drops the leading space
// of the first piece (llama.cpp does so when add_space_prefix is set, to undo
// the space the tokenizer put in front of the text). A streaming printer
// should drop the leading space of the first piece it prints after BOS-less
// text starts; Decode applies the rule itself.
func (t *Tokenizer) StripsLeadingSpace() bool { return t.addSpacePrefix }

// Text is the token's text as stored in the vocabulary ("▁the", "<0x0A>").
func (t *Tokenizer) Text(id int) string {
	if id < 0 || id >= len(t.texts) {
		return ""
	}
	return t.texts[id]
}

// Type is the token's type (TypeNormal, TypeControl, ...), or -1.
func (t *Tokenizer) Type(id int) int {
	if id < 0 || id >= len(t.texts) {
		return -1
	}
	return int(t.types[id])
}

// IsControl reports whether id is a control token (BOS, EOS, ...): one a
// model emits is not text (models.ControlTokens), as llama.cpp's
// detokenizer leaves it out without --special.
func (t *Tokenizer) IsControl(id int) bool { return t.Type(id) == TypeControl }

// IsSpecial reports whether id is anything but a normal or byte token
// (control, user-defined, unknown, unused or undefined; out of range too):
// constrained decoding allows such tokens only as an end token.
func (t *Tokenizer) IsSpecial(id int) bool {
	ty := t.Type(id)
	return ty != TypeNormal && ty != TypeByte
}

// TokenBytes is the raw bytes id stands for: ▁ becomes a space, <0xNN> the
// byte, and a control token its literal text. Out of range gives nil. The
// slice is shared; do not modify it.
func (t *Tokenizer) TokenBytes(id int) []byte {
	if id < 0 || id >= len(t.pieces) {
		return nil
	}
	return t.pieces[id]
}

// Encode tokenizes text with special-token strings as plain characters and
// no BOS (llama_tokenize with add_special=false, parse_special=false).
func (t *Tokenizer) Encode(text string) []int { return t.Tokenize(text, false, false) }

// EncodeSpecial is Encode, except that control and user-defined token texts
// in text become their ids (parse_special=true).
func (t *Tokenizer) EncodeSpecial(text string) []int { return t.Tokenize(text, false, true) }

// Tokenize is llama_tokenize for an SPM vocabulary. addSpecial adds BOS/EOS
// as the vocabulary asks; parseSpecial matches control token texts.
// User-defined token texts are always matched, as llama.cpp does.
func (t *Tokenizer) Tokenize(text string, addSpecial, parseSpecial bool) []int {
	var out []int
	if addSpecial && t.addBOS && t.bos >= 0 {
		out = append(out, t.bos)
	}
	prevSpecial := true // the first text fragment gets the space prefix
	for _, fr := range t.partition(text, parseSpecial) {
		if fr.ID >= 0 {
			out = append(out, fr.ID)
			prevSpecial = true
			continue
		}
		s := fr.Text
		if t.addSpacePrefix && prevSpecial {
			s = " " + s
		}
		out = t.segment(strings.ReplaceAll(s, " ", spaceMark), out)
		prevSpecial = false
	}
	if addSpecial && t.addEOS && t.eos >= 0 {
		out = append(out, t.eos)
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

// symbol is a span of the text in the merge's linked list.
type symbol struct {
	prev, next int
	start, n   int
}

type bigram struct {
	left, right int
	score       float32
	size        int
}

// bigramQueue pops the highest score first and, on ties, the leftmost pair
// (llm_bigram_spm::comparator).
type bigramQueue []bigram

func (q bigramQueue) Len() int { return len(q) }
func (q bigramQueue) Less(i, j int) bool {
	if q[i].score != q[j].score {
		return q[i].score > q[j].score
	}
	return q[i].left < q[j].left
}
func (q bigramQueue) Swap(i, j int) { q[i], q[j] = q[j], q[i] }
func (q *bigramQueue) Push(x any)   { *q = append(*q, x.(bigram)) }
func (q *bigramQueue) Pop() any {
	old := *q
	x := old[len(old)-1]
	*q = old[:len(old)-1]
	return x
}

// utf8Len is the sequence length a lead byte announces, as llama.cpp's
// unicode_len_utf8 computes it (invalid lead bytes count as 1).
func utf8Len(b byte) int {
	return [16]int{1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 2, 2, 3, 4}[b>>4]
}

// segment is llm_tokenizer_spm_session::tokenize: start from single
// characters, repeatedly merge the adjacent pair whose concatenation is the
// best-scoring token, then emit each final symbol as its token, or split it
// back along the merges that built it, or fall back to byte tokens.
func (t *Tokenizer) segment(text string, out []int) []int {
	if text == "" {
		return out
	}
	var syms []symbol
	for off := 0; off < len(text); {
		n := min(utf8Len(text[off]), len(text)-off)
		syms = append(syms, symbol{prev: len(syms) - 1, next: len(syms) + 1, start: off, n: n})
		off += n
	}
	syms[len(syms)-1].next = -1

	var q bigramQueue
	revMerge := map[string][2]int{}
	tryAdd := func(l, r int) {
		if l < 0 || r < 0 {
			return
		}
		s := text[syms[l].start : syms[l].start+syms[l].n+syms[r].n]
		id, ok := t.ids[s]
		if !ok {
			return
		}
		heap.Push(&q, bigram{left: l, right: r, score: t.scores[id], size: len(s)})
		revMerge[s] = [2]int{l, r}
	}
	for i := 1; i < len(syms); i++ {
		tryAdd(i-1, i)
	}
	for q.Len() > 0 {
		b := heap.Pop(&q).(bigram)
		l, r := &syms[b.left], &syms[b.right]
		if l.n == 0 || r.n == 0 || l.n+r.n != b.size {
			continue // stale: one side was merged since
		}
		l.n += r.n
		r.n = 0
		l.next = r.next
		if r.next >= 0 {
			syms[r.next].prev = b.left
		}
		tryAdd(l.prev, b.left)
		tryAdd(b.left, l.next)
	}

	var resegment func(i int)
	resegment = func(i int) {
		s := text[syms[i].start : syms[i].start+syms[i].n]
		if id, ok := t.ids[s]; ok {
			out = append(out, id)
			return
		}
		if p, ok := revMerge[s]; ok {
			resegment(p[0])
			resegment(p[1])
			return
		}
		for j := 0; j < len(s); j++ {
			if id := t.byteID[s[j]]; id >= 0 {
				out = append(out, id)
			} else if t.unk >= 0 {
				out = append(out, t.unk) // no byte token: llama.cpp would abort
			}
		}
	}
	for i := 0; i != -1; i = syms[i].next {
		resegment(i)
	}
	return out
}

// Detokenize is llama_detokenize: the pieces of ids concatenated, with the
// leading space of the first piece dropped when add_space_prefix is set (a
// leading BOS uses up that rule when removeSpecial is false, and is removed
// with it otherwise). unparseSpecial renders control tokens as their text
// instead of nothing. The result is raw bytes, possibly invalid UTF-8.
func (t *Tokenizer) Detokenize(ids []int, removeSpecial, unparseSpecial bool) []byte {
	removeSpace := t.addSpacePrefix
	if removeSpecial && t.addBOS && len(ids) > 0 && ids[0] == t.bos {
		removeSpace = false
		ids = ids[1:]
	}
	if removeSpecial && t.addEOS && len(ids) > 0 && ids[len(ids)-1] == t.eos {
		ids = ids[:len(ids)-1]
	}
	var out []byte
	for _, id := range ids {
		strip := removeSpace
		removeSpace = false
		if id < 0 || id >= len(t.pieces) {
			continue
		}
		if !unparseSpecial && (t.types[id] == TypeControl || t.types[id] == TypeUnknown) {
			continue
		}
		p := t.pieces[id]
		if strip && len(p) > 0 && p[0] == ' ' {
			p = p[1:]
		}
		out = append(out, p...)
	}
	return out
}

// Decode is the text of ids as llama_detokenize(remove_special=false,
// unparse_special=false) gives it, with each invalid UTF-8 byte replaced by
// U+FFFD.
func (t *Tokenizer) Decode(ids []int) string {
	return llamavocab.Text(t.Detokenize(ids, false, false))
}

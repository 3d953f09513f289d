// Package coursebpe is the byte-level BPE tokenizer of the course
// train-llm-from-scratch (src/tokenizer/bpe.py), reproduced exactly.
//
// Ids 0..255 are raw bytes (no GPT-2 byte remapping), merge r creates id
// 256+r, and special token j is 256+M+j. Text is first cut into chunks by the
// spec's split pattern (hand scanners for the course's GPT-4 and GPT-2
// patterns, regexp2 for anything else); each chunk's UTF-8 bytes are then
// merged by always applying the lowest-ranked pair present, every
// non-overlapping occurrence left to right, until no pair has a rank.
//
// The scanners classify characters with \p{L} and \p{N} tables generated
// from the Python regex module (gen_tables.py), because Go's unicode package
// is older and misses letters the course's tokenizer knows. Each byte of
// invalid UTF-8 in a Go string counts as one character that is neither
// letter, number nor space, and keeps its byte. testdata/pycases.json holds
// reference splits, encodings and decodings computed by Python
// (gen_pycases.py).
package coursebpe

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"chat/models"
	"chat/models/quote"
)

// EndOfText is the course's end-of-text special token.
const EndOfText = "<|endoftext|>"

// ErrTiktoken marks a spec that names a tiktoken encoding (r50k_base and
// friends) this package cannot read: its rank file is not part of the
// course or of this package, and is read from tiktoken's cache
// (tiktoken.go). Test with errors.Is; errors.As with *TiktokenError gives
// the name and why.
var ErrTiktoken = errors.New("tokenizer: tiktoken encoding not available")

// TiktokenError is returned for a tiktoken spec that cannot be read.
type TiktokenError struct{ Name, Why string }

func (e *TiktokenError) Error() string {
	return fmt.Sprintf("tokenizer: tiktoken %s: %s", e.Name, e.Why)
}

// Is makes errors.Is(err, ErrTiktoken) true.
func (e *TiktokenError) Is(target error) bool { return target == ErrTiktoken }

// Tokenizer is a course BPE tokenizer. It is safe for concurrent use.
type Tokenizer struct {
	pattern  string
	split    splitter
	merges   [][2]int
	ranks    map[uint64]int32 // pair (a<<32|b) -> rank
	vocab    [][]byte         // bytes of ids 0..255+M
	specials []string         // literal text of ids 256+M+j
	eot      int

	// byBytes is a tiktoken encoding's rank of each token's bytes (nil for
	// the course's BPE): chunks merge by it (rankMerge), not by merges.
	byBytes map[string]int32

	mu    sync.RWMutex
	cache map[string][]int // chunk -> ids, for repeated words
}

var _ models.Tokenizer = (*Tokenizer)(nil)

const (
	cacheMaxChunk   = 64      // longer chunks are rare and not worth caching
	cacheMaxEntries = 1 << 16 // the cache is cleared when it grows past this
)

// FromJSON builds a tokenizer from the JSON text of a spec (tokenizer.json,
// or the JSON string a data file stores).
func FromJSON(b []byte) (*Tokenizer, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, fmt.Errorf("tokenizer: bad spec JSON: %w", err)
	}
	if dec.More() {
		return nil, errors.New("tokenizer: bad spec JSON: trailing data")
	}
	if v == nil {
		return nil, errors.New("tokenizer: spec JSON is null")
	}
	return FromSpec(v)
}

// FromSpec builds a tokenizer from a checkpoint's config["tokenizer"], read
// the way the course's tokenizer_from_spec reads it: a map, a JSON string of
// that map, a bare tiktoken name, or nil (meaning r50k_base). A tiktoken
// encoding is read from tiktoken's cache, or gives a *TiktokenError
// (errors.Is ErrTiktoken) saying where to put it.
func FromSpec(spec any) (*Tokenizer, error) {
	switch s := spec.(type) {
	case nil:
		return loadTiktoken("r50k_base")
	case string:
		if strings.HasPrefix(strings.TrimLeftFunc(s, unicode.IsSpace), "{") {
			return FromJSON([]byte(s))
		}
		return loadTiktoken(s)
	case []byte:
		return FromSpec(string(s))
	case map[string]any:
		return fromMap(s)
	case map[any]any:
		m := make(map[string]any, len(s))
		for k, v := range s {
			ks, ok := k.(string)
			if !ok {
				return nil, fmt.Errorf("tokenizer: spec key %v (%T) is not a string", k, k)
			}
			m[ks] = v
		}
		return fromMap(m)
	default:
		return nil, fmt.Errorf("tokenizer: unsupported spec of type %T", spec)
	}
}

func fromMap(m map[string]any) (*Tokenizer, error) {
	switch typ := m["type"]; typ {
	case "tiktoken":
		name := "r50k_base"
		if n, ok := m["name"]; ok {
			name = fmt.Sprint(n)
		}
		return loadTiktoken(name)
	case "bpe":
	default:
		return nil, fmt.Errorf("tokenizer: unknown tokenizer spec type %v", typ)
	}

	pv, ok := m["pattern"]
	if !ok {
		return nil, errors.New("tokenizer: bpe spec has no pattern")
	}
	pattern, ok := pv.(string)
	if !ok {
		return nil, fmt.Errorf("tokenizer: bpe spec pattern is %T, not a string", pv)
	}

	mv, ok := m["merges"]
	if !ok {
		return nil, errors.New("tokenizer: bpe spec has no merges")
	}
	merges, err := toMerges(mv)
	if err != nil {
		return nil, err
	}

	// The course defaults to [EOT] when the key is missing.
	specials := []string{EndOfText}
	if sv, ok := m["special_tokens"]; ok {
		specials, err = toStrings(sv)
		if err != nil {
			return nil, err
		}
	}
	return New(merges, specials, pattern)
}

// New builds a tokenizer from its parts. Merge r must only use ids below
// 256+r (as training produces them); duplicate merges, duplicate or empty
// special tokens are rejected.
func New(merges [][2]int, specials []string, pattern string) (*Tokenizer, error) {
	if len(merges) > math.MaxInt32-256-len(specials) {
		return nil, fmt.Errorf("tokenizer: too many merges (%d)", len(merges))
	}
	t := &Tokenizer{
		pattern: pattern,
		merges:  merges,
		ranks:   make(map[uint64]int32, len(merges)),
		vocab:   make([][]byte, 256, 256+len(merges)),
		eot:     -1,
		cache:   make(map[string][]int),
	}
	for i := range 256 {
		t.vocab[i] = []byte{byte(i)}
	}
	for r, p := range merges {
		id := 256 + r
		for _, x := range p {
			if x < 0 || x >= id {
				return nil, fmt.Errorf("tokenizer: merge %d [%d, %d] uses id %d, which is not below its own id %d", r, p[0], p[1], x, id)
			}
		}
		key := pairKey(p[0], p[1])
		if prev, dup := t.ranks[key]; dup {
			// The course's rank dict would keep the last one and its
			// encoder would then misbehave; training never produces this.
			return nil, fmt.Errorf("tokenizer: merge %d [%d, %d] repeats merge %d", r, p[0], p[1], prev)
		}
		t.ranks[key] = int32(r)
		b := make([]byte, 0, len(t.vocab[p[0]])+len(t.vocab[p[1]]))
		b = append(append(b, t.vocab[p[0]]...), t.vocab[p[1]]...)
		t.vocab = append(t.vocab, b)
	}
	seen := make(map[string]bool, len(specials))
	for j, s := range specials {
		if s == "" {
			return nil, fmt.Errorf("tokenizer: special token %d is empty", j)
		}
		if seen[s] {
			return nil, fmt.Errorf("tokenizer: special token %s is listed twice", quote.Quote(s))
		}
		seen[s] = true
		if s == EndOfText {
			t.eot = 256 + len(merges) + j
		}
	}
	t.specials = append([]string(nil), specials...)
	sp, err := newSplitter(pattern)
	if err != nil {
		return nil, err
	}
	t.split = sp
	return t, nil
}

func pairKey(a, b int) uint64 { return uint64(uint32(a))<<32 | uint64(uint32(b)) }

// toMerges reads [[a, b], ...] from whatever the spec holds: []any of []any
// from a pickle or JSON, or any typed slice of pairs.
func toMerges(v any) ([][2]int, error) {
	rv := reflect.ValueOf(v)
	if !rv.IsValid() || (rv.Kind() != reflect.Slice && rv.Kind() != reflect.Array) {
		return nil, fmt.Errorf("tokenizer: merges is %T, not a list", v)
	}
	out := make([][2]int, rv.Len())
	for r := range out {
		e := rv.Index(r)
		for e.Kind() == reflect.Interface && !e.IsNil() {
			e = e.Elem()
		}
		if (e.Kind() != reflect.Slice && e.Kind() != reflect.Array) || e.Len() != 2 {
			return nil, fmt.Errorf("tokenizer: merge %d is %v, not a pair [a, b]", r, e)
		}
		for k := range 2 {
			n, err := toInt(e.Index(k).Interface())
			if err != nil {
				return nil, fmt.Errorf("tokenizer: merge %d: %w", r, err)
			}
			out[r][k] = n
		}
	}
	return out, nil
}

func toInt(v any) (int, error) {
	const lim = math.MaxInt32
	switch x := v.(type) {
	case int:
		if x >= -lim && x <= lim {
			return x, nil
		}
	case int64:
		if x >= -lim && x <= lim {
			return int(x), nil
		}
	case int32:
		return int(x), nil
	case int16:
		return int(x), nil
	case int8:
		return int(x), nil
	case uint8:
		return int(x), nil
	case uint16:
		return int(x), nil
	case uint32:
		if x <= lim {
			return int(x), nil
		}
	case uint64:
		if x <= lim {
			return int(x), nil
		}
	case float64:
		if x == math.Trunc(x) && math.Abs(x) <= lim {
			return int(x), nil
		}
	case json.Number:
		if n, err := x.Int64(); err == nil {
			return toInt(n)
		}
		if f, err := x.Float64(); err == nil {
			return toInt(f)
		}
	}
	return 0, fmt.Errorf("id %v (%T) is not a usable integer", v, v)
}

func toStrings(v any) ([]string, error) {
	switch x := v.(type) {
	case []string:
		return x, nil
	case []any:
		out := make([]string, len(x))
		for i, e := range x {
			s, ok := e.(string)
			if !ok {
				return nil, fmt.Errorf("tokenizer: special token %d is %T, not a string", i, e)
			}
			out[i] = s
		}
		return out, nil
	}
	return nil, fmt.Errorf("tokenizer: special_tokens is %T, not a list of strings", v)
}

// Pattern is the split pattern of the spec.
func (t *Tokenizer) Pattern() string { return t.pattern }

// Merges is the number of merges M.
func (t *Tokenizer) Merges() int { return len(t.merges) }

// Merge is the pair of ids merge r joins into id 256+r (r < Merges()).
func (t *Tokenizer) Merge(r int) (a, b int) { return t.merges[r][0], t.merges[r][1] }

// SpecialTokens lists the special tokens; token j has id 256+M+j.
func (t *Tokenizer) SpecialTokens() []string { return append([]string(nil), t.specials...) }

// Size is n_vocab: 256 + merges + special tokens.
func (t *Tokenizer) Size() int { return len(t.vocab) + len(t.specials) }

// EOT is the id of <|endoftext|>, or -1 when the spec has no such token.
func (t *Tokenizer) EOT() int { return t.eot }

// BOS is -1: the course prepends nothing.
func (t *Tokenizer) BOS() int { return -1 }

// IsSpecial reports whether id is one of the special tokens (ids from
// 256+M on): text never produces them, and constrained decoding allows
// them only as an end token.
func (t *Tokenizer) IsSpecial(id int) bool { return id >= len(t.vocab) && id < t.Size() }

// TokenBytes is the raw bytes of id (a copy); a special token gives its
// literal text and an id out of range gives nil.
func (t *Tokenizer) TokenBytes(id int) []byte {
	switch {
	case id >= 0 && id < len(t.vocab):
		return t.vocab[id] // shared: the engine calls this per decoded token
	case id >= len(t.vocab) && id < t.Size():
		return []byte(t.specials[id-len(t.vocab)])
	}
	return nil
}

// Decode concatenates the bytes of ids (skipping ids out of range) and
// decodes them as UTF-8 the way Python's bytes.decode("utf-8",
// errors="replace") does.
func (t *Tokenizer) Decode(ids []int) string {
	var buf []byte
	for _, id := range ids {
		switch {
		case id >= 0 && id < len(t.vocab):
			buf = append(buf, t.vocab[id]...)
		case id >= len(t.vocab) && id < t.Size():
			buf = append(buf, t.specials[id-len(t.vocab)]...)
		}
	}
	return DecodeUTF8Replace(buf)
}

// Encode is the course's encode_ordinary: special-token strings are plain
// text, no BOS.
func (t *Tokenizer) Encode(text string) []int {
	return t.encodeOrdinary(nil, text)
}

// EncodeSpecial is the course's encode(allowed_special="all"): the text is
// first cut at special-token strings (leftmost occurrence; at equal
// positions the token listed first, as the course's alternation does), which
// become their ids.
func (t *Tokenizer) EncodeSpecial(text string) []int {
	var out []int
	// next[j] is where special j next occurs at or after pos (-1: never);
	// it is searched again only once pos has passed it, so many specials
	// in a long text cost linear time.
	next := make([]int, len(t.specials))
	for j := range next {
		next[j] = -2
	}
	pos := 0
	for {
		at, which := -1, -1
		for j, s := range t.specials {
			if s == "" {
				continue // an id no token has (tiktoken.go)
			}
			if next[j] == -2 || (next[j] >= 0 && next[j] < pos) {
				next[j] = strings.Index(text[pos:], s)
				if next[j] >= 0 {
					next[j] += pos
				}
			}
			if next[j] >= 0 && (at < 0 || next[j] < at) {
				at, which = next[j], j
			}
		}
		if at < 0 {
			break
		}
		out = t.encodeOrdinary(out, text[pos:at])
		out = append(out, len(t.vocab)+which)
		pos = at + len(t.specials[which])
	}
	return t.encodeOrdinary(out, text[pos:])
}

func (t *Tokenizer) encodeOrdinary(out []int, text string) []int {
	if out == nil {
		out = make([]int, 0, len(text)/3+1)
	}
	var scratch []int
	t.split(text, func(chunk string) {
		if chunk == "" {
			return
		}
		if len(chunk) <= cacheMaxChunk {
			t.mu.RLock()
			ids, ok := t.cache[chunk]
			t.mu.RUnlock()
			if ok {
				out = append(out, ids...)
				return
			}
		}
		scratch = t.mergeChunk(scratch[:0], chunk)
		if len(chunk) <= cacheMaxChunk {
			ids := append([]int(nil), scratch...)
			t.mu.Lock()
			if len(t.cache) >= cacheMaxEntries {
				clear(t.cache)
			}
			t.cache[chunk] = ids
			t.mu.Unlock()
		}
		out = append(out, scratch...)
	})
	return out
}

// DecodeUTF8Replace decodes b like Python's b.decode("utf-8",
// errors="replace"): each maximal subpart of an ill-formed sequence (the
// longest prefix of a well-formed sequence, or else one byte) becomes one
// U+FFFD. Go's strings.ToValidUTF8 differs (one U+FFFD per run of bad bytes),
// and so does ranging over a string (one per byte of a truncated sequence).
func DecodeUTF8Replace(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			sb.WriteByte(c)
			i++
			continue
		}
		n, lo, hi := seqInfo(c)
		if n == 0 { // not a lead byte
			sb.WriteString("\uFFFD")
			i++
			continue
		}
		// Count the continuation bytes that keep the prefix well-formed.
		k := 1
		for k < n && i+k < len(b) {
			x := b[i+k]
			if k == 1 {
				if x < lo || x > hi {
					break
				}
			} else if x < 0x80 || x > 0xBF {
				break
			}
			k++
		}
		if k == n {
			sb.Write(b[i : i+n])
		} else {
			sb.WriteString("\uFFFD")
		}
		i += k
	}
	return sb.String()
}

// seqInfo gives the length of the sequence lead byte c starts and the range
// of its first continuation byte (Unicode Table 3-7), or n == 0.
func seqInfo(c byte) (n int, lo, hi byte) {
	switch {
	case c >= 0xC2 && c <= 0xDF:
		return 2, 0x80, 0xBF
	case c == 0xE0:
		return 3, 0xA0, 0xBF
	case c == 0xED:
		return 3, 0x80, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		return 3, 0x80, 0xBF
	case c == 0xF0:
		return 4, 0x90, 0xBF
	case c >= 0xF1 && c <= 0xF3:
		return 4, 0x80, 0xBF
	case c == 0xF4:
		return 4, 0x80, 0x8F
	}
	return 0, 0, 0
}

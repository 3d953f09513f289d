package chattmpl

import (
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Message content must never turn into control ids, yet the template text
// around it must be tokenized with EncodeSpecial, and templates transform
// content (trim, strip, concatenation) so it cannot simply be encoded apart.
// Before rendering, every special-token text inside content (and the marker
// rune itself) is replaced by a placeholder: markOpen, the index of the text
// in protectedTexts, markClose. Private-use runes are not whitespace, so
// trim/strip act on the content as they would on the original. After
// rendering, the text between placeholders is encoded with EncodeSpecial and
// each placeholder's text with Encode. Content without special texts (the
// usual case) leaves no placeholder, and the whole prompt is one
// EncodeSpecial call, exactly as llama.cpp tokenizes a rendered prompt.
const (
	markOpen  = '\U000F0000'
	markClose = '\U000F0001'
)

// maxProtectCache bounds the memo of protected contents.
const maxProtectCache = 4096

// protect replaces the special-token texts in s by placeholders.
func (t *Template) protect(s string) string {
	if s == "" {
		return s
	}
	t.mu.Lock()
	p, ok := t.cache[s]
	t.mu.Unlock()
	if ok {
		return p
	}
	p = t.protectUncached(s)
	t.mu.Lock()
	if len(t.cache) >= maxProtectCache {
		t.cache = map[string]string{}
	}
	t.cache[s] = p
	t.mu.Unlock()
	return p
}

func (t *Template) protectUncached(s string) string {
	// The ids EncodeSpecial finds that Encode does not are the special tokens
	// written in s: this asks the tokenizer itself what it treats as special.
	plain := map[int]bool{}
	for _, id := range t.tok.Encode(s) {
		plain[id] = true
	}
	seen := map[string]bool{}
	var texts []string
	for _, id := range t.tok.EncodeSpecial(s) {
		if plain[id] {
			continue
		}
		txt := string(t.tok.TokenBytes(id))
		if txt != "" && !seen[txt] && strings.Contains(s, txt) {
			seen[txt] = true
			texts = append(texts, txt)
		}
	}
	if strings.ContainsRune(s, markOpen) {
		texts = append(texts, string(markOpen))
	}
	if len(texts) == 0 {
		return s
	}
	// Longest first, so a special text that contains another wins.
	sort.Slice(texts, func(i, j int) bool { return len(texts[i]) > len(texts[j]) })
	var b strings.Builder
	for i := 0; i < len(s); {
		matched := false
		for _, txt := range texts {
			if strings.HasPrefix(s[i:], txt) {
				b.WriteString(placeholder(txt))
				i += len(txt)
				matched = true
				break
			}
		}
		if !matched {
			b.WriteByte(s[i])
			i++
		}
	}
	return b.String()
}

// placeholder is the stand-in for txt.
func placeholder(txt string) string {
	var b strings.Builder
	b.WriteRune(markOpen)
	for i := 0; i < len(txt); i++ {
		if i > 0 {
			b.WriteByte('.')
		}
		b.WriteString(strconv.Itoa(int(txt[i])))
	}
	b.WriteRune(markClose)
	return b.String()
}

// nextPlaceholder finds the first well-formed placeholder in s: its start,
// end and text; start is -1 when there is none.
func nextPlaceholder(s string) (start, end int, txt string) {
	for off := 0; ; {
		i := strings.IndexRune(s[off:], markOpen)
		if i < 0 {
			return -1, -1, ""
		}
		i += off
		body := s[i+len(string(markOpen)):]
		j := strings.IndexRune(body, markClose)
		if j > 0 {
			if b, ok := decodeBytes(body[:j]); ok {
				return i, i + len(string(markOpen)) + j + len(string(markClose)), b
			}
		}
		off = i + len(string(markOpen))
	}
}

func decodeBytes(s string) (string, bool) {
	var out []byte
	for _, f := range strings.Split(s, ".") {
		n, err := strconv.Atoi(f)
		if err != nil || n < 0 || n > 255 {
			return "", false
		}
		out = append(out, byte(n))
	}
	return string(out), true
}

// unprotect restores the original text of every placeholder.
func unprotect(s string) string {
	var b strings.Builder
	for {
		i, j, txt := nextPlaceholder(s)
		if i < 0 {
			b.WriteString(s)
			return b.String()
		}
		b.WriteString(s[:i])
		b.WriteString(txt)
		s = s[j:]
	}
}

// encode tokenizes a rendered prompt: template text with EncodeSpecial,
// protected content with Encode.
func (t *Template) encode(s string) []int {
	var ids []int
	for {
		i, j, txt := nextPlaceholder(s)
		if i < 0 {
			return append(ids, t.tok.EncodeSpecial(s)...)
		}
		ids = append(ids, t.tok.EncodeSpecial(s[:i])...)
		ids = append(ids, t.plain(txt)...)
		s = s[j:]
	}
}

// plain encodes a special token's text as ordinary text. A tokenizer whose
// Encode still matches it (llama.cpp always matches user-defined tokens) gets
// it in two pieces, so no single id stands for it.
func (t *Template) plain(txt string) []int {
	ids := t.tok.Encode(txt)
	for _, id := range ids {
		if string(t.tok.TokenBytes(id)) == txt && len(txt) > 1 {
			_, n := utf8.DecodeRuneInString(txt)
			return append(t.tok.Encode(txt[:n]), t.tok.Encode(txt[n:])...)
		}
	}
	return ids
}

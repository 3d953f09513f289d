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
	// written in s (this asks the tokenizer itself what it treats as special),
	// less the ordinary ids that differ because a SentencePiece vocabulary
	// prefixes a space to the text after a special token.
	plain := map[int]bool{}
	for _, id := range t.tok.Encode(s) {
		plain[id] = true
	}
	seen := map[string]bool{}
	var texts []string
	for _, id := range t.tok.EncodeSpecial(s) {
		if plain[id] || !t.isSpecial(id) {
			continue
		}
		txt := string(t.tok.TokenBytes(id))
		if !seen[txt] && strings.Contains(s, txt) {
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

// encode tokenizes a rendered prompt. Without placeholders it is one
// EncodeSpecial call. With them it partitions the text like llama.cpp's
// tokenizer_st_partition: the special texts of the template parts (longest
// first) become ids, and each run of text between them, protected content
// included, is one Encode call. Encoding the parts separately instead would
// tokenize differently at the seams (a SentencePiece vocabulary would even
// get an extra space at each).
func (t *Template) encode(s string) []int {
	if i, _, _ := nextPlaceholder(s); i < 0 {
		return t.tok.EncodeSpecial(s)
	}
	type frag struct {
		text      string
		id        int  // special id, or -1 for text
		protected bool // restored content: never split, never special
	}
	var frags []frag
	specials := map[string]int{}
	addTemplateText := func(x string) {
		if x == "" {
			return
		}
		frags = append(frags, frag{text: x, id: -1})
		plain := map[int]bool{}
		for _, id := range t.tok.Encode(x) {
			plain[id] = true
		}
		for _, id := range t.tok.EncodeSpecial(x) {
			if !plain[id] && t.isSpecial(id) {
				specials[string(t.tok.TokenBytes(id))] = id
			}
		}
	}
	for {
		i, j, txt := nextPlaceholder(s)
		if i < 0 {
			addTemplateText(s)
			break
		}
		addTemplateText(s[:i])
		frags = append(frags, frag{text: txt, id: -1, protected: true})
		s = s[j:]
	}
	texts := make([]string, 0, len(specials))
	for x := range specials {
		if x != "" {
			texts = append(texts, x)
		}
	}
	sort.Slice(texts, func(i, j int) bool {
		if len(texts[i]) != len(texts[j]) {
			return len(texts[i]) > len(texts[j])
		}
		return texts[i] < texts[j]
	})
	for _, x := range texts {
		var next []frag
		for _, f := range frags {
			if f.id >= 0 || f.protected {
				next = append(next, f)
				continue
			}
			parts := strings.Split(f.text, x)
			for k, p := range parts {
				if k > 0 {
					next = append(next, frag{text: x, id: specials[x]})
				}
				if p != "" {
					next = append(next, frag{text: p, id: -1})
				}
			}
		}
		frags = next
	}
	var ids []int
	var run strings.Builder
	flush := func() {
		if run.Len() > 0 {
			ids = append(ids, t.tok.Encode(run.String())...)
			run.Reset()
		}
	}
	for _, f := range frags {
		switch {
		case f.id >= 0:
			flush()
			ids = append(ids, f.id)
		case f.protected && t.matchedByEncode(f.text):
			flush()
			ids = append(ids, t.plain(f.text)...)
		default:
			run.WriteString(f.text)
		}
	}
	flush()
	return ids
}

// isSpecial reports whether EncodeSpecial reads id's text as id alone while
// Encode does not: a control token, not an ordinary piece.
func (t *Template) isSpecial(id int) bool {
	t.mu.Lock()
	v, ok := t.special[id]
	t.mu.Unlock()
	if ok {
		return v
	}
	txt := string(t.tok.TokenBytes(id))
	es := t.tok.EncodeSpecial(txt)
	e := t.tok.Encode(txt)
	v = txt != "" && len(es) == 1 && es[0] == id && !(len(e) == 1 && e[0] == id)
	t.mu.Lock()
	t.special[id] = v
	t.mu.Unlock()
	return v
}

// matchedByEncode reports whether Encode turns txt into its special id
// (llama.cpp always matches user-defined tokens).
func (t *Template) matchedByEncode(txt string) bool {
	for _, id := range t.tok.Encode(txt) {
		if string(t.tok.TokenBytes(id)) == txt && len(txt) > 1 {
			return true
		}
	}
	return false
}

// plain encodes a special token's text that Encode would still match in two
// pieces, so no single id stands for it.
func (t *Template) plain(txt string) []int {
	_, n := utf8.DecodeRuneInString(txt)
	return append(t.tok.Encode(txt[:n]), t.tok.Encode(txt[n:])...)
}

package coursebpe

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"chat/models/quote"

	"github.com/dlclark/regexp2"
)

// The split patterns of the course's src/tokenizer/bpe.py. GPT4 is the
// default the course trains with.
const (
	GPT4SplitPattern = `'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]++[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+`
	GPT2SplitPattern = `'(?:[sdmt]|ll|ve|re)| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
	// GPT2TiktokenSplitPattern is tiktoken's spelling of the same GPT-2 pattern.
	GPT2TiktokenSplitPattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`
)

// A splitter calls emit with each chunk of s, in order: what Python's
// regex.findall(pattern, s) returns.
type splitter func(s string, emit func(string))

// regexTimeout bounds one regexp2 match so a pathological pattern from a
// spec cannot hang the app.
const regexTimeout = 5 * time.Second

func newSplitter(pattern string) (splitter, error) {
	switch pattern {
	case GPT4SplitPattern:
		return splitGPT4, nil
	case GPT2SplitPattern, GPT2TiktokenSplitPattern:
		return splitGPT2, nil
	}
	rs, err := newRegexSplitter(pattern)
	if err != nil {
		return nil, err
	}
	return rs.split, nil
}

// Character classes as Python's regex module sees them. Each byte of invalid
// UTF-8 counts as one character that is none of these (like a lone
// surrogate in a Python str), so it lands in the punctuation class.
const (
	cL = 1 << iota // \p{L}
	cN             // \p{N}
	cS             // \s
)

var asciiClass [utf8.RuneSelf]uint8

func init() {
	for r := range rune(utf8.RuneSelf) {
		asciiClass[r] = classOf(r)
	}
}

func classOf(r rune) uint8 {
	var c uint8
	if unicode.Is(letterTable, r) {
		c |= cL
	}
	if unicode.Is(numberTable, r) {
		c |= cN
	}
	// The regex module's \s is White_Space, which is Go's unicode.IsSpace
	// (not str.isspace: \x1c-\x1f are not \s).
	if unicode.IsSpace(r) {
		c |= cS
	}
	return c
}

// at decodes the character at byte i: rune, width in bytes, class.
func at(s string, i int) (rune, int, uint8) {
	if c := s[i]; c < utf8.RuneSelf {
		return rune(c), 1, asciiClass[c]
	}
	r, w := utf8.DecodeRuneInString(s[i:])
	if r == utf8.RuneError {
		return r, w, 0 // invalid byte or a real U+FFFD: both are So-like
	}
	return r, w, classOf(r)
}

// runOf is the byte length of the run of characters starting at i whose
// class has a bit of mask, or, with mask == 0, whose class is empty
// ([^\s\p{L}\p{N}]).
func runOf(s string, i int, mask uint8) int {
	j := i
	for j < len(s) {
		var c uint8
		w := 1
		if b := s[j]; b < utf8.RuneSelf {
			c = asciiClass[b]
		} else {
			_, w, c = at(s, j)
		}
		if (mask == 0 && c != 0) || (mask != 0 && c&mask == 0) {
			break
		}
		j += w
	}
	return j - i
}

func isN(c uint8) bool { return c&cN != 0 }
func isS(c uint8) bool { return c&cS != 0 }

// contraction matches (?:[sdmt]|ll|ve|re) at i (after the apostrophe) and
// returns its byte length or 0. With fold, it is (?i:...) under the regex
// module's simple case folding, where U+017F (long s) also matches s.
func contraction(s string, i int, fold bool) int {
	if i >= len(s) {
		return 0
	}
	r, w, _ := at(s, i)
	if fold {
		r = foldASCII(r)
	}
	switch r {
	case 's', 'd', 'm', 't':
		return w
	case 'l', 'v', 'r':
		if i+1 < len(s) {
			r2 := rune(s[i+1])
			if fold {
				r2 = foldASCII(r2)
			}
			if (r == 'l' && r2 == 'l') || (r == 'v' && r2 == 'e') || (r == 'r' && r2 == 'e') {
				return 2
			}
		}
	}
	return 0
}

func foldASCII(r rune) rune {
	if r >= 'A' && r <= 'Z' {
		return r + 'a' - 'A'
	}
	if r == 0x17F { // ſ folds to s
		return 's'
	}
	return r
}

// splitGPT4 scans GPT4SplitPattern by hand, trying the alternatives in order
// at each position exactly as the backtracking regex engine does.
func splitGPT4(s string, emit func(string)) {
	for i := 0; i < len(s); {
		n := matchGPT4(s, i)
		emit(s[i : i+n])
		i += n
	}
}

func matchGPT4(s string, i int) int {
	r, w, c := at(s, i)
	// '(?i:[sdmt]|ll|ve|re)
	if r == '\'' {
		if n := contraction(s, i+1, true); n > 0 {
			return 1 + n
		}
	}
	// [^\r\n\p{L}\p{N}]?+\p{L}+ ; the possessive ?+ never gives the
	// character back, but giving it back could not help anyway.
	j := i
	if c&(cL|cN) == 0 && r != '\r' && r != '\n' {
		j += w
	}
	if j < len(s) {
		if n := runOf(s, j, cL); n > 0 {
			return j + n - i
		}
	}
	// \p{N}{1,3}
	if isN(c) {
		j := i + w
		for k := 1; k < 3 && j < len(s); k++ {
			_, w2, c2 := at(s, j)
			if !isN(c2) {
				break
			}
			j += w2
		}
		return j - i
	}
	// ` ?[^\s\p{L}\p{N}]++[\r\n]*` ; without the space the match would have
	// to start with a space, which is \s, so only the with-space try counts.
	j = i
	if r == ' ' {
		j++
	}
	if j < len(s) {
		if n := runOf(s, j, 0); n > 0 {
			j += n
			for j < len(s) && (s[j] == '\r' || s[j] == '\n') {
				j++
			}
			return j - i
		}
	}
	if !isS(c) {
		// Unreachable: every non-space character matched above. Python's
		// findall would skip a character no alternative matches.
		return w
	}
	// The maximal run of whitespace from i, the end of its last \r or \n,
	// and the start of its last character.
	end, nl, last := i, -1, i
	for end < len(s) {
		r2, w2, c2 := at(s, end)
		if !isS(c2) {
			break
		}
		last = end
		end += w2
		if r2 == '\r' || r2 == '\n' {
			nl = end
		}
	}
	// \s*[\r\n]: the greedy \s* backs off to the last line break.
	if nl >= 0 {
		return nl - i
	}
	// \s+(?!\S): the whole run at the end of the text, else all but its
	// last character (which then starts the next chunk).
	if end == len(s) || last == i {
		return end - i // or \s+ for a single space before a non-space
	}
	return last - i
}

// splitGPT2 scans GPT2SplitPattern by hand.
func splitGPT2(s string, emit func(string)) {
	for i := 0; i < len(s); {
		n := matchGPT2(s, i)
		emit(s[i : i+n])
		i += n
	}
}

func matchGPT2(s string, i int) int {
	r, w, c := at(s, i)
	if r == '\'' {
		if n := contraction(s, i+1, false); n > 0 {
			return 1 + n
		}
	}
	// ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: after an optional space.
	// Without the space each would have to start with a space, which none of
	// the classes holds.
	j := i
	if r == ' ' {
		j++
	}
	if j < len(s) {
		for _, mask := range [...]uint8{cL, cN, 0} {
			if n := runOf(s, j, mask); n > 0 {
				return j + n - i
			}
		}
	}
	if !isS(c) {
		return w // unreachable, see matchGPT4
	}
	end, last := i, i
	for end < len(s) {
		_, w2, c2 := at(s, end)
		if !isS(c2) {
			break
		}
		last = end
		end += w2
	}
	if end == len(s) || last == i {
		return end - i
	}
	return last - i
}

// regexSplitter runs any other pattern with regexp2, after rewriting the
// regex module syntax .NET lacks. It is much slower than the hand scanners,
// and its Unicode tables are Go's (older than the regex module's).
type regexSplitter struct {
	re    *regexp2.Regexp
	group int // findall returns this group when the pattern has one
}

func newRegexSplitter(pattern string) (*regexSplitter, error) {
	rw, err := RewritePattern(pattern)
	if err != nil {
		return nil, fmt.Errorf("tokenizer: split pattern %s: %w", quote.Quote(pattern), err)
	}
	re, err := regexp2.Compile(rw, regexp2.None)
	if err != nil {
		// regexp2's message quotes the whole pattern again.
		return nil, fmt.Errorf("tokenizer: split pattern %s does not compile: %s", quote.Quote(pattern), quote.Cut(err.Error(), 200))
	}
	re.MatchTimeout = regexTimeout
	rs := &regexSplitter{re: re}
	switch n := len(re.GetGroupNumbers()) - 1; {
	case n == 1:
		rs.group = re.GetGroupNumbers()[1]
	case n > 1:
		// findall would return tuples, which the course cannot encode.
		return nil, fmt.Errorf("tokenizer: split pattern %s has %d capturing groups; findall needs at most one", quote.Quote(pattern), n)
	}
	return rs, nil
}

func (rs *regexSplitter) split(s string, emit func(string)) {
	// Run on runes, keeping each rune's byte offset so chunks keep the
	// original bytes (regexp2 would turn invalid bytes into U+FFFD).
	runes := make([]rune, 0, len(s))
	offs := make([]int, 0, len(s)+1)
	for i, r := range s {
		runes = append(runes, r)
		offs = append(offs, i)
	}
	offs = append(offs, len(s))
	m, err := rs.re.FindRunesMatch(runes)
	end := 0
	for m != nil && err == nil {
		if rs.group == 0 {
			emit(s[offs[m.Index]:offs[m.Index+m.Length]])
		} else if g := m.GroupByNumber(rs.group); g != nil && len(g.Captures) > 0 {
			emit(s[offs[g.Index]:offs[g.Index+g.Length]])
		}
		end = offs[m.Index+m.Length]
		m, err = rs.re.FindNextMatch(m)
	}
	if err != nil {
		// Timed out: keep the rest of the text as one chunk rather than
		// hang or lose it.
		emit(s[end:])
	}
}

// RewritePattern turns a Python regex-module pattern into one regexp2 (.NET
// syntax) compiles with the same meaning: possessive quantifiers X?+ X*+ X++
// X{m,n}+ become atomic groups (?>X?) ..., (?P<name> becomes (?<name>, and
// (?P=name) becomes \k<name>.
func RewritePattern(p string) (string, error) {
	var out strings.Builder
	var groups []int // output offsets of open groups
	atom := -1       // output offset of the last quantifiable atom
	for i := 0; i < len(p); {
		c := p[i]
		switch c {
		case '\\':
			if i+1 >= len(p) {
				return "", fmt.Errorf("trailing backslash")
			}
			n := escapeLen(p, i)
			atom = out.Len()
			out.WriteString(p[i : i+n])
			i += n
		case '[':
			n, err := classLen(p, i)
			if err != nil {
				return "", err
			}
			atom = out.Len()
			out.WriteString(p[i : i+n])
			i += n
		case '(':
			groups = append(groups, out.Len())
			atom = -1
			switch {
			case strings.HasPrefix(p[i:], "(?P<"):
				out.WriteString("(?<")
				i += 4
			case strings.HasPrefix(p[i:], "(?P="):
				k := strings.IndexByte(p[i:], ')')
				if k < 0 {
					return "", fmt.Errorf("unterminated (?P= at %d", i)
				}
				groups = groups[:len(groups)-1]
				atom = out.Len()
				out.WriteString(`\k<` + p[i+4:i+k] + `>`)
				i += k + 1
			default:
				out.WriteByte('(')
				i++
			}
		case ')':
			if len(groups) == 0 {
				return "", fmt.Errorf("unbalanced ) at %d", i)
			}
			atom = groups[len(groups)-1]
			groups = groups[:len(groups)-1]
			out.WriteByte(')')
			i++
		case '?', '*', '+', '{':
			n := quantLen(p, i)
			if n == 0 { // a { that is not a quantifier is a literal
				atom = out.Len()
				out.WriteByte(c)
				i++
				continue
			}
			q := p[i : i+n]
			i += n
			if i < len(p) && p[i] == '+' {
				if atom < 0 {
					return "", fmt.Errorf("possessive quantifier at %d has nothing to repeat", i)
				}
				s := out.String()
				out.Reset()
				out.WriteString(s[:atom] + "(?>" + s[atom:] + q + ")")
				i++
			} else {
				out.WriteString(q)
				if i < len(p) && p[i] == '?' {
					out.WriteByte('?')
					i++
				}
			}
			atom = -1
		case '|':
			atom = -1
			out.WriteByte(c)
			i++
		case '^', '$':
			atom = -1
			out.WriteByte(c)
			i++
		default:
			_, w := utf8.DecodeRuneInString(p[i:])
			atom = out.Len()
			out.WriteString(p[i : i+w])
			i += w
		}
	}
	if len(groups) > 0 {
		return "", fmt.Errorf("unbalanced (")
	}
	return out.String(), nil
}

// escapeLen is the byte length of the escape at p[i] == '\\'.
func escapeLen(p string, i int) int {
	j := i + 1
	switch p[j] {
	case 'p', 'P', 'N', 'x', 'u', 'U':
		if j+1 < len(p) && p[j+1] == '{' {
			if k := strings.IndexByte(p[j:], '}'); k >= 0 {
				return j + k + 1 - i
			}
		}
		hex := map[byte]int{'x': 2, 'u': 4, 'U': 8}[p[j]]
		k := j + 1
		for k < len(p) && k < j+1+hex && isHex(p[k]) {
			k++
		}
		return k - i
	}
	_, w := utf8.DecodeRuneInString(p[j:])
	return 1 + w
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

// classLen is the byte length of the character class at p[i] == '['.
func classLen(p string, i int) (int, error) {
	j := i + 1
	if j < len(p) && p[j] == '^' {
		j++
	}
	if j < len(p) && p[j] == ']' { // a leading ] is literal
		j++
	}
	for j < len(p) {
		switch p[j] {
		case '\\':
			if j+1 >= len(p) {
				return 0, fmt.Errorf("trailing backslash in class at %d", i)
			}
			j += escapeLen(p, j)
		case ']':
			return j + 1 - i, nil
		default:
			j++
		}
	}
	return 0, fmt.Errorf("unterminated character class at %d", i)
}

// quantLen is the byte length of the quantifier at p[i] (?, *, + or a
// {m}, {m,}, {,n}, {m,n} repeat), or 0 when p[i] == '{' is a literal.
func quantLen(p string, i int) int {
	if p[i] != '{' {
		return 1
	}
	j := i + 1
	digits := func() int {
		k := j
		for j < len(p) && p[j] >= '0' && p[j] <= '9' {
			j++
		}
		return j - k
	}
	a := digits()
	b := 0
	if j < len(p) && p[j] == ',' {
		j++
		b = digits()
	}
	if j < len(p) && p[j] == '}' && (a > 0 || b > 0) {
		return j + 1 - i
	}
	return 0
}

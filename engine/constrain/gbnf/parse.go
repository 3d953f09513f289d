package gbnf

import (
	"fmt"
	"strconv"
	"unicode/utf8"

	"chat/engine/constrain/utf8range"
	"chat/models/quote"
)

// The syntax tree of a grammar, before lowering to byte-level rules
// (grammar.go).

type itemKind uint8

const (
	itemLiteral itemKind = iota // "abc": its UTF-8 bytes in order
	itemClass                   // [a-z], [^"], .: one code point of class
	itemRef                     // a rule name
	itemGroup                   // ( alternatives )
)

type item struct {
	kind     itemKind
	lit      []byte
	class    []utf8range.Range // normalised code points
	name     string
	group    [][]item
	min, max int // repeat counts; 1, 1 when not repeated; max -1: no limit
	pos      int // byte offset in the source, for errors
}

type ruleDef struct {
	name string
	alts [][]item
	pos  int
}

// Limits keep hostile grammars from costing unbounded memory or time.
const (
	MaxSource  = 1 << 20 // bytes of grammar text
	MaxRepeat  = 10_000  // the largest {m,n} count
	maxNesting = 200     // nested parentheses
)

// Error is a grammar error at a position of the source.
type Error struct {
	Line, Col int // 1-based; Col counts characters
	Msg       string
}

func (e *Error) Error() string { return fmt.Sprintf("gbnf: line %d, col %d: %s", e.Line, e.Col, e.Msg) }

type parser struct {
	src   string
	pos   int
	depth int
}

// errAt builds an Error for byte offset pos.
func errAt(src string, pos int, format string, a ...any) *Error {
	line, col := 1, 1
	for i, r := range src {
		if i >= pos {
			break
		}
		if r == '\n' {
			line, col = line+1, 1
		} else {
			col++
		}
	}
	return &Error{line, col, fmt.Sprintf(format, a...)}
}

func (p *parser) errf(format string, a ...any) error { return errAt(p.src, p.pos, format, a...) }

func (p *parser) at(c byte) bool { return p.pos < len(p.src) && p.src[p.pos] == c }

// space skips blanks and # comments; newlines too when newlineOK (inside
// parentheses, after '|', between rules), as llama.cpp's parser does.
func (p *parser) space(newlineOK bool) {
	for p.pos < len(p.src) {
		switch c := p.src[p.pos]; {
		case c == ' ' || c == '\t':
			p.pos++
		case c == '#':
			for p.pos < len(p.src) && p.src[p.pos] != '\n' && p.src[p.pos] != '\r' {
				p.pos++
			}
		case newlineOK && (c == '\n' || c == '\r'):
			p.pos++
		default:
			return
		}
	}
}

func isWordChar(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-'
}

func (p *parser) name() (string, error) {
	start := p.pos
	for p.pos < len(p.src) && isWordChar(p.src[p.pos]) {
		p.pos++
	}
	if p.pos == start {
		return "", p.errf("expected a rule name (letters, digits and '-')")
	}
	return p.src[start:p.pos], nil
}

// parse reads the rules of src.
func parse(src string) ([]ruleDef, error) {
	if len(src) > MaxSource {
		return nil, &Error{1, 1, fmt.Sprintf("grammar is %d bytes; at most %d are accepted", len(src), MaxSource)}
	}
	if !utf8.ValidString(src) {
		for i, r := range src {
			if r == utf8.RuneError {
				return nil, errAt(src, i, "expected valid UTF-8")
			}
		}
	}
	p := &parser{src: src}
	var rules []ruleDef
	p.space(true)
	for p.pos < len(p.src) {
		r, err := p.rule()
		if err != nil {
			return nil, err
		}
		rules = append(rules, r)
		p.space(true)
	}
	return rules, nil
}

// rule := name '::=' alternatives (newline | end)
func (p *parser) rule() (ruleDef, error) {
	start := p.pos
	name, err := p.name()
	if err != nil {
		return ruleDef{}, err
	}
	p.space(false)
	if !(p.pos+3 <= len(p.src) && p.src[p.pos:p.pos+3] == "::=") {
		return ruleDef{}, p.errf("expected '::=' after the rule name %s", quote.Quote(name))
	}
	p.pos += 3
	p.space(true)
	alts, err := p.alternatives(false)
	if err != nil {
		return ruleDef{}, err
	}
	switch {
	case p.at('\r'):
		p.pos++
		if p.at('\n') {
			p.pos++
		}
	case p.at('\n'):
		p.pos++
	case p.pos < len(p.src):
		return ruleDef{}, p.errf("expected the end of the line (or '|'), found %q", p.rest())
	}
	return ruleDef{name: name, alts: alts, pos: start}, nil
}

// rest is a short quote of the source at p.pos for messages.
func (p *parser) rest() string {
	s := p.src[p.pos:]
	if len(s) > 12 {
		n := 12
		for n > 0 && !utf8.RuneStart(s[n]) {
			n--
		}
		s = s[:n] + "…"
	}
	return s
}

// alternatives := sequence ('|' sequence)*
func (p *parser) alternatives(nested bool) ([][]item, error) {
	var alts [][]item
	for {
		seq, err := p.sequence(nested)
		if err != nil {
			return nil, err
		}
		alts = append(alts, seq)
		if !p.at('|') {
			return alts, nil
		}
		p.pos++
		p.space(true)
	}
}

// sequence := (atom repeat?)*
func (p *parser) sequence(nested bool) ([]item, error) {
	var seq []item
	for p.pos < len(p.src) {
		start := p.pos
		var it item
		switch c := p.src[p.pos]; {
		case c == '"':
			lit, err := p.literal()
			if err != nil {
				return nil, err
			}
			it = item{kind: itemLiteral, lit: lit}
		case c == '[':
			class, err := p.class()
			if err != nil {
				return nil, err
			}
			it = item{kind: itemClass, class: class}
		case c == '.':
			p.pos++
			it = item{kind: itemClass, class: utf8range.Normalize([]utf8range.Range{{Lo: 0, Hi: utf8range.MaxRune}})}
		case isWordChar(c):
			name, _ := p.name()
			it = item{kind: itemRef, name: name}
		case c == '(':
			p.depth++
			if p.depth > maxNesting {
				return nil, p.errf("parentheses nested more than %d deep", maxNesting)
			}
			p.pos++
			p.space(true)
			alts, err := p.alternatives(true)
			if err != nil {
				return nil, err
			}
			if !p.at(')') {
				return nil, p.errf("expected ')' to close the '(' at %s", errAt(p.src, start, "").pos())
			}
			p.pos++
			p.depth--
			it = item{kind: itemGroup, group: alts}
		case c == '<' || c == '!':
			return nil, p.errf("token references (<...>, !<...>) are not supported: write the text instead")
		case c == '*' || c == '+' || c == '?' || c == '{':
			return nil, p.errf("expected something before '%c' to repeat", c)
		default:
			return seq, nil
		}
		it.pos, it.min, it.max = start, 1, 1
		p.space(nested)
		if err := p.repeat(&it, nested); err != nil {
			return nil, err
		}
		seq = append(seq, it)
	}
	return seq, nil
}

// pos formats an Error's position for a message about another place.
func (e *Error) pos() string { return fmt.Sprintf("line %d, col %d", e.Line, e.Col) }

// repeat reads one * + ? or {m,n} after an item.
func (p *parser) repeat(it *item, nested bool) error {
	if p.pos >= len(p.src) {
		return nil
	}
	switch p.src[p.pos] {
	case '*':
		it.min, it.max = 0, -1
	case '+':
		it.min, it.max = 1, -1
	case '?':
		it.min, it.max = 0, 1
	case '{':
		open := p.pos
		p.pos++
		p.space(nested)
		lo, err := p.int()
		if err != nil {
			return err
		}
		p.space(nested)
		hi := lo
		if p.at(',') {
			p.pos++
			p.space(nested)
			hi = -1
			if p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
				if hi, err = p.int(); err != nil {
					return err
				}
				p.space(nested)
			}
		}
		if !p.at('}') {
			return p.errf("expected '}' to close the '{' at %s", errAt(p.src, open, "").pos())
		}
		if hi >= 0 && hi < lo {
			return errAt(p.src, open, "repeat {%d,%d} has its maximum below its minimum", lo, hi)
		}
		it.min, it.max = lo, hi
	default:
		return nil
	}
	p.pos++
	p.space(nested)
	if p.pos < len(p.src) {
		if c := p.src[p.pos]; c == '*' || c == '+' || c == '?' || c == '{' {
			return p.errf("a second repeat '%c' right after another: put the repeated part in parentheses", c)
		}
	}
	return nil
}

func (p *parser) int() (int, error) {
	start := p.pos
	for p.pos < len(p.src) && p.src[p.pos] >= '0' && p.src[p.pos] <= '9' {
		p.pos++
	}
	if start == p.pos {
		return 0, p.errf("expected a number")
	}
	digits := p.src[start:p.pos]
	n, err := strconv.Atoi(digits)
	if err != nil || n > MaxRepeat {
		p.pos = start
		return 0, p.errf("repeat count %s is over %d", digits, MaxRepeat)
	}
	return n, nil
}

// literal reads "..." and returns its UTF-8 bytes.
func (p *parser) literal() ([]byte, error) {
	open := p.pos
	p.pos++
	var b []byte
	for {
		if p.pos >= len(p.src) || p.src[p.pos] == '\n' {
			return nil, errAt(p.src, open, "expected '\"' to close this string")
		}
		if p.at('"') {
			p.pos++
			return b, nil
		}
		r, err := p.char()
		if err != nil {
			return nil, err
		}
		b = utf8.AppendRune(b, r)
	}
}

// class reads [...] or [^...] and returns its code points.
func (p *parser) class() ([]utf8range.Range, error) {
	open := p.pos
	p.pos++
	neg := false
	if p.at('^') {
		neg = true
		p.pos++
	}
	var rs []utf8range.Range
	for !p.at(']') {
		if p.pos >= len(p.src) || p.src[p.pos] == '\n' {
			return nil, errAt(p.src, open, "expected ']' to close this character class")
		}
		lo, err := p.char()
		if err != nil {
			return nil, err
		}
		hi := lo
		if p.at('-') && p.pos+1 < len(p.src) && p.src[p.pos+1] != ']' {
			dash := p.pos
			p.pos++
			if hi, err = p.char(); err != nil {
				return nil, err
			}
			if hi < lo {
				return nil, errAt(p.src, dash, "range %q-%q is reversed", lo, hi)
			}
		}
		rs = append(rs, utf8range.Range{Lo: lo, Hi: hi})
	}
	p.pos++
	if neg {
		rs = utf8range.Negate(rs)
	}
	rs = utf8range.Normalize(rs)
	if len(rs) == 0 {
		return nil, errAt(p.src, open, "this character class matches no character")
	}
	return rs, nil
}

// char reads one character or escape inside "..." or [...].
func (p *parser) char() (rune, error) {
	if p.src[p.pos] != '\\' {
		r, n := utf8.DecodeRuneInString(p.src[p.pos:])
		p.pos += n
		return r, nil
	}
	at := p.pos
	if p.pos+1 >= len(p.src) {
		return 0, p.errf("expected a character after '\\'")
	}
	c := p.src[p.pos+1]
	p.pos += 2
	switch c {
	case 'x':
		return p.hex(at, 2)
	case 'u':
		return p.hex(at, 4)
	case 'U':
		return p.hex(at, 8)
	case 't':
		return '\t', nil
	case 'r':
		return '\r', nil
	case 'n':
		return '\n', nil
	case '\\', '"', '[', ']', '-':
		return rune(c), nil
	}
	p.pos = at
	return 0, p.errf(`unknown escape %q: expected one of \x.. \u.... \U........ \t \r \n \\ \" \[ \] \-`, p.src[at:at+1+utf8.RuneLen(firstRune(p.src[at+1:]))])
}

func (p *parser) hex(at, n int) (rune, error) {
	if p.pos+n > len(p.src) {
		p.pos = at
		return 0, p.errf("expected %d hex digits after '\\%c'", n, p.src[at+1])
	}
	v, err := strconv.ParseUint(p.src[p.pos:p.pos+n], 16, 32)
	if err != nil {
		p.pos = at
		return 0, p.errf("expected %d hex digits after '\\%c'", n, p.src[at+1])
	}
	if v > utf8range.MaxRune || v >= 0xD800 && v <= 0xDFFF {
		digits := p.src[p.pos : p.pos+n]
		p.pos = at
		return 0, p.errf("\\%c%s is not a Unicode scalar value", p.src[at+1], digits)
	}
	p.pos += n
	return rune(v), nil
}

func firstRune(s string) rune {
	r, _ := utf8.DecodeRuneInString(s)
	return r
}

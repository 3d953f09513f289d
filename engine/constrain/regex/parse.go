package regex

import (
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"chat/engine/constrain/utf8range"
)

// Op is the kind of a syntax tree node.
type Op uint8

const (
	OpEmpty  Op = iota // matches the empty string
	OpClass            // one code point of Class
	OpConcat           // Subs in order
	OpAlt              // one of Subs
	OpRepeat           // Subs[0] Min..Max times (Max -1: no limit)
)

// Node is the parsed form of a regex. Character classes hold code points;
// the compiler turns them into UTF-8 byte sequences.
type Node struct {
	Op       Op
	Class    []utf8range.Range // OpClass, normalised
	Subs     []*Node
	Min, Max int // OpRepeat
}

// Limits keep a hostile pattern from costing unbounded memory.
const (
	MaxRepeat  = 1000 // the largest {m,n} count, as Go's regexp allows
	MaxPattern = 1 << 16
)

// Syntax is a parsed pattern and whether it was anchored at each end by an
// explicit ^ or $.
type Syntax struct {
	Root                   *Node
	AnchorStart, AnchorEnd bool
}

// Error is a syntax error: the byte offset in the pattern and what was
// expected there.
type Error struct {
	Pos int
	Msg string
}

func (e *Error) Error() string { return fmt.Sprintf("regex: at byte %d: %s", e.Pos, e.Msg) }

// Parse parses pattern in the documented subset (see the package comment).
func Parse(pattern string) (*Syntax, error) {
	if len(pattern) > MaxPattern {
		return nil, &Error{0, fmt.Sprintf("pattern is %d bytes; at most %d are accepted", len(pattern), MaxPattern)}
	}
	if !utf8.ValidString(pattern) {
		return nil, &Error{firstInvalid(pattern), "expected valid UTF-8"}
	}
	p := &parser{s: pattern}
	syn := &Syntax{}
	if p.peekIs('^') {
		syn.AnchorStart = true
		p.pos++
	}
	root, err := p.alt()
	if err != nil {
		return nil, err
	}
	if p.pos < len(p.s) {
		if p.s[p.pos] == ')' {
			return nil, p.errf("unmatched ')': expected a '(' before it")
		}
		return nil, p.errf("unexpected %q", p.s[p.pos])
	}
	syn.Root = root
	syn.AnchorEnd = p.anchorEnd
	// By the '|' read outside any group, not by the root's Op: a group is
	// no node of its own, so ^(a|b)$, the form the error asks for, has an
	// alternation at its root too and was refused with it.
	if (syn.AnchorStart || syn.AnchorEnd) && p.topAlt {
		return nil, &Error{0, "'^' or '$' with '|' at the top level: put the alternatives in a group, as in ^(a|b)$"}
	}
	return syn, nil
}

func firstInvalid(s string) int {
	for i, r := range s {
		if r == utf8.RuneError {
			if _, n := utf8.DecodeRuneInString(s[i:]); n <= 1 {
				return i
			}
		}
	}
	return 0
}

type parser struct {
	s         string
	pos       int
	depth     int
	anchorEnd bool
	topAlt    bool // a '|' outside every group
}

func (p *parser) errf(format string, a ...any) error {
	return &Error{p.pos, fmt.Sprintf(format, a...)}
}

func (p *parser) peekIs(c byte) bool { return p.pos < len(p.s) && p.s[p.pos] == c }

// alt := concat ('|' concat)*
func (p *parser) alt() (*Node, error) {
	p.depth++
	if p.depth > 200 {
		return nil, p.errf("groups nested more than 200 deep")
	}
	defer func() { p.depth-- }()
	var alts []*Node
	for {
		n, err := p.concat()
		if err != nil {
			return nil, err
		}
		alts = append(alts, n)
		if !p.peekIs('|') {
			break
		}
		p.topAlt = p.topAlt || p.depth == 1
		p.pos++
	}
	if len(alts) == 1 {
		return alts[0], nil
	}
	return &Node{Op: OpAlt, Subs: alts}, nil
}

// concat := repeat*, up to '|', ')' or the end.
func (p *parser) concat() (*Node, error) {
	var subs []*Node
	for p.pos < len(p.s) {
		c := p.s[p.pos]
		if c == '|' || c == ')' {
			break
		}
		if c == '$' {
			if p.pos == len(p.s)-1 && p.depth == 1 {
				p.anchorEnd = true
				p.pos++
				break
			}
			return nil, p.errf("'$' is only supported at the very end of the pattern")
		}
		atom, err := p.atom()
		if err != nil {
			return nil, err
		}
		if atom, err = p.quantifiers(atom); err != nil {
			return nil, err
		}
		subs = append(subs, atom)
	}
	switch len(subs) {
	case 0:
		return &Node{Op: OpEmpty}, nil
	case 1:
		return subs[0], nil
	}
	return &Node{Op: OpConcat, Subs: subs}, nil
}

func (p *parser) quantifiers(atom *Node) (*Node, error) {
	if p.pos >= len(p.s) {
		return atom, nil
	}
	lo, hi := 0, 0
	switch p.s[p.pos] {
	case '*':
		lo, hi = 0, -1
	case '+':
		lo, hi = 1, -1
	case '?':
		lo, hi = 0, 1
	case '{':
		var ok bool
		var err error
		if lo, hi, ok, err = p.counts(); err != nil || !ok {
			return atom, err // !ok: a literal '{'
		}
		p.pos-- // counts left p.pos after the '}'
	default:
		return atom, nil
	}
	p.pos++
	if p.peekIs('?') { // lazy: the same set of matches
		p.pos++
	}
	if p.pos < len(p.s) {
		switch c := p.s[p.pos]; {
		case c == '*' || c == '+' || c == '?' || c == '{' && p.pos+1 < len(p.s) && p.s[p.pos+1] >= '0' && p.s[p.pos+1] <= '9':
			return nil, p.errf("nested repeat operator '%c': put the repeated part in a group, e.g. (x*)*", c)
		}
	}
	return &Node{Op: OpRepeat, Subs: []*Node{atom}, Min: lo, Max: hi}, nil
}

// counts parses {m}, {m,} or {m,n} at p.pos. A '{' not followed by a digit
// is a literal (ok false), as in Go's regexp.
func (p *parser) counts() (lo, hi int, ok bool, err error) {
	start := p.pos
	i := p.pos + 1
	if i >= len(p.s) || p.s[i] < '0' || p.s[i] > '9' {
		return 0, 0, false, nil
	}
	num := func() (int, error) {
		j := i
		for i < len(p.s) && p.s[i] >= '0' && p.s[i] <= '9' {
			i++
		}
		n, err := strconv.Atoi(p.s[j:i])
		if err != nil || n > MaxRepeat {
			p.pos = j
			return 0, p.errf("repeat count %s is over %d", p.s[j:i], MaxRepeat)
		}
		return n, nil
	}
	if lo, err = num(); err != nil {
		return
	}
	hi = lo
	if i < len(p.s) && p.s[i] == ',' {
		i++
		hi = -1
		if i < len(p.s) && p.s[i] >= '0' && p.s[i] <= '9' {
			if hi, err = num(); err != nil {
				return
			}
		}
	}
	if i >= len(p.s) || p.s[i] != '}' {
		p.pos = i
		return 0, 0, false, p.errf("expected '}' to close the repeat count at byte %d", start)
	}
	if hi >= 0 && hi < lo {
		p.pos = start
		return 0, 0, false, p.errf("repeat {%d,%d} has its maximum below its minimum", lo, hi)
	}
	p.pos = i + 1
	return lo, hi, true, nil
}

// atom := group | class | '.' | escape | literal
func (p *parser) atom() (*Node, error) {
	c := p.s[p.pos]
	switch c {
	case '(':
		open := p.pos
		p.pos++
		if p.peekIs('?') {
			if p.pos+1 < len(p.s) && p.s[p.pos+1] == ':' {
				p.pos += 2
			} else {
				return nil, p.errf("expected ':' after '(?': flags, lookaround and named groups are not supported")
			}
		}
		n, err := p.alt()
		if err != nil {
			return nil, err
		}
		if !p.peekIs(')') {
			return nil, p.errf("expected ')' to close the group opened at byte %d", open)
		}
		p.pos++
		return n, nil
	case '[':
		return p.class()
	case '.':
		p.pos++
		return classNode(utf8range.Negate([]utf8range.Range{{Lo: '\n', Hi: '\n'}})), nil
	case '\\':
		rs, err := p.escape(false)
		if err != nil {
			return nil, err
		}
		return classNode(rs), nil
	case '*', '+', '?':
		return nil, p.errf("nothing to repeat before '%c'", c)
	case '^':
		return nil, p.errf("'^' is only supported at the very start of the pattern")
	}
	r, n := utf8.DecodeRuneInString(p.s[p.pos:])
	p.pos += n
	return classNode([]utf8range.Range{{Lo: r, Hi: r}}), nil
}

func classNode(rs []utf8range.Range) *Node {
	return &Node{Op: OpClass, Class: utf8range.Normalize(rs)}
}

// class parses [...] or [^...] at p.pos.
func (p *parser) class() (*Node, error) {
	open := p.pos
	p.pos++
	neg := false
	if p.peekIs('^') {
		neg = true
		p.pos++
	}
	var rs []utf8range.Range
	first := true
	for {
		if p.pos >= len(p.s) {
			p.pos = open
			return nil, p.errf("expected ']' to close the class opened here")
		}
		if p.s[p.pos] == ']' && !first {
			p.pos++
			break
		}
		first = false
		if strings.HasPrefix(p.s[p.pos:], "[:") {
			return nil, p.errf("POSIX classes like [:alpha:] are not supported: write the ranges, e.g. [a-zA-Z]")
		}
		lo, set, err := p.classAtom()
		if err != nil {
			return nil, err
		}
		if set != nil {
			rs = append(rs, set...)
			continue
		}
		hi := lo
		if p.peekIs('-') && p.pos+1 < len(p.s) && p.s[p.pos+1] != ']' {
			dash := p.pos
			p.pos++
			var set2 []utf8range.Range
			if hi, set2, err = p.classAtom(); err != nil {
				return nil, err
			}
			if set2 != nil {
				p.pos = dash
				return nil, p.errf("a range cannot end in a class escape like \\d")
			}
			if hi < lo {
				p.pos = dash
				return nil, p.errf("range %q-%q is reversed", lo, hi)
			}
		}
		rs = append(rs, utf8range.Range{Lo: lo, Hi: hi})
	}
	if neg {
		rs = utf8range.Negate(rs)
	}
	rs = utf8range.Normalize(rs)
	if len(rs) == 0 {
		p.pos = open
		return nil, p.errf("class matches no character")
	}
	return &Node{Op: OpClass, Class: rs}, nil
}

// classAtom is one character of a class, or a class escape (set != nil).
func (p *parser) classAtom() (r rune, set []utf8range.Range, err error) {
	if p.s[p.pos] == '\\' {
		rs, err := p.escape(true)
		if err != nil {
			return 0, nil, err
		}
		if len(rs) == 1 && rs[0].Lo == rs[0].Hi {
			return rs[0].Lo, nil, nil
		}
		return 0, rs, nil
	}
	r, n := utf8.DecodeRuneInString(p.s[p.pos:])
	p.pos += n
	return r, nil, nil
}

var (
	digits = []utf8range.Range{{Lo: '0', Hi: '9'}}
	word   = []utf8range.Range{{Lo: '0', Hi: '9'}, {Lo: 'A', Hi: 'Z'}, {Lo: '_', Hi: '_'}, {Lo: 'a', Hi: 'z'}}
	space  = []utf8range.Range{{Lo: '\t', Hi: '\n'}, {Lo: '\f', Hi: '\r'}, {Lo: ' ', Hi: ' '}} // \t \n \f \r and space, as Go's \s
)

// escape parses a backslash escape and returns the code points it stands for.
func (p *parser) escape(inClass bool) ([]utf8range.Range, error) {
	at := p.pos
	p.pos++
	if p.pos >= len(p.s) {
		p.pos = at
		return nil, p.errf("expected a character after '\\'")
	}
	c := p.s[p.pos]
	p.pos++
	one := func(r rune) []utf8range.Range { return []utf8range.Range{{Lo: r, Hi: r}} }
	switch c {
	case 'd':
		return digits, nil
	case 'D':
		return utf8range.Negate(digits), nil
	case 'w':
		return word, nil
	case 'W':
		return utf8range.Negate(word), nil
	case 's':
		return space, nil
	case 'S':
		return utf8range.Negate(space), nil
	case 'n':
		return one('\n'), nil
	case 't':
		return one('\t'), nil
	case 'r':
		return one('\r'), nil
	case 'f':
		return one('\f'), nil
	case 'v':
		return one('\v'), nil
	case '0':
		return one(0), nil
	case 'x':
		return p.hexEscape(at, 2)
	case 'u':
		return p.hexEscape(at, 4)
	}
	if c < utf8.RuneSelf && !isAlnum(c) {
		return one(rune(c)), nil // \. \* \\ \/ \- ...: the character itself
	}
	p.pos = at
	if c >= '1' && c <= '9' {
		return nil, p.errf("backreferences (\\%c) are not supported", c)
	}
	if c == 'b' || c == 'B' {
		return nil, p.errf("word boundaries (\\%c) are not supported", c)
	}
	return nil, p.errf("unknown escape %q: expected one of \\d \\w \\s \\D \\W \\S \\n \\t \\r \\f \\v \\0 \\xHH \\uHHHH \\u{H...} or an escaped punctuation character", p.s[at:at+1+utf8.RuneLen(firstRune(p.s[at+1:]))])
}

// hexEscape parses the digits of \xHH, \uHHHH or \x{H...} / \u{H...}.
func (p *parser) hexEscape(at, n int) ([]utf8range.Range, error) {
	digitsEnd := p.pos + n
	if p.peekIs('{') {
		close := p.pos + 1
		for close < len(p.s) && p.s[close] != '}' {
			close++
		}
		if close >= len(p.s) {
			p.pos = at
			return nil, p.errf("expected '}' after the hex digits of \\%c{", p.s[at+1])
		}
		v, err := strconv.ParseUint(p.s[p.pos+1:close], 16, 32)
		if err != nil || v > utf8range.MaxRune || close == p.pos+1 {
			p.pos = at
			return nil, p.errf("expected a hex code point up to 10FFFF in \\%c{...}", p.s[at+1])
		}
		p.pos = close + 1
		return []utf8range.Range{{Lo: rune(v), Hi: rune(v)}}, nil
	}
	if digitsEnd > len(p.s) {
		p.pos = at
		return nil, p.errf("expected %d hex digits after \\%c", n, p.s[at+1])
	}
	v, err := strconv.ParseUint(p.s[p.pos:digitsEnd], 16, 32)
	if err != nil {
		p.pos = at
		return nil, p.errf("expected %d hex digits after \\%c", n, p.s[at+1])
	}
	p.pos = digitsEnd
	return []utf8range.Range{{Lo: rune(v), Hi: rune(v)}}, nil
}

func isAlnum(c byte) bool {
	return c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func firstRune(s string) rune {
	r, _ := utf8.DecodeRuneInString(s)
	return r
}

package jsonschema

import (
	"errors"
	"fmt"
	"strings"

	"chat/engine/constrain/gbnf"
	"chat/engine/constrain/regex"
	"chat/engine/constrain/utf8range"
)

// pattern translates a JSON Schema pattern into the GBNF of the inside of
// a JSON string whose value matches it. The pattern applies to the decoded
// value, so a character that JSON must escape is generated as its escape
// (" as \", \ as \\, a control character as \n or \u00XX). As JSON Schema
// says, a pattern is not anchored: without a leading ^ any characters may
// come before the match, without a trailing $ any may follow. What it
// writes is spent from *budget (toGBNF).
func pattern(p string, budget *int) (string, error) {
	syn, err := regex.Parse(p)
	if err != nil {
		return "", err
	}
	body, err := toGBNF(syn.Root, budget)
	if err != nil {
		return "", err
	}
	if !syn.AnchorStart {
		body = "char* " + body
	}
	if !syn.AnchorEnd {
		body += " char*"
	}
	return body, nil
}

// escapeOf is the escape quoteJSON writes for r, without the quotes.
func escapeOf(r rune) string {
	q := quoteJSON(string(r))
	return q[1 : len(q)-1]
}

// toGBNF writes n, spending *budget on every byte it writes, and fails once
// it is spent: a character class takes up to hundreds of bytes (. and
// [^a]: the escapes of the control characters), so a schema of patterns of
// them made gigabytes before gbnf refused the grammar.
func toGBNF(n *regex.Node, budget *int) (string, error) {
	out, err := "", error(nil)
	switch n.Op {
	case regex.OpEmpty:
		out = `""`
	case regex.OpClass:
		out = classGBNF(n.Class)
	case regex.OpConcat:
		return joinGBNF(n.Subs, " ", budget)
	case regex.OpAlt:
		return joinGBNF(n.Subs, " | ", budget)
	case regex.OpRepeat:
		var sub string
		if sub, err = toGBNF(n.Subs[0], budget); err != nil {
			return "", err
		}
		if n.Max != 1 && nullable(n.Subs[0]) {
			return "", errors.New("pattern: a repeat of a part that can match nothing (like (a*)*) is not supported")
		}
		if n.Max < 0 {
			out = fmt.Sprintf("(%s){%d,}", sub, n.Min)
		} else {
			out = fmt.Sprintf("(%s){%d,%d}", sub, n.Min, n.Max)
		}
		*budget += len(sub) // spent already
	default:
		return "", fmt.Errorf("pattern: unknown node %d", n.Op)
	}
	return out, spend(budget, len(out))
}

var errSize = fmt.Errorf("the grammar would be over the %d bytes a grammar may have", gbnf.MaxSource)

// spend takes n bytes from *budget, and fails once it is spent.
func spend(budget *int, n int) error {
	if *budget -= n; *budget < 0 {
		return errSize
	}
	return nil
}

// joinGBNF is the group of subs' expressions joined by sep.
func joinGBNF(subs []*regex.Node, sep string, budget *int) (string, error) {
	parts := make([]string, len(subs))
	for i, s := range subs {
		var err error
		if parts[i], err = toGBNF(s, budget); err != nil {
			return "", err
		}
	}
	return "(" + strings.Join(parts, sep) + ")", spend(budget, 2+len(sep)*(len(subs)-1))
}

func nullable(n *regex.Node) bool {
	switch n.Op {
	case regex.OpEmpty:
		return true
	case regex.OpClass:
		return false
	case regex.OpConcat:
		for _, s := range n.Subs {
			if !nullable(s) {
				return false
			}
		}
		return true
	case regex.OpAlt:
		for _, s := range n.Subs {
			if nullable(s) {
				return true
			}
		}
		return false
	}
	return n.Min == 0 || nullable(n.Subs[0])
}

// classGBNF writes a class of code points: the characters JSON takes as
// they are in one [...] class, each that must be escaped as its escape.
func classGBNF(rs []utf8range.Range) string {
	var plain []utf8range.Range
	var alts []string
	for _, r := range rs {
		lo := r.Lo
		for c := r.Lo; c <= r.Hi && c < 0x80; c++ {
			if c < 0x20 || c == '"' || c == '\\' {
				if lo < c {
					plain = append(plain, utf8range.Range{Lo: lo, Hi: c - 1})
				}
				alts = append(alts, literal(escapeOf(c)))
				lo = c + 1
			}
		}
		if lo <= r.Hi {
			plain = append(plain, utf8range.Range{Lo: lo, Hi: r.Hi})
		}
	}
	if len(plain) > 0 {
		var b strings.Builder
		b.WriteByte('[')
		for _, r := range plain {
			b.WriteString(classChar(r.Lo))
			if r.Hi > r.Lo {
				b.WriteString("-" + classChar(r.Hi))
			}
		}
		b.WriteByte(']')
		alts = append([]string{b.String()}, alts...)
	}
	if len(alts) == 1 {
		return alts[0]
	}
	return "(" + strings.Join(alts, " | ") + ")"
}

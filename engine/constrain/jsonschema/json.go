package jsonschema

import (
	"fmt"
	"strings"
)

// prelude is the GBNF of JSON itself, shared by --format json and every
// schema. The whitespace policy: no whitespace before or after the
// top-level value; after each '{', '[', ',' and ':' and after each value
// or key inside a container, either nothing, one space, or one newline
// followed by up to 20 spaces or tabs (llama.cpp's json.gbnf rule, which
// lets a model write compact or indented JSON but not loop on blanks).
// Numbers are bounded too: at most 16 integer digits, 16 fraction digits
// and 2 exponent digits (so every number fits a float64). Strings are
// UTF-8 without control characters; escapes are \" \\ \/ \b \f \n \r \t
// and \uXXXX of a non-surrogate.
const prelude = `ws ::= | " " | "\n" [ \t]{0,20}
char ::= [^"\\\x00-\x1F] | "\\" (["\\/bfnrt] | "u" hex4)
hex4 ::= [0-9a-cA-CefEF] [0-9a-fA-F]{3} | [dD] [0-7] [0-9a-fA-F]{2}
string ::= "\"" char* "\""
integer ::= "-"? ("0" | [1-9] [0-9]{0,15})
number ::= integer ("." [0-9]{1,16})? ([eE] [-+]? [0-9]{1,2})?
boolean ::= "true" | "false"
null ::= "null"
value ::= object | array | string | number | boolean | null
object ::= "{" ws ( string ws ":" ws value ws ( "," ws string ws ":" ws value ws )* )? "}"
array ::= "[" ws ( value ws ( "," ws value ws )* )? "]"
`

// JSON is the GBNF grammar of any JSON value (--format json, ollama's
// format "json").
func JSON() string { return prelude + "root ::= value\n" }

// quoteJSON is the canonical JSON text of s that generated literals use:
// " \ and control characters escaped, everything else as UTF-8.
func quoteJSON(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}

// literal is a GBNF string literal matching exactly the bytes of s.
func literal(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r < 0x20 || r == 0x7F:
			fmt.Fprintf(&b, `\x%02X`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// classChar writes one code point inside a GBNF [...] class.
func classChar(r rune) string {
	switch {
	case r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
		return string(r)
	case r < 0x100:
		return fmt.Sprintf(`\x%02X`, r)
	case r < 0x10000:
		return fmt.Sprintf(`\u%04X`, r)
	}
	return fmt.Sprintf(`\U%08X`, r)
}

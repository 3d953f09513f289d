// Package termtext makes text that comes from files or models safe to write
// to a terminal: no escape sequences, no C0 or C1 control characters (which
// can move the cursor, retitle the window or rewrite the screen), no bidi
// overrides (which make the screen lie about what it shows), and valid
// UTF-8. It is the one sanitiser of the app: the TUI, the headless output,
// --sessions and the error messages main prints all go through it.
package termtext

import (
	"io"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// Clean strips what Safe rejects: escape sequences go whole, other control
// characters and bidi overrides are dropped, invalid bytes become U+FFFD,
// and CR or CRLF become "\n". Newlines stay; tabs stay when keepTab, else
// each becomes four spaces.
func Clean(s string, keepTab bool) string {
	if Safe(s, keepTab) {
		return s
	}
	if !utf8.ValidString(s) {
		s = strings.ToValidUTF8(s, "\uFFFD")
	}
	if strings.ContainsRune(s, '\u009b') {
		s = strings.ReplaceAll(s, "\u009b", "\x1b[") // 8-bit CSI: strip it like ESC [
	}
	if strings.ContainsRune(s, '\x1b') {
		s = ansi.Strip(s)
	}
	s = strings.ReplaceAll(s, "\r\n", "\n")
	var b strings.Builder
	b.Grow(len(s))
	for _, r := range s {
		switch {
		case r == '\n':
			b.WriteByte('\n')
		case r == '\r':
			b.WriteByte('\n') // a lone CR (old Mac paste) is a line break
		case r == '\t':
			if keepTab {
				b.WriteByte('\t')
			} else {
				b.WriteString("    ")
			}
		case unicode.IsControl(r), isBidi(r):
			// drop: NUL, BEL, backspace, DEL, C1 controls, directional overrides
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// Stream is Clean for text that arrives in pieces, a reply's tokens: an
// escape sequence split over pieces ("\x1b", then "[31m") went as its first
// byte only and left "[31m" on the screen. The unfinished sequence at the
// end of a piece is held for the next (at most maxHeld bytes, so that one
// never finished cannot hold back the rest of the text).
type Stream struct {
	KeepTab bool
	held    string
}

const maxHeld = 256

// Clean returns what of the text so far can be written now, cleaned.
func (c *Stream) Clean(s string) string {
	s, c.held = c.held+s, ""
	if strings.ContainsAny(s, "\x1b\u009b") {
		s = strings.ReplaceAll(s, "\u009b", "\x1b[") // as Clean reads 8-bit CSI
		var state byte
		start := 0
		for i := 0; i < len(s); {
			at := i
			_, _, n, next := ansi.DecodeSequence(s[i:], state, nil)
			if state == 0 {
				start = at // where the sequence the state belongs to began
			}
			state, i = next, i+max(n, 1)
		}
		if state != 0 && len(s)-start <= maxHeld {
			s, c.held = s[:start], s[start:]
		}
	}
	return Clean(s, c.KeepTab)
}

// Line is Clean for text shown on one row (names, titles, notices): line
// breaks and tabs become spaces.
func Line(s string) string {
	return strings.ReplaceAll(Clean(s, false), "\n", " ")
}

// Escape writes the characters Clean would drop as Go escapes (\x1b,
// \u009b, \u202e, and \xff for an invalid byte) and keeps the rest, "\n"
// and "\t" included: for error messages, which should show what a file
// holds without letting it act on the terminal.
func Escape(s string) string {
	if Safe(s, true) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			b.WriteString(`\x` + strconv.FormatUint(uint64(s[i])|0x100, 16)[1:])
		case r == '\n' || r == '\t' || !unicode.IsControl(r) && !isBidi(r):
			b.WriteString(s[i : i+n])
		default:
			q := strconv.QuoteRuneToASCII(r) // '\x1b', '\u009b'
			b.WriteString(q[1 : len(q)-1])
		}
		i += n
	}
	return b.String()
}

// Token is one token's bytes as a label (the next-token view): Escape,
// with newline, tab and carriage return escaped too (\n, \t, \r), so a
// token shows what it holds on one row — an invalid or partial UTF-8 byte
// as \xNN.
func Token(s string) string {
	e := Escape(s)
	if !strings.ContainsAny(e, "\n\t\r") {
		return e
	}
	return strings.NewReplacer("\n", `\n`, "\t", `\t`, "\r", `\r`).Replace(e)
}

// Safe reports whether s is valid UTF-8 without control characters other
// than "\n" (and "\t" when tabs are allowed) and without bidi overrides:
// text that can go to the terminal as it is.
func Safe(s string, tabs bool) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 && c != '\n' && (c != '\t' || !tabs) || c == 0x7f || c >= 0x80 {
			goto slow
		}
	}
	return true
slow:
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r == '\n' || r == '\t' && tabs {
			continue
		}
		if unicode.IsControl(r) || isBidi(r) {
			return false
		}
	}
	return true
}

func isBidi(r rune) bool {
	return (r >= '\u202A' && r <= '\u202E') || (r >= '\u2066' && r <= '\u2069')
}

// EscapeWriter passes each write through Escape: for a stream of messages
// such as stderr.
func EscapeWriter(w io.Writer) io.Writer { return escapeWriter{w} }

type escapeWriter struct{ w io.Writer }

func (e escapeWriter) Write(p []byte) (int, error) {
	if _, err := io.WriteString(e.w, Escape(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// JSON rewrites the characters Escape would escape as \uXXXX inside a JSON
// document (or TOML, whose basic strings read the same escapes).
// encoding/json already escapes C0 controls and replaces invalid bytes, but
// leaves DEL, C1 controls and bidi overrides raw; outside strings a JSON
// document holds only ASCII, so the rewrite stays valid.
func JSON(doc string) string {
	if Safe(doc, true) {
		return doc
	}
	var b strings.Builder
	for _, r := range strings.ToValidUTF8(doc, "\uFFFD") {
		if r != '\n' && r != '\t' && (unicode.IsControl(r) || isBidi(r)) {
			b.WriteString(`\u` + strconv.FormatUint(uint64(r)|0x10000, 16)[1:])
			continue
		}
		b.WriteRune(r)
	}
	return b.String()
}

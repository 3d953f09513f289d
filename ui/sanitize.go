package ui

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/charmbracelet/x/ansi"
)

// cleanText makes text safe to send to the model or to draw: valid UTF-8,
// "\n" line ends, no escape sequences, no control characters other than
// newline (and tab when keepTab), and no bidi overrides that could make the
// screen lie about what was typed.
func cleanText(s string, keepTab bool) string {
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
	clean := true
	for _, r := range s {
		if r != '\n' && (unicode.IsControl(r) || isBidi(r) || r == '\t') {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
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
			// drop: NUL, BEL, backspace, C1 controls, directional overrides
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func isBidi(r rune) bool {
	return (r >= '\u202A' && r <= '\u202E') || (r >= '\u2066' && r <= '\u2069')
}

// sanitizeInput is what the user's text goes through before Send: cleaned
// and without leading/trailing blank lines or trailing spaces. An all-blank
// input becomes "" and is not sent.
func sanitizeInput(s string) string {
	s = cleanText(s, true)
	s = strings.TrimRight(s, " \t\n")
	// Leading blank lines are noise; leading spaces on the first line may be
	// deliberate (code), so only whole blank lines are cut.
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 || strings.TrimSpace(s[:i]) != "" {
			break
		}
		s = s[i+1:]
	}
	if strings.TrimSpace(s) == "" {
		return ""
	}
	return s
}

// sanitizeDisplay prepares model or user text for the transcript: tabs
// become spaces (their width depends on the terminal) and nothing can move
// the cursor or change colours.
func sanitizeDisplay(s string) string {
	return cleanText(s, false)
}

// oneLine is cleanText for things shown on a single row (names, notices,
// errors): line breaks become spaces.
func oneLine(s string) string {
	return strings.ReplaceAll(cleanText(s, false), "\n", " ")
}

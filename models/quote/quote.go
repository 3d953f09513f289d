// Package quote shows strings read from files (keys, tensor names, grammar
// rules, schema keys, tokenizer patterns) in one-line messages: such strings
// may be megabytes long and hold control characters.
package quote

import (
	"strconv"
	"unicode/utf8"
)

// Max is how many bytes of a string a message shows.
const Max = 80

// Quote is s Go-quoted, so its control characters show as escapes, and cut
// to Max bytes.
func Quote(s string) string { return strconv.Quote(Cut(s, Max)) }

// Cut shortens s to at most n bytes, at a rune boundary, and marks the cut
// with "…".
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "…"
}

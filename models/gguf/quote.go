package gguf

import (
	"strconv"
	"unicode/utf8"
)

// maxQuoted is how much of a string from a file an error message shows.
const maxQuoted = 80

// Quote quotes a string read from a file (a key, a tensor name, a metadata
// value) for an error message: Go escapes keep its control characters
// visible, and a long one is cut at a rune boundary, since such strings may
// be megabytes and the message is one line.
func Quote(s string) string {
	if len(s) <= maxQuoted {
		return strconv.Quote(s)
	}
	i := maxQuoted
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return strconv.Quote(s[:i] + "…")
}

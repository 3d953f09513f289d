package settings

import (
	"strconv"
	"unicode/utf8"
)

// Quoted quotes a string from a file or a flag for a message, cut to a
// readable length (Go escapes keep its control characters visible).
func Quoted(s string) string { return strconv.Quote(Cut(s)) }

// Cut shortens s to about 80 bytes, keeping whole runes.
func Cut(s string) string {
	const n = 80
	if len(s) <= n {
		return s
	}
	i := n
	for i > 0 && !utf8.RuneStart(s[i]) {
		i--
	}
	return s[:i] + "…"
}

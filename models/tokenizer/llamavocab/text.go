package llamavocab

import (
	"strings"
	"unicode/utf8"
)

// Text is detokenized bytes as a string, each byte that is not part of valid
// UTF-8 turned into U+FFFD.
func Text(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		sb.WriteRune(r)
		b = b[n:]
	}
	return sb.String()
}

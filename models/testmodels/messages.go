package testmodels

import (
	"strings"
	"testing"
	"unicode"
)

// HostileName is a string of about n bytes full of terminal controls (clear
// screen, a title change, bell, carriage return, backspace, C1 CSI), with
// no newline so that it fits in a line-based format too: what a hostile
// file may put in a name, a key or a type.
func HostileName(n int) string {
	const ctl = "\x1b[2J\x1b]0;pwned\x07\r\b\u009b"
	return "evil" + strings.Repeat(ctl+"x", n/(len(ctl)+1))
}

// OneShortLine fails t unless err is one line under limit bytes with no
// control characters: what a hostile file's strings may become in a
// message (models/quote cuts and escapes them).
func OneShortLine(t testing.TB, err error, limit int) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if len(msg) >= limit {
		t.Errorf("error of %d bytes: %.200q...", len(msg), msg)
	}
	if i := strings.IndexFunc(msg, unicode.IsControl); i >= 0 {
		t.Errorf("error holds control character %q: %.200q", msg[i:i+1], msg)
	}
}

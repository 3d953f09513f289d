package torchpt

import (
	"strings"
	"testing"
	"unicode"
)

// hostileName is a name of about n bytes full of terminal controls, with no
// newline, so it also fits in a pickle's text line.
func hostileName(n int) string {
	const ctl = "\x1b[2J\x1b]0;pwned\x07\r\b\u009b"
	return "evil" + strings.Repeat(ctl+"x", n/(len(ctl)+1))
}

// oneShortLine fails unless err is one short line with no control
// characters: what a hostile file's strings may become in a message.
func oneShortLine(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	if len(msg) >= 300 {
		t.Errorf("error of %d bytes: %.200q...", len(msg), msg)
	}
	for _, r := range msg {
		if unicode.IsControl(r) {
			t.Errorf("error holds control character %q: %.200q", r, msg)
			break
		}
	}
}

// TestHostileTextInMessages: strings read from a pickle (text lines, an
// encoding name, a numpy dtype code) are quoted and cut in errors.
func TestHostileTextInMessages(t *testing.T) {
	long := hostileName(1 << 20)
	line := func(op byte, s string) []byte { return append(newPW().op(op).Bytes(), s+"\n."...) }
	cases := []struct {
		name, want string
		pkl        []byte
	}{
		{"memo index", "bad memo index", line('p', long)},
		{"FLOAT", "bad FLOAT", line('F', long)},
		{"text persistent id", "unsupported text persistent id", line('P', long)},
		{"INT", "bad integer", line('I', "1"+hostileName(4000))},
		{"LONG", "bad integer", line('L', "1"+hostileName(4000))},
		{"encoding", "unsupported encoding", newPW().global("_codecs", "encode").str("x").str(long).op(0x86, 'R', '.').Bytes()},
		{"numpy dtype", "numpy scalar of dtype", newPW().global("numpy.core.multiarray", "scalar").
			global("numpy", "dtype").str(long).op(0x85, 'R').str("abcd").op(0x86, 'R', '.').Bytes()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := readBytes(t, wrapPickle(t, tc.pkl), "evil.pt")
			wantErr(t, err, tc.want)
			oneShortLine(t, err)
		})
	}
}

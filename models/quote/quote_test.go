package quote

import "testing"

func TestQuote(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"abc", `"abc"`},
		{"a\x1b[2Jb", `"a\x1b[2Jb"`},
		{string(make([]byte, 100)), `"` + repeat(`\x00`, Max) + `…"`},
		{repeat("é", 50), `"` + repeat("é", 40) + `…"`},        // 2-byte runes: 40 fit in 80 bytes
		{"x" + repeat("é", 50), `"x` + repeat("é", 39) + `…"`}, // the cut steps back to a rune start
	} {
		if got := Quote(c.in); got != c.want {
			t.Errorf("Quote(%.20q) = %s, want %s", c.in, got, c.want)
		}
	}
}

func repeat(s string, n int) string {
	var b []byte
	for range n {
		b = append(b, s...)
	}
	return string(b)
}

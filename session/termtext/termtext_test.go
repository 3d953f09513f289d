package termtext

import (
	"strings"
	"testing"
)

// raw holds every kind of byte that must not reach a terminal as it is.
const raw = "a\x1b[31mred\x1b[0m \x1b]0;title\x07 \x9b2J \u009b2J \x07\x08\x00\x7f \u0085 \u202egnp.exe\u202c \xff\xfe c\rd\r\ne\tf"

func TestCleanAndLine(t *testing.T) {
	if got, want := Clean(raw, true), "ared  \uFFFD2J    gnp.exe \uFFFD c\nd\ne\tf"; got != want {
		t.Errorf("Clean(keepTab) = %q, want %q", got, want)
	}
	if got := Clean("x\ty", false); got != "x    y" {
		t.Errorf("Clean = %q", got)
	}
	if got := Line("one\ntwo\r\nthree"); got != "one two three" {
		t.Errorf("Line = %q", got)
	}
	for _, s := range []string{"plain", "日本語 ▁ é", "two\nlines\tand tab", ""} {
		if got := Clean(s, true); got != s {
			t.Errorf("Clean changed safe text %q to %q", s, got)
		}
	}
}

func TestEscape(t *testing.T) {
	got := Escape(raw)
	want := `a\x1b[31mred\x1b[0m \x1b]0;title\a \x9b2J \u009b2J \a\b\x00\x7f \u0085 \u202egnp.exe\u202c \xff\xfe c\rd\r` + "\ne\tf"
	if got != want {
		t.Errorf("Escape =\n%q\nwant\n%q", got, want)
	}
	if s := "日本語 ok\n"; Escape(s) != s {
		t.Errorf("Escape changed %q", s)
	}
}

func TestToken(t *testing.T) {
	for in, want := range map[string]string{" cat": " cat", "\n": `\n`, "\t\r": `\t\r`, "\xe6\x97": `\xe6\x97`, "\x1b[2J": `\x1b[2J`, "日": "日"} {
		if got := Token(in); got != want {
			t.Errorf("Token(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestJSON(t *testing.T) {
	doc := "{\"name\":\"a\u0085b\u009b2J\u202e\x7f\"}\n"
	if got, want := JSON(doc), `{"name":"a\u0085b\u009b2J\u202e\u007f"}`+"\n"; got != want {
		t.Errorf("JSON = %q, want %q", got, want)
	}
	var b strings.Builder
	EscapeWriter(&b).Write([]byte("chat: bad \x1b[2J\n"))
	if b.String() != `chat: bad \x1b[2J`+"\n" {
		t.Errorf("EscapeWriter wrote %q", b.String())
	}
}

// No output of the sanitisers holds a raw ESC, C1 control or invalid byte.
func FuzzSanitise(f *testing.F) {
	f.Add(raw)
	f.Fuzz(func(t *testing.T, s string) {
		for name, out := range map[string]string{"Clean": Clean(s, true), "Line": Line(s), "Escape": Escape(s), "JSON": JSON(s), "Token": Token(s)} {
			if !Safe(out, true) {
				t.Fatalf("%s(%q) = %q is not safe", name, s, out)
			}
			if strings.ContainsAny(out, "\x1b\r") {
				t.Fatalf("%s(%q) = %q", name, s, out)
			}
		}
		if strings.ContainsAny(Token(s), "\n\t") {
			t.Fatalf("Token(%q) = %q is not one row", s, Token(s))
		}
		if strings.Contains(Line(s), "\n") {
			t.Fatalf("Line(%q) has a newline", s)
		}
	})
}

// Bug: a reply's escape sequence split over tokens ("\x1b", "[31m") lost
// only its ESC headless, and "[31m" showed. Stream holds the unfinished
// sequence for the next piece.
func TestStream(t *testing.T) {
	for _, c := range []struct {
		pieces []string
		want   string
	}{
		{[]string{"Once ", "upon\n", "a\ttime"}, "Once upon\na\ttime"},
		{[]string{"a\x1b", "[31", "mRED\x07", "b"}, "aREDb"},
		{[]string{"x\x1b]0;ti", "tle\x07y"}, "xy"},
		{[]string{"p\u009b", "2Jq"}, "pq"},
		{[]string{"\x1b", "c!"}, "!"},
		// One never finished is let go after maxHeld bytes (what shows is
		// Clean's, without the escape).
		{[]string{"\x1b]0;", strings.Repeat("z", maxHeld), "end"}, ""},
	} {
		s := Stream{KeepTab: true}
		var got strings.Builder
		for _, p := range c.pieces {
			out := s.Clean(p)
			if !Safe(out, true) {
				t.Errorf("%q: unsafe piece %q", c.pieces, out)
			}
			got.WriteString(out)
		}
		if c.want != "" && got.String() != c.want {
			t.Errorf("%q: %q, want %q", c.pieces, got.String(), c.want)
		}
		if c.want == "" && !strings.HasSuffix(got.String(), "end") {
			t.Errorf("%q: the text after an unfinished sequence is held back: %q", c.pieces, got.String())
		}
	}
}

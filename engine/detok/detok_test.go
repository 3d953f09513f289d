package detok

import (
	"bytes"
	"encoding/hex"
	"encoding/json"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"unicode/utf8"
)

// refDecode is an independent whole-text decoder: Go's utf8 for valid
// characters, and for invalid input one U+FFFD per maximal subpart (the
// longest prefix that some continuation could still make valid).
func refDecode(b []byte) string {
	var out strings.Builder
	for len(b) > 0 {
		if r, size := utf8.DecodeRune(b); r != utf8.RuneError || size > 1 {
			out.Write(b[:size])
			b = b[size:]
			continue
		}
		k := 1
		for l := min(3, len(b)); l > 1; l-- {
			if canComplete(b[:l]) {
				k = l
				break
			}
		}
		out.WriteString("\uFFFD")
		b = b[k:]
	}
	return out.String()
}

// canComplete reports whether p followed by some continuation bytes is one
// valid character.
func canComplete(p []byte) bool {
	tails := []byte{0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF}
	var try func(x []byte) bool
	try = func(x []byte) bool {
		if r, size := utf8.DecodeRune(x); (r != utf8.RuneError || size > 1) && size == len(x) {
			return true
		}
		if len(x) == 4 {
			return false
		}
		for _, t := range tails {
			if try(append(x[:len(x):len(x)], t)) {
				return true
			}
		}
		return false
	}
	return try(p)
}

// stream feeds b cut into pieces of the given sizes (cycled) and returns the
// emitted pieces, the last one being Flush's.
func stream(b []byte, sizes []int) []string {
	var d Decoder
	var out []string
	for i := 0; len(b) > 0; i++ {
		n := min(len(b), max(1, sizes[i%len(sizes)]))
		out = append(out, string(d.Append(nil, b[:n])))
		b = b[n:]
	}
	return append(out, string(d.Flush(nil)))
}

func TestMatchesPython(t *testing.T) {
	raw, err := os.ReadFile("testdata/python_replace.json")
	if err != nil {
		t.Fatal(err)
	}
	var f struct{ Cases []struct{ In, Out string } }
	if err := json.Unmarshal(raw, &f); err != nil {
		t.Fatal(err)
	}
	for _, c := range f.Cases {
		in, _ := hex.DecodeString(c.In)
		want, _ := hex.DecodeString(c.Out)
		if got := Decode(in); got != string(want) {
			t.Fatalf("Decode(% x) = %q, Python %q", in, got, want)
		}
		if got := refDecode(in); got != string(want) {
			t.Fatalf("refDecode(% x) = %q, Python %q", in, got, want)
		}
		for cut := 0; cut <= len(in); cut++ {
			if got := strings.Join(stream(in, []int{cut, len(in)}), ""); got != string(want) {
				t.Fatalf("% x cut at %d: %q, Python %q", in, cut, got, want)
			}
		}
		if got := strings.Join(stream(in, []int{1}), ""); got != string(want) {
			t.Fatalf("% x byte by byte: %q, Python %q", in, got, want)
		}
	}
}

func TestKnownCases(t *testing.T) {
	for in, want := range map[string]string{
		"\xe2\x82A":                "\uFFFDA",                  // truncated 3-byte char: one U+FFFD
		"\xed\xa0\x80":             "\uFFFD\uFFFD\uFFFD",       // surrogate
		"\xc0\x80":                 "\uFFFD\uFFFD",             // overlong
		"\xf4\x90\x80\x80":         "\uFFFD\uFFFD\uFFFD\uFFFD", // > U+10FFFF
		"\xf0\x9f\x98":             "\uFFFD",                   // incomplete tail, flushed
		"\xf1\x80\x80\xe2\x82\xac": "\uFFFD€",
	} {
		if got := Decode([]byte(in)); got != want {
			t.Errorf("Decode(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestSplitCharacterEmittedOnce: a character split across tokens comes out
// whole, once, in the piece that completes it.
func TestSplitCharacterEmittedOnce(t *testing.T) {
	var d Decoder
	emoji := []byte("🙂")
	if got := d.Append(nil, emoji[:1]); len(got) != 0 || d.Pending() != 1 {
		t.Fatalf("first byte emitted %q", got)
	}
	if got := d.Append(nil, emoji[1:3]); len(got) != 0 || d.Pending() != 3 {
		t.Fatalf("middle bytes emitted %q", got)
	}
	if got := string(d.Append(nil, append(emoji[3:], 'x'))); got != "🙂x" {
		t.Fatalf("completion emitted %q", got)
	}
	if got := d.Flush(nil); len(got) != 0 {
		t.Fatalf("Flush after complete text = %q", got)
	}
	d.Append(nil, emoji[:2])
	if got := string(d.Flush(nil)); got != "\uFFFD" || d.Pending() != 0 {
		t.Fatalf("Flush of a tail = %q", got)
	}
}

func randomText(r *rand.Rand, n int) []byte {
	chars := []string{"a", " ", "\n", "é", "ß", "€", "日", "本", "🙂", "👍🏽", "\U0010FFFF", "\u0800", "\u07FF"}
	var b []byte
	for len(b) < n {
		b = append(b, chars[r.IntN(len(chars))]...)
	}
	return b
}

func randomBytes(r *rand.Rand, n int) []byte {
	b := randomText(r, n)
	for range r.IntN(4) {
		if len(b) > 0 {
			b[r.IntN(len(b))] = byte(r.UintN(256))
		}
	}
	if r.IntN(4) == 0 && len(b) > 0 {
		b = b[:r.IntN(len(b))] // maybe cut mid-character
	}
	return b
}

// TestRandomStreamsEverySplit: random (mostly valid, sometimes corrupted)
// byte streams, split at every boundary and in random token sizes, give the
// same total as decoding at once, and valid text never yields U+FFFD.
func TestRandomStreamsEverySplit(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	for trial := range 2000 {
		var b []byte
		valid := trial%2 == 0
		if valid {
			b = randomText(r, r.IntN(40))
		} else {
			b = randomBytes(r, r.IntN(40))
		}
		want := refDecode(b)
		if got := Decode(b); got != want {
			t.Fatalf("Decode(% x) = %q, reference %q", b, got, want)
		}
		for _, sizes := range [][]int{{1}, {2}, {3}, {r.IntN(5), r.IntN(5), r.IntN(5)}} {
			pieces := stream(b, sizes)
			if got := strings.Join(pieces, ""); got != want {
				t.Fatalf("% x in sizes %v: %q, want %q", b, sizes, got, want)
			}
			for _, p := range pieces {
				if !utf8.ValidString(p) {
					t.Fatalf("piece %q is not valid UTF-8", p)
				}
				if valid && strings.Contains(p, "\uFFFD") {
					t.Fatalf("valid text % x gave U+FFFD in piece %q", b, p)
				}
			}
		}
	}
}

func TestAppendDoesNotAllocate(t *testing.T) {
	var d Decoder
	dst := make([]byte, 0, 64)
	text := []byte("日本🙂")
	if a := testing.AllocsPerRun(100, func() {
		dst = d.Append(dst[:0], text[:2])
		dst = d.Append(dst, text[2:5])
		dst = d.Append(dst, text[5:])
	}); a != 0 {
		t.Fatalf("%v allocs", a)
	}
}

func FuzzDetok(f *testing.F) {
	f.Add([]byte("héllo 🙂"), []byte{1, 2, 3})
	f.Add([]byte("\xed\xa0\x80\xf4\x90\x80\x80\xe2\x82A"), []byte{2})
	f.Add([]byte("\xf0\x9f\x98"), []byte{0})
	f.Fuzz(func(t *testing.T, b, cuts []byte) {
		want := refDecode(b)
		if got := Decode(b); got != want {
			t.Fatalf("Decode(% x) = %q, reference %q", b, got, want)
		}
		sizes := []int{len(b)}
		if len(cuts) > 0 {
			sizes = sizes[:0]
			for _, c := range cuts {
				sizes = append(sizes, int(c%8))
			}
		}
		pieces := stream(b, sizes)
		if got := strings.Join(pieces, ""); got != want {
			t.Fatalf("% x in sizes %v: %q, want %q", b, sizes, got, want)
		}
		for _, p := range pieces {
			if !utf8.ValidString(p) {
				t.Fatalf("piece %q is not valid UTF-8", p)
			}
		}
		if utf8.Valid(b) && strings.Contains(strings.Join(pieces, ""), "\uFFFD") != bytes.Contains(b, []byte("\uFFFD")) {
			t.Fatalf("valid input % x gained a U+FFFD", b)
		}
	})
}

package utf8range

import (
	"math/rand/v2"
	"testing"
	"unicode/utf8"
)

func matches(seqs []Seq, b []byte) int {
	n := 0
	for _, s := range seqs {
		if len(s) != len(b) {
			continue
		}
		ok := true
		for i, r := range s {
			if rune(b[i]) < r.Lo || rune(b[i]) > r.Hi {
				ok = false
				break
			}
		}
		if ok {
			n++
		}
	}
	return n
}

func in(rs []Range, c rune) bool {
	for _, r := range rs {
		if c >= r.Lo && c <= r.Hi {
			return true
		}
	}
	return false
}

// Every code point is matched by exactly one sequence when it is in the set
// and by none otherwise; every byte string a sequence matches is valid UTF-8
// for a code point of the set.
func TestSequencesExact(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	sets := [][]Range{
		{{0, MaxRune}},
		{{'a', 'z'}, {'A', 'Z'}},
		Negate([]Range{{'"', '"'}, {'\\', '\\'}, {0, 0x1F}}),
		{{0x7F, 0x80}, {0x7FF, 0x800}, {0xFFFF, 0x10000}, {0xD000, 0xE000}},
	}
	for range 4 {
		var rs []Range
		for range 1 + rng.IntN(5) {
			lo := rune(rng.IntN(MaxRune))
			if rng.IntN(2) == 0 {
				lo = rune(rng.IntN(0x900))
			}
			rs = append(rs, Range{lo, lo + rune(rng.IntN(5000))})
		}
		sets = append(sets, rs)
	}
	var buf [4]byte
	for k, rs := range sets {
		norm := Normalize(rs)
		seqs := Sequences(rs)
		for c := rune(0); c <= MaxRune; c++ {
			if c >= surrLo && c <= surrHi {
				continue
			}
			n := utf8.EncodeRune(buf[:], c)
			want := 0
			if in(norm, c) {
				want = 1
			}
			if got := matches(seqs, buf[:n]); got != want {
				t.Fatalf("set %d: U+%04X matched by %d sequences, want %d", k, c, got, want)
			}
		}
		for _, s := range seqs {
			for range 50 {
				b := make([]byte, len(s))
				for i, r := range s {
					b[i] = byte(r.Lo + rune(rng.IntN(int(r.Hi-r.Lo+1))))
				}
				c, size := utf8.DecodeRune(b)
				if c == utf8.RuneError || size != len(b) || !in(norm, c) {
					t.Fatalf("set %d: sequence %v matches % x, which is not a code point of the set", k, s, b)
				}
			}
		}
	}
}

func TestNegateDropsSurrogates(t *testing.T) {
	got := Negate([]Range{{'a', 'a'}})
	want := []Range{{0, 'a' - 1}, {'a' + 1, surrLo - 1}, {surrHi + 1, MaxRune}}
	if len(got) != len(want) {
		t.Fatalf("Negate = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("Negate = %v, want %v", got, want)
		}
	}
}

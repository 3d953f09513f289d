// Package utf8range turns sets of Unicode code points into the UTF-8 byte
// sequences that encode them, so that byte-level automata (the regex DFA,
// the grammar machine) can match character classes one byte at a time.
//
// A code point range [lo, hi] is split until each piece encodes as one
// sequence of byte ranges, e.g. U+0080..U+07FF is [C2-DF][80-BF]. Surrogates
// (U+D800..U+DFFF) have no valid UTF-8 encoding and are always left out, so
// every sequence produced is valid UTF-8 (the same rule Go's utf8 package and
// Python's decoder apply).
package utf8range

import (
	"slices"
	"unicode/utf8"
)

// Range is an inclusive range of code points or of bytes.
type Range struct{ Lo, Hi rune }

// Seq is one byte sequence pattern: byte i is in [Seq[i].Lo, Seq[i].Hi].
type Seq []Range

// MaxRune is the largest code point.
const MaxRune = utf8.MaxRune

const surrLo, surrHi = 0xD800, 0xDFFF

// Normalize sorts rs, merges overlapping and adjacent ranges, clips them to
// 0..MaxRune and drops the surrogates. It returns a new slice.
func Normalize(rs []Range) []Range {
	in := make([]Range, 0, len(rs))
	for _, r := range rs {
		r.Lo, r.Hi = max(r.Lo, 0), min(r.Hi, MaxRune)
		if r.Lo <= r.Hi {
			in = append(in, r)
		}
	}
	slices.SortFunc(in, func(a, b Range) int { return int(a.Lo - b.Lo) })
	var out []Range
	for _, r := range in {
		if n := len(out); n > 0 && r.Lo <= out[n-1].Hi+1 {
			out[n-1].Hi = max(out[n-1].Hi, r.Hi)
			continue
		}
		out = append(out, r)
	}
	// Cut the surrogate block out.
	var res []Range
	for _, r := range out {
		if r.Hi < surrLo || r.Lo > surrHi {
			res = append(res, r)
			continue
		}
		if r.Lo < surrLo {
			res = append(res, Range{r.Lo, surrLo - 1})
		}
		if r.Hi > surrHi {
			res = append(res, Range{surrHi + 1, r.Hi})
		}
	}
	return res
}

// Negate is the complement of rs within 0..MaxRune (surrogates excluded).
func Negate(rs []Range) []Range {
	rs = Normalize(rs)
	var out []Range
	next := rune(0)
	for _, r := range rs {
		if r.Lo > next {
			out = append(out, Range{next, r.Lo - 1})
		}
		next = r.Hi + 1
	}
	if next <= MaxRune {
		out = append(out, Range{next, MaxRune})
	}
	return Normalize(out)
}

// Sequences returns the byte sequences that encode exactly the code points
// of rs (after Normalize), in increasing code point order.
func Sequences(rs []Range) []Seq {
	var out []Seq
	for _, r := range Normalize(rs) {
		out = split(r.Lo, r.Hi, out)
	}
	return out
}

// split appends the sequences of [lo, hi], a range without surrogates.
func split(lo, hi rune, out []Seq) []Seq {
	// Pieces must not cross an encoded-length boundary.
	for _, m := range [...]rune{0x7F, 0x7FF, 0xFFFF} {
		if lo <= m && m < hi {
			out = split(lo, m, out)
			return split(m+1, hi, out)
		}
	}
	if hi <= 0x7F {
		return append(out, Seq{{lo, hi}})
	}
	// Below the top byte, every continuation byte range must be full
	// (80..BF) or the bytes above it must be equal; split where not.
	for i := 1; i < 4; i++ {
		m := rune(1)<<(6*i) - 1
		if lo&^m != hi&^m {
			if lo&m != 0 {
				out = split(lo, lo|m, out)
				return split((lo|m)+1, hi, out)
			}
			if hi&m != m {
				out = split(lo, (hi&^m)-1, out)
				return split(hi&^m, hi, out)
			}
		}
	}
	var a, b [4]byte
	n := utf8.EncodeRune(a[:], lo)
	utf8.EncodeRune(b[:], hi)
	s := make(Seq, n)
	for i := range n {
		s[i] = Range{rune(a[i]), rune(b[i])}
	}
	return append(out, s)
}

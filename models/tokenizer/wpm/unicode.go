package wpm

import (
	"sort"
	"unicode"
	"unicode/utf8"
)

type nfdRange struct{ first, last, nfd uint32 }

// decodeRunes is unicode_cpts_from_utf8 (src/unicode.cpp): the lead byte
// alone decides the length and only the continuation bytes' top bits are
// checked, so overlong forms and surrogates decode to their value; a byte
// that starts no valid sequence becomes U+FFFD and decoding goes on at the
// next byte. Values above U+10FFFF can come out of a 4-byte form.
func decodeRunes(s string, out []rune) []rune {
	cont := func(i int) bool { return i < len(s) && s[i]&0xc0 == 0x80 }
	for i := 0; i < len(s); {
		b := s[i]
		switch {
		case b < 0x80:
			out = append(out, rune(b))
			i++
		case b&0xe0 == 0xc0 && cont(i+1):
			out = append(out, rune(b&0x1f)<<6|rune(s[i+1]&0x3f))
			i += 2
		case b&0xf0 == 0xe0 && cont(i+1) && cont(i+2):
			out = append(out, rune(b&0x0f)<<12|rune(s[i+1]&0x3f)<<6|rune(s[i+2]&0x3f))
			i += 3
		case b&0xf8 == 0xf0 && cont(i+1) && cont(i+2) && cont(i+3):
			out = append(out, rune(b&0x07)<<18|rune(s[i+1]&0x3f)<<12|rune(s[i+2]&0x3f)<<6|rune(s[i+3]&0x3f))
			i += 4
		default:
			out = append(out, utf8.RuneError)
			i++
		}
	}
	return out
}

// nfd is unicode_cpts_normalize_nfd for one code point: the first code
// point of its canonical decomposition (the generated nfdRanges), so "Ä"
// becomes "A" and the accent is gone.
func nfd(r rune) rune {
	if r < 0xc0 { // nothing below U+00C0 decomposes
		return r
	}
	i := sort.Search(len(nfdRanges), func(i int) bool { return nfdRanges[i].first > uint32(r) }) - 1
	if i >= 0 && uint32(r) <= nfdRanges[i].last {
		return rune(nfdRanges[i].nfd)
	}
	return r
}

// The flags llama.cpp's WPM preprocessing asks for, from Go's Unicode
// tables: \s is the White_Space property (unicode.IsSpace is that set),
// \p{C} is Cc|Cf|Co|Cs (unassigned code points are "undefined" in
// llama.cpp, not control), \p{P} and \p{S} are the general categories.
func isControl(r rune) bool {
	return unicode.In(r, unicode.Cc, unicode.Cf, unicode.Co, unicode.Cs)
}

// isChinese is llm_tokenizer_wpm_session::is_chinese_char, ranges as
// llama.cpp has them (0x2B920 rather than 0x2B820 follows HF's Rust code).
func isChinese(r rune) bool {
	return (r >= 0x4E00 && r <= 0x9FFF) ||
		(r >= 0x3400 && r <= 0x4DBF) ||
		(r >= 0x20000 && r <= 0x2A6DF) ||
		(r >= 0x2A700 && r <= 0x2B73F) ||
		(r >= 0x2B740 && r <= 0x2B81F) ||
		(r >= 0x2B920 && r <= 0x2CEAF) ||
		(r >= 0xF900 && r <= 0xFAFF) ||
		(r >= 0x2F800 && r <= 0x2FA1F)
}

// What preprocess does with a code point.
const (
	cpJoin  = iota // lowercased into the current word
	cpSpace        // ends the current word
	cpDrop         // vanishes
	cpAlone        // a word of its own
)

// asciiClass caches classify for ASCII, the common case.
var asciiClass = func() (c [0x80]uint8) {
	for r := range rune(0x80) {
		c[r] = classify(r)
	}
	return c
}()

// classify is the per-code-point decision of
// llm_tokenizer_wpm_session::preprocess, for a code point after nfd.
func classify(r rune) uint8 {
	switch {
	case unicode.IsSpace(r):
		return cpSpace
	case r == 0 || r == utf8.RuneError || isControl(r):
		return cpDrop
	case r > unicode.MaxRune:
		// llama.cpp's unicode_cpt_to_utf8 throws on these; drop them.
		return cpDrop
	case unicode.IsPunct(r) || (r < 0x7f && unicode.IsSymbol(r)) || isChinese(r):
		return cpAlone
	}
	return cpJoin
}

// preprocess is llm_tokenizer_wpm_session::preprocess: per code point after
// nfd, whitespace ends a word; NUL, U+FFFD and control characters vanish;
// punctuation, ASCII symbols and CJK ideographs are words of their own;
// everything else, lowercased, joins the current word. words is reused.
func preprocess(text string, words []string) []string {
	var cpts [64]rune
	var cur []byte
	flush := func() {
		if len(cur) > 0 {
			words = append(words, string(cur))
			cur = cur[:0]
		}
	}
	for _, r := range decodeRunes(text, cpts[:0]) {
		r = nfd(r)
		var c uint8
		if r >= 0 && r < 0x80 {
			c = asciiClass[r]
		} else {
			c = classify(r)
		}
		switch c {
		case cpSpace:
			flush()
		case cpAlone:
			flush()
			cur = utf8.AppendRune(cur, unicode.ToLower(r))
			flush()
		case cpJoin:
			cur = utf8.AppendRune(cur, unicode.ToLower(r))
		}
	}
	flush()
	return words
}

package gpt2bpe

// GPT-2's byte-level alphabet: every byte is shown as a printable rune so
// that BPE tokens are valid text. Printable Latin-1 bytes stand for
// themselves, the rest map to U+0100 upwards in byte order
// (unicode_byte_to_utf8_map in llama.cpp's src/unicode.cpp).
var (
	byteRune [256]rune
	runeByte = map[rune]byte{}
	// alphabet[r] is 1 + the byte that character r stands for, 0 if none.
	alphabet [0x144]int16
)

func init() {
	n := 0
	for b := 0; b < 256; b++ {
		if (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF) {
			byteRune[b] = rune(b)
		} else {
			byteRune[b] = rune(256 + n)
			n++
		}
		runeByte[byteRune[b]] = byte(b)
		alphabet[byteRune[b]] = int16(b) + 1
	}
}

// ByteText writes raw bytes in GPT-2's byte-level alphabet, as a
// vocabulary's tokens and merges spell them.
func ByteText(b []byte) string {
	r := make([]rune, len(b))
	for i, c := range b {
		r[i] = byteRune[c]
	}
	return string(r)
}

// alphabetByte is the byte that alphabet character r stands for.
func alphabetByte(r rune) (byte, bool) {
	if r < 0 || int(r) >= len(alphabet) || alphabet[r] == 0 {
		return 0, false
	}
	return byte(alphabet[r] - 1), true
}

const replacementChar = 0xFFFD

// decodeRunes splits text into code points the way llama.cpp's
// unicode_cpts_from_utf8 does: a malformed sequence yields U+FFFD and skips
// one byte. (It is more lenient than Go's decoder about overlong forms and
// surrogates, and so must be this.)
func decodeRunes(s string) []rune {
	out := make([]rune, 0, len(s))
	for i := 0; i < len(s); {
		c := s[i]
		cont := func(k int) bool { return i+k < len(s) && s[i+k]&0xC0 == 0x80 }
		switch {
		case c&0x80 == 0:
			out = append(out, rune(c))
			i++
		case c&0x40 == 0:
			out = append(out, replacementChar)
			i++
		case c&0x20 == 0 && cont(1):
			out = append(out, rune(c&0x1F)<<6|rune(s[i+1]&0x3F))
			i += 2
		case c&0x20 != 0 && c&0x10 == 0 && cont(1) && cont(2):
			out = append(out, rune(c&0x0F)<<12|rune(s[i+1]&0x3F)<<6|rune(s[i+2]&0x3F))
			i += 3
		case c&0x10 != 0 && c&0x08 == 0 && cont(1) && cont(2) && cont(3):
			out = append(out, rune(c&0x07)<<18|rune(s[i+1]&0x3F)<<12|rune(s[i+2]&0x3F)<<6|rune(s[i+3]&0x3F))
			i += 4
		default:
			out = append(out, replacementChar)
			i++
		}
	}
	return out
}

// appendUTF8 encodes r as unicode_cpt_to_utf8 does (surrogates included).
func appendUTF8(b []byte, r rune) []byte {
	switch {
	case r <= 0x7F:
		return append(b, byte(r))
	case r <= 0x7FF:
		return append(b, 0xC0|byte(r>>6), 0x80|byte(r&0x3F))
	case r <= 0xFFFF:
		return append(b, 0xE0|byte(r>>12), 0x80|byte(r>>6&0x3F), 0x80|byte(r&0x3F))
	}
	return append(b, 0xF0|byte(r>>18&0x07), 0x80|byte(r>>12&0x3F), 0x80|byte(r>>6&0x3F), 0x80|byte(r&0x3F))
}

// byteEncode appends to dst the GPT-2 byte-level text of code points:
// their UTF-8 bytes, each shown as its alphabet character.
func byteEncode(dst []byte, cpts []rune) []byte {
	var tmp [4]byte
	for _, r := range cpts {
		for _, b := range appendUTF8(tmp[:0], r) {
			dst = appendUTF8(dst, byteRune[b])
		}
	}
	return dst
}

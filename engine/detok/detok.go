// Package detok turns a stream of token bytes into text one complete UTF-8
// character at a time.
//
// Tokens are byte fragments: a multi-byte character may be split across
// tokens, so a Decoder holds back an incomplete tail until it completes.
// Bytes that can never become valid are replaced by U+FFFD exactly as
// Python's bytes.decode("utf-8", errors="replace") does for the whole text
// (one U+FFFD per maximal invalid subpart, Unicode §3.9). So the pieces of a
// stream plus Flush equal Decode of all its bytes, wherever it was split.
package detok

// replacement is U+FFFD in UTF-8.
const replacement = "\uFFFD"

// Decoder is an incremental UTF-8 decoder. The zero value is ready to use.
type Decoder struct {
	pend   [4]byte // the valid-so-far prefix of an unfinished character
	n      int     // bytes in pend
	need   int     // continuation bytes still expected
	lo, hi byte    // the range the next continuation byte must be in
}

// Append decodes piece and appends the text of every character it completes
// to dst; an unfinished tail stays pending. It does not allocate beyond the
// growth of dst.
func (d *Decoder) Append(dst, piece []byte) []byte {
	for _, c := range piece {
		dst = d.byte(dst, c)
	}
	return dst
}

// Write is Append returning a string, for callers that do not care about
// allocation.
func (d *Decoder) Write(piece []byte) string { return string(d.Append(nil, piece)) }

// Flush appends U+FFFD if a character is unfinished (as Python does for
// truncated input) and resets the decoder.
func (d *Decoder) Flush(dst []byte) []byte {
	if d.n > 0 {
		dst = append(dst, replacement...)
	}
	d.Reset()
	return dst
}

// Reset drops any pending bytes.
func (d *Decoder) Reset() { *d = Decoder{} }

// Pending is the number of bytes held back waiting for the rest of a
// character.
func (d *Decoder) Pending() int { return d.n }

// byte advances the state machine by one byte.
func (d *Decoder) byte(dst []byte, c byte) []byte {
	if d.n > 0 {
		if c >= d.lo && c <= d.hi {
			d.pend[d.n] = c
			d.n++
			d.need--
			d.lo, d.hi = 0x80, 0xBF
			if d.need == 0 {
				dst = append(dst, d.pend[:d.n]...)
				d.n = 0
			}
			return dst
		}
		// The pending prefix can never complete: it is one maximal invalid
		// subpart. c starts afresh.
		dst = append(dst, replacement...)
		d.n, d.need = 0, 0
	}
	// Lead byte: its length and the range of its first continuation byte
	// (the second-byte ranges exclude overlongs, surrogates and > U+10FFFF).
	switch {
	case c < 0x80:
		return append(dst, c)
	case c >= 0xC2 && c <= 0xDF:
		d.need, d.lo, d.hi = 1, 0x80, 0xBF
	case c == 0xE0:
		d.need, d.lo, d.hi = 2, 0xA0, 0xBF
	case c >= 0xE1 && c <= 0xEC, c == 0xEE, c == 0xEF:
		d.need, d.lo, d.hi = 2, 0x80, 0xBF
	case c == 0xED:
		d.need, d.lo, d.hi = 2, 0x80, 0x9F
	case c == 0xF0:
		d.need, d.lo, d.hi = 3, 0x90, 0xBF
	case c >= 0xF1 && c <= 0xF3:
		d.need, d.lo, d.hi = 3, 0x80, 0xBF
	case c == 0xF4:
		d.need, d.lo, d.hi = 3, 0x80, 0x8F
	default: // 0x80..0xC1, 0xF5..0xFF: never valid here
		return append(dst, replacement...)
	}
	d.pend[0] = c
	d.n = 1
	return dst
}

// Decode is the whole-text decode with Python's replacement rule; Tokenizer
// implementations can use it so that Decode(ids) agrees with streaming.
func Decode(b []byte) string {
	var d Decoder
	out := d.Append(make([]byte, 0, len(b)+8), b)
	return string(d.Flush(out))
}

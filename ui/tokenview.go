package ui

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"chat/session"
	"chat/session/termtext"

	"github.com/charmbracelet/x/ansi"
)

// The token view: a message that has tokens (session.Message.Tokens: a
// reply made while the view was on, and the turn of the prompt that asked
// for it) is drawn as its tokens, "¦" between them, each reply token
// coloured by the probability it was drawn with (heatBuckets), an accepted
// draft guess on another background, and prompt tokens whose KV came from
// the prefix cache underlined. A character split over several tokens is
// drawn once, over their joined cell. Every token's bytes go through the
// terminal sanitiser (session/termtext); a newline shows as "↵" and breaks
// the line. Lines break between tokens. Without colours (NO_COLOR) only
// the boundaries show.

// heatBuckets are the probability thresholds of the heat map's colours,
// from likely to unlikely (below the last: the last colour).
var heatBuckets = [...]float64{0.9, 0.5, 0.2, 0.05}

func heatBucket(p float64) int {
	for i, b := range heatBuckets {
		if p >= b {
			return i
		}
	}
	return len(heatBuckets)
}

const tokenSep = "¦"

// tokenCell is one token, or the tokens of one character split over them.
type tokenCell struct {
	text                    string
	prob                    float64 // the least likely of them
	drafted, prompt, cached bool
}

func tokenCells(toks []session.Token) []tokenCell {
	var out []tokenCell
	var buf []byte
	var cur tokenCell
	for i, t := range toks {
		if len(buf) == 0 {
			cur = tokenCell{prob: t.Prob, drafted: t.Drafted, prompt: t.Prompt, cached: t.Cached}
		} else {
			cur.prob = min(cur.prob, t.Prob)
			cur.drafted = cur.drafted || t.Drafted
			cur.cached = cur.cached && t.Cached
		}
		buf = append(buf, t.Text...)
		if midRune(buf) && len(buf) < 16 && i < len(toks)-1 {
			continue // the character goes on in the next token
		}
		cur.text = string(buf)
		out = append(out, cur)
		buf = buf[:0]
	}
	return out
}

// midRune reports whether b ends inside a UTF-8 character.
func midRune(b []byte) bool {
	for i := len(b) - 1; i >= 0 && i >= len(b)-4; i-- {
		switch c := b[i]; {
		case c < 0x80:
			return false
		case c >= 0xC0:
			return !utf8.FullRune(b[i:])
		}
	}
	return false
}

// cellPaint is how a cell is drawn.
func (s *styles) cellPaint(c tokenCell, text string) string {
	switch {
	case c.prompt && c.cached:
		return s.r(s.cached, text)
	case c.prompt:
		return s.r(s.user, text)
	case c.drafted:
		return s.r(s.heatDraft[heatBucket(c.prob)], text)
	}
	return s.r(s.heat[heatBucket(c.prob)], text)
}

// renderTokens draws a message's tokens at width, with the role's markers.
func (s *styles) renderTokens(m session.Message, width int) []string {
	first, rest := s.marker(m.Role)
	mw := ansi.StringWidth(rest)
	avail := max(1, width-mw)
	var out []string
	var line strings.Builder
	lineW := 0
	prefix := first
	emit := func() {
		out = append(out, padTo(prefix+line.String(), mw+lineW, width))
		line.Reset()
		lineW = 0
		prefix = rest
	}
	put := func(c tokenCell, seg string) {
		w := ansi.StringWidth(seg)
		if lineW > 0 && lineW+1+w > avail {
			emit()
		}
		if lineW > 0 {
			line.WriteString(s.r(s.dim, tokenSep))
			lineW++
		}
		for w > avail-lineW && lineW < avail { // a token wider than the line
			head := ansi.Truncate(seg, avail-lineW, "")
			if head == "" {
				break
			}
			line.WriteString(s.cellPaint(c, head))
			lineW += ansi.StringWidth(head)
			seg = strings.TrimPrefix(seg, head)
			w = ansi.StringWidth(seg)
			emit()
		}
		line.WriteString(s.cellPaint(c, seg))
		lineW += w
	}
	for _, c := range tokenCells(m.Tokens) {
		text := termtext.Clean(c.text, false)
		if text == "" {
			put(c, "∅") // a token of control characters only
			continue
		}
		parts := strings.Split(text, "\n")
		for j, p := range parts {
			if j < len(parts)-1 {
				put(c, p+"↵")
				emit()
			} else if p != "" {
				put(c, p)
			}
		}
	}
	if lineW > 0 || len(out) == 0 {
		emit()
	}
	return out
}

// tokenLegend is the token view's line in the dock.
func (m *model) tokenLegend(w, h int) []string {
	st := m.st
	if m.remote() {
		return []string{st.r(st.dim, "tokens: not with --remote (the server sends text)")}
	}
	if st.plain {
		return []string{st.r(st.dim, "tokens: "+tokenSep+" between tokens (no colours: NO_COLOR)")}
	}
	var b strings.Builder
	b.WriteString(st.r(st.dim, "tokens: p "))
	for i := range st.heat {
		label := fmt.Sprintf("≥%.0f", 100*heatBuckets[min(i, len(heatBuckets)-1)])
		if i == len(heatBuckets) {
			label = fmt.Sprintf("<%.0f%%", 100*heatBuckets[len(heatBuckets)-1])
		}
		b.WriteString(st.r(st.heat[i], "■"+label) + " ")
	}
	b.WriteString(st.r(st.dim, "· ") + st.r(st.heatDraft[0], "guess") + st.r(st.dim, " accepted draft · ") +
		st.r(st.cached, "prompt") + st.r(st.dim, " from the prefix cache · "+tokenSep+" boundary"))
	return []string{b.String()}
}

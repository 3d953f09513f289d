package ui

import (
	"strings"

	"chat/session"
	"chat/session/termtext"

	"github.com/charmbracelet/x/ansi"
)

// rawDoc is the transcript in raw mode, where the model continues the
// user's text: the whole conversation is one flowing text (the prompt's
// words and the continuation share lines), told apart only by colour. It is
// kept as paragraphs: finished ones are wrapped once per width, and only the
// last, open one is wrapped again when text arrives.
type rawDoc struct {
	st *styles

	paras     []entry // finished paragraphs; msg.Content is their painted text
	open      strings.Builder
	openLines []string
	openWidth int

	committed []session.Message // what paras+open show, as Messages said it
	streamed  strings.Builder   // the reply's plain text, to recognise it in Messages
	clean     termtext.Stream   // sanitises streamed's pieces for display (an escape sequence split over tokens goes whole)

	tokens bool // the token view: messages with tokens are drawn as them (tokenview.go)
}

func newRawDoc(st *styles) *rawDoc { return &rawDoc{st: st} }

// addMsg appends a message: its text, or in the token view its tokens.
func (d *rawDoc) addMsg(m session.Message) {
	if m.Role == session.System {
		return
	}
	if d.tokens && len(m.Tokens) > 0 {
		d.addTokens(m.Tokens)
		return
	}
	d.add(m.Role, sanitizeDisplay(m.Content))
}

// addTokens appends tokens, painted and apart; a newline token ends the
// paragraph.
func (d *rawDoc) addTokens(toks []session.Token) {
	for _, c := range tokenCells(toks) {
		text := termtext.Clean(c.text, false)
		if text == "" {
			text = "∅"
		}
		for i, p := range strings.Split(text, "\n") {
			if i > 0 {
				d.paras = append(d.paras, entry{msg: session.Message{Content: d.open.String()}})
				d.open.Reset()
			}
			if i == 0 && d.open.Len() > 0 {
				d.open.WriteString(d.st.r(d.st.dim, tokenSep))
			}
			if strings.Count(text, "\n") > i {
				p += "↵"
			}
			if p != "" {
				d.open.WriteString(d.st.cellPaint(c, p))
			}
		}
	}
	d.openWidth = 0
}

// add appends text of a role; a user's text is painted, a reply's is not.
func (d *rawDoc) add(role session.Role, text string) {
	for i, piece := range strings.Split(text, "\n") {
		if i > 0 {
			d.paras = append(d.paras, entry{msg: session.Message{Content: d.open.String()}})
			d.open.Reset()
		}
		if role == session.User {
			piece = d.st.r(d.st.user, piece)
		}
		d.open.WriteString(piece)
	}
	d.openWidth = 0
}

func (d *rawDoc) paraLines(i, width int) []string {
	e := &d.paras[i]
	if e.width != width {
		e.lines = d.st.wrapPainted(e.msg.Content, width)
		e.width = width
	}
	return e.lines
}

func (d *rawDoc) openLinesAt(width int) []string {
	if d.openWidth != width {
		d.openLines = d.st.wrapPainted(d.open.String(), width)
		d.openWidth = width
	}
	return d.openLines
}

func (d *rawDoc) empty() bool { return len(d.paras) == 0 && d.open.Len() == 0 }

// countFrom counts the lines from paragraph k to the end.
func (d *rawDoc) countFrom(k, width int) int {
	n := len(d.openLinesAt(width))
	for i := k; i < len(d.paras); i++ {
		n += len(d.paraLines(i, width))
	}
	return n
}

func (d *rawDoc) walkUp(width int, fn func([]string) bool) {
	if !fn(d.openLinesAt(width)) {
		return
	}
	for i := len(d.paras) - 1; i >= 0; i-- {
		if !fn(d.paraLines(i, width)) {
			return
		}
	}
}

// setMessages shows msgs. When they only add to what is shown (the user's
// new text, or the reply that was just streamed) only the open paragraph is
// wrapped again; anything else rebuilds the text.
func (d *rawDoc) setMessages(msgs []session.Message, streaming bool) {
	n := len(d.committed)
	ok := len(msgs) >= n
	for i := 0; ok && i < n; i++ {
		ok = sameMsg(msgs[i], d.committed[i])
	}
	var rest []session.Message
	if ok {
		rest = msgs[n:]
	}
	if ok && !streaming && d.streamed.Len() > 0 {
		// The reply shown while it streamed must be the next message.
		if len(rest) > 0 && rest[0].Role == session.Assistant && rest[0].Content == d.streamed.String() &&
			!(d.tokens && len(rest[0].Tokens) > 0) { // shown as text while it streamed: drawn again as tokens
			d.committed = append(d.committed, rest[0])
			rest = rest[1:]
			d.streamed.Reset()
		} else {
			ok = false
		}
	}
	if !ok {
		d.paras, d.committed = d.paras[:0], d.committed[:0]
		d.open.Reset()
		d.openWidth = 0
		rest = msgs
		if !streaming {
			d.streamed.Reset()
		}
	}
	for _, m := range rest {
		d.addMsg(m)
		d.committed = append(d.committed, m)
	}
	if !ok && streaming {
		d.add(session.Assistant, sanitizeDisplay(d.streamed.String()))
	}
}

// stream adds reply text as it arrives.
func (d *rawDoc) stream(text string) {
	d.streamed.WriteString(text)
	d.add(session.Assistant, d.clean.Clean(text))
}

func (d *rawDoc) last() (session.Message, bool) {
	if len(d.committed) == 0 {
		return session.Message{}, false
	}
	return d.committed[len(d.committed)-1], true
}

// wrapPainted wraps one paragraph that may hold painted spans (each one
// SGR sequence, text, and a reset: a look). A span cut by a line break is
// closed at the end of the line and opened again on the next, so every
// line stands alone (the view shows any window of lines).
func (s *styles) wrapPainted(p string, width int) []string {
	width = max(1, width)
	wrapped := p
	if ansi.StringWidth(p) > width {
		wrapped = ansi.Wrap(p, width, "")
	}
	lines := strings.Split(wrapped, "\n")
	open := "" // the span's SGR a line ends inside
	for i, l := range lines {
		out := l
		if !s.plain {
			out = open + out
			open = openSGR(l, open)
			if open != "" {
				out += "\x1b[m"
			}
		}
		lines[i] = padTo(out, ansi.StringWidth(out), width)
	}
	return lines
}

// openSGR is the SGR sequence still in force at the end of l, given the
// one in force at its start: the last one unless a reset followed it.
func openSGR(l, open string) string {
	for i := 0; i < len(l); {
		j := strings.Index(l[i:], "\x1b[")
		if j < 0 {
			break
		}
		i += j
		k := strings.IndexByte(l[i:], 'm')
		if k < 0 {
			break
		}
		seq := l[i : i+k+1]
		if seq == "\x1b[m" || seq == "\x1b[0m" {
			open = ""
		} else {
			open = seq
		}
		i += k + 1
	}
	return open
}

// invalidate paints and wraps the text again (the styles changed).
func (d *rawDoc) invalidate() {
	committed := append([]session.Message(nil), d.committed...)
	d.paras, d.committed = d.paras[:0], d.committed[:0]
	d.open.Reset()
	d.openWidth = 0
	for _, m := range committed {
		d.addMsg(m)
		d.committed = append(d.committed, m)
	}
	if d.streamed.Len() > 0 {
		d.add(session.Assistant, sanitizeDisplay(d.streamed.String()))
	}
}

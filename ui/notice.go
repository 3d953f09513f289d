package ui

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// The notice lines, above the input: answers (✓), warnings (!) and errors
// (✗). Notices that arrive together are all kept, joined; the text wraps
// over up to noteRows rows, and a longer one opens in a pane over the
// transcript, so nothing is cut off unread.

type noteKind int

const (
	noteWarn noteKind = iota
	noteErr
	noteOK
)

type note struct {
	text string
	kind noteKind
	rows []string // wrapped at the terminal's width

	pane *pane // the pane the notice opened in, too long for the rows
}

// noteRows is how many rows a notice may take before it opens in a pane:
// 3, or a quarter of a taller terminal, so that on a narrow one the
// notice a reply ends with ("reached max_tokens") wraps below the reply
// rather than covering it; never more than the layout shows (noteCap: on
// a 12-row terminal, 2), or the last row, the pane's "Esc closes" hint
// among them, was cut off unseen.
func (m *model) noteRows() int { return min(max(3, m.height/4), m.noteCap()) }

// setNotice shows a warning, or an error when isErr.
func (m *model) setNotice(s string, isErr bool) {
	k := noteWarn
	if isErr {
		k = noteErr
	}
	m.showNote(s, k)
}

// setInfo shows an answer, such as a command's result.
func (m *model) setInfo(s string) { m.showNote(s, noteOK) }

// addNotice shows s next to a notice that is already showing (two arrived
// together: "older turns dropped" and "length limit").
func (m *model) addNotice(s string, isErr bool) {
	if m.note.text != "" && m.note.kind != noteOK {
		k := m.note.kind
		if isErr {
			k = noteErr
		}
		m.showNote(m.note.text+" · "+s, k)
		return
	}
	m.setNotice(s, isErr)
}

func (m *model) showNote(s string, k noteKind) {
	s = strings.TrimSpace(oneLine(s))
	m.note = note{text: s, kind: k}
	if s == "" {
		return
	}
	m.setNoteRows()
	if n := m.noteRows(); len(m.note.rows) > n {
		p := newPane(m.mark(k) + s)
		m.push(p)
		m.note.text, m.note.kind, m.note.pane = firstLine(s), k, p
		m.setNoteRows()
		m.note.rows = append(m.note.rows[:min(len(m.note.rows), max(0, n-1))], "  (in full above · Esc closes)")
	}
}

// refitNote places the notice again for a new terminal size, as a new one
// would be: in the rows when it fits them, else in a pane with the hint.
// (Wrapped again as it was, a notice that had opened in a pane lost its
// hint and kept the pane over the transcript on a widened terminal, and
// one that no longer fitted was cut.) While another pane is open, or the
// user closed the notice's, it is only wrapped again.
func (m *model) refitNote() {
	p, open := find[*pane](m)
	switch {
	case open && p == m.note.pane:
		m.pop(func(l layer) bool { return l == layer(p) })
	case open || m.note.pane != nil:
		m.setNoteRows()
		return
	}
	m.showNote(m.note.text, m.note.kind) // whole: oneLine made it one line, so firstLine kept it all
}

func (m *model) clearNote() { m.note = note{} }

// setNoteRows wraps the notice at the terminal's width, the rows after
// the first indented by two columns (so it wraps two columns narrower: an
// indented row must still fit, not lose its end to the edge).
func (m *model) setNoteRows() {
	w, indent := max(1, m.width), ""
	if w > 4 {
		w, indent = w-2, "  "
	}
	text := m.mark(m.note.kind) + m.note.text
	m.note.rows = strings.Split(ansi.Wrap(text, w, ""), "\n")
	for i := 1; i < len(m.note.rows); i++ {
		m.note.rows[i] = indent + strings.TrimLeft(m.note.rows[i], " ")
	}
}

func (m *model) mark(k noteKind) string {
	switch k {
	case noteErr:
		return "✗ "
	case noteOK:
		return "✓ "
	}
	return "! "
}

// noteLines paints the notice rows.
func (m *model) noteLines() []string {
	look := m.st.warn
	switch m.note.kind {
	case noteErr:
		look = m.st.err
	case noteOK:
		look = m.st.busy
	}
	out := make([]string, len(m.note.rows))
	for i, r := range m.note.rows {
		if m.note.kind == noteOK && i == 0 && strings.HasPrefix(r, "✓ ") {
			out[i] = m.st.r(look, "✓ ") + r[len("✓ "):]
			continue
		}
		out[i] = m.st.r(look, r)
	}
	return out
}

func firstLine(s string) string {
	l, _, _ := strings.Cut(s, "\n")
	return l
}

package ui

import (
	"fmt"
	"strings"

	tea "charm.land/bubbletea/v2"
)

// layout is how the rows and columns of the terminal are shared out. Rows
// go to the input first, then the header, the status line and the hint line
// as the height allows; the transcript gets the rest.
type layout struct {
	header, body, status, hint, input int // rows
	panel                             bool
	mainW                             int // transcript columns
}

func (m *model) layout() layout {
	w, h := m.width, m.height
	var l layout
	l.panel = w >= panelMinWidth
	l.mainW = w
	if l.panel {
		l.mainW = w - panelWidth - 1
	}
	l.input = min(h, max(1, m.input.Height()))
	rem := h - l.input
	if rem >= 3 {
		l.header = 1
	}
	if !l.panel && rem >= 2 {
		l.status = 1
	}
	if rem >= 8 {
		l.hint = 1
	}
	l.body = max(0, rem-l.header-l.status-l.hint)
	return l
}

func (m *model) view() tea.View {
	var v tea.View
	v.AltScreen = true
	if !m.opts.NoMouse {
		v.MouseMode = tea.MouseModeCellMotion
	}
	v.WindowTitle = "chat · " + oneLine(m.info.Model)
	w, h := m.width, m.height
	if w <= 0 || h <= 0 {
		return v
	}
	l := m.layout()
	rows := make([]string, 0, h)
	if l.header > 0 {
		rows = append(rows, fit(m.st.r(m.st.header, m.headerText()), w))
	}
	rows = m.appendBody(rows, l)
	if l.status > 0 {
		if l.hint == 0 && m.notice != "" {
			rows = append(rows, fit(m.noticeText(), w))
		} else {
			rows = append(rows, fit(m.statusLine(), w))
		}
	}
	if l.hint > 0 {
		rows = append(rows, fit(m.hintText(), w))
	}
	inputTop := len(rows)
	in := strings.Split(m.inputLines(), "\n")
	for i := 0; i < l.input; i++ {
		s := ""
		if i < len(in) {
			s = in[i]
		}
		rows = append(rows, fit(s, w))
	}
	v.Content = strings.Join(rows, "\n")
	if c := m.input.Cursor(); c != nil {
		c.Y += inputTop
		if c.X < w && c.Y < h && c.Y >= inputTop {
			v.Cursor = c
		}
	}
	return v
}

// appendBody adds the transcript (or the help) and, on wide terminals, the
// side panel next to it.
func (m *model) appendBody(rows []string, l layout) []string {
	if l.body <= 0 {
		return rows
	}
	var left []string
	exact := false // lines already exactly mainW wide
	switch {
	case m.help:
		left = m.helpLines(l.mainW, l.body)
	case m.pane != nil:
		left = m.paneLines(l.mainW, l.body)
	case m.tr.empty():
		left = m.emptyLines()
	default:
		left = m.tr.window(l.body)
		exact = m.tr.width == l.mainW
	}
	blank := strings.Repeat(" ", l.mainW)
	if ov := m.overlayLines(l.mainW, l.body); len(ov) > 0 {
		// The palette or the completion popup covers the bottom of the
		// transcript, just above the input.
		full := make([]string, l.body)
		for i := range full {
			switch {
			case i >= l.body-len(ov):
				full[i] = ov[i-(l.body-len(ov))]
			case i < len(left) && exact:
				full[i] = left[i]
			case i < len(left):
				full[i] = fit(left[i], l.mainW)
			default:
				full[i] = blank
			}
		}
		left, exact = full, true
	}
	var right []string
	if l.panel {
		right = m.cachedPanel(panelWidth, l.body)
	}
	sep := m.st.r(m.st.dim, "│")
	for i := 0; i < l.body; i++ {
		s := blank
		if i < len(left) {
			s = left[i]
			if !exact {
				s = fit(s, l.mainW)
			}
		}
		if l.panel {
			s += sep + right[i]
		}
		rows = append(rows, s)
	}
	return rows
}

func (m *model) overlayLines(w, h int) []string {
	switch {
	case m.palette != nil:
		return m.paletteLines(w, h)
	case m.popupVisible():
		return m.popupLines(w, h)
	}
	return nil
}

// paneLines shows a command's answer of several lines.
func (m *model) paneLines(w, h int) []string {
	m.paneOff = min(m.paneOff, max(0, len(m.pane)-h))
	out := make([]string, 0, h)
	for _, l := range m.pane[m.paneOff:min(len(m.pane), m.paneOff+h)] {
		out = append(out, fit(" "+l, w))
	}
	return out
}

func (m *model) scrollPane(up bool, page int) {
	if up {
		m.paneOff = max(0, m.paneOff-page)
	} else {
		m.paneOff = min(max(0, len(m.pane)-1), m.paneOff+page)
	}
}

func (m *model) emptyLines() []string {
	first := "Say something and press Enter."
	if m.raw {
		first = "Type the start of a text and press Enter; the model continues it."
	}
	return []string{"", m.st.r(m.st.dim, "  "+first), m.st.r(m.st.dim, "  F1 shows the keys, Ctrl+P the palette, / the commands.")}
}

func (m *model) headerText() string {
	i := m.info
	parts := []string{" " + oneLine(i.Model)}
	for _, p := range []string{i.Arch, i.Quant, formatParams(i.Params)} {
		if p != "" {
			parts = append(parts, oneLine(p))
		}
	}
	if i.ContextLength > 0 {
		parts = append(parts, fmt.Sprintf("ctx %d", i.ContextLength))
	}
	mode := oneLine(i.Mode)
	if mode == "" {
		mode = "chat"
	}
	parts = append(parts, mode)
	return strings.Join(parts, " · ")
}

func (m *model) noticeText() string {
	if m.noticeErr {
		return m.st.r(m.st.err, "✗ "+m.notice)
	}
	if m.noticeOK {
		return m.st.r(m.st.busy, "✓ ") + m.notice
	}
	return m.st.r(m.st.warn, "! "+m.notice)
}

// hintText is the line above the input: a notice if there is one, else
// where the view is, else the keys that matter right now.
func (m *model) hintText() string {
	switch {
	case m.notice != "":
		return m.noticeText()
	case m.help:
		return m.st.r(m.st.dim, "Esc or F1 closes the help · PgUp/PgDn scroll")
	case m.palette != nil:
		return m.st.r(m.st.dim, "↑↓ choose · Enter run · Esc close")
	case m.popupVisible():
		return m.st.r(m.st.dim, "Tab complete · ↑↓ choose · Enter run · Esc hide")
	case m.pending != "":
		return m.st.r(m.st.busy, "running "+oneLine(m.pending)+"…") + m.st.r(m.st.dim, " · the backend answers when it is done")
	case m.editing >= 0:
		return m.st.r(m.st.warn, "editing your message (✎) · Enter resends it (the turns after it are dropped) · Ctrl+E the one before · Esc cancels")
	case !m.tr.following():
		return m.st.r(m.st.warn, fmt.Sprintf("↑ %d lines up · PgDn or Ctrl+End to follow", m.tr.offset))
	case m.backendStatus() != "":
		return m.st.r(m.st.busy, m.backendStatus()+"…")
	case m.busy && m.stats.GenTokens == 0 && !m.stopping:
		what := "reading the prompt"
		if n := m.stats.PromptTokens - m.stats.ReusedTokens; n > 0 {
			what = fmt.Sprintf("prefilling %d prompt tokens (%d reused)", n, m.stats.ReusedTokens)
		}
		return m.st.r(m.st.busy, what+"…") + m.st.r(m.st.dim, " · Esc stops")
	case m.busy:
		return m.st.r(m.st.dim, m.keyHints([2]string{"stop", "stop"}, [2]string{"temperature_down|temperature_up", "temperature"}, [2]string{"greedy", "greedy"}, [2]string{"help", "keys"}))
	default:
		return m.st.r(m.st.dim, m.keyHints([2]string{"send", "send"}, [2]string{"", "/ commands"}, [2]string{"palette", "palette"}, [2]string{"help", "keys"}, [2]string{"quit", "quit"}))
	}
}

// keyHints joins "KEY what" for the actions that have a key.
func (m *model) keyHints(pairs ...[2]string) string {
	var out []string
	for _, p := range pairs {
		down, up, _ := strings.Cut(p[0], "|")
		if p[0] == "" {
			out = append(out, p[1])
		} else if k := m.keyPair(down, up); k != "" {
			out = append(out, k+" "+p[1])
		}
	}
	return strings.Join(out, " · ")
}

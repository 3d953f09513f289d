package ui

import (
	"chat/session"
	"fmt"
	"math"
	"strings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// layout is how the rows and columns of the terminal are shared out. Rows
// go to the input first, then the header, the status line and the notice
// (or hint) lines as the height allows; the transcript gets the rest.
type layout struct {
	header, body, status, hint, input int // rows
	panel                             bool
	w, mainW                          int    // terminal and transcript columns
	dock                              [4]int // rows of the views' dock at the bottom of the body (views.go)
}

// docked is the dock's rows in all.
func (l layout) docked() int { return l.dock[0] + l.dock[1] + l.dock[2] + l.dock[3] }

// trRows is the transcript's rows: the body above the dock.
func (l layout) trRows() int { return l.body - l.docked() }

func (m *model) layout() layout {
	l := m.shareRows(m.note.text != "", len(m.note.rows))
	l.dock = m.dockPlan(l.body, l.mainW)
	return l
}

// shareRows is the layout without its dock, with a notice of noteN rows
// showing (noting) or none.
func (m *model) shareRows(noting bool, noteN int) layout {
	w, h := m.width, m.height
	l := layout{w: w}
	l.panel = w >= panelMinWidth
	l.mainW = w
	if l.panel {
		l.mainW = w - edgeWidth - panelWidth
	}
	l.input = min(h, max(1, m.in.height()))
	rem := h - l.input
	if rem >= 3 {
		l.header = 1
	}
	if rem >= 2 && (!l.panel || rem < 8 && noting) {
		// The status line; beside the panel, on a terminal too short
		// for the hint line, the notice's row.
		l.status = 1
	}
	if rem >= 8 {
		l.hint = 1
		if noteN > 1 {
			// A notice takes at most a third of the rows below the
			// header and status line.
			l.hint = min(noteN, max(1, (rem-l.header-l.status)/3))
		}
	}
	l.body = max(0, rem-l.header-l.status-l.hint)
	return l
}

// noteCap is the most rows the layout gives a notice: the hint rows of a
// notice of any length, or, on a terminal too short for the hint line,
// the status line's one (shareRows).
func (m *model) noteCap() int {
	l := m.shareRows(true, math.MaxInt)
	if l.hint > 0 {
		return l.hint
	}
	return l.status
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
		if l.hint == 0 && m.note.text != "" {
			rows = append(rows, fit(m.noteLines()[0], w))
		} else {
			rows = append(rows, fit(m.statusLine(), w))
		}
	}
	if l.hint > 0 {
		if m.note.text != "" {
			nl := m.noteLines()
			for i := 0; i < l.hint; i++ {
				s := ""
				if i < len(nl) {
					s = nl[i]
				}
				rows = append(rows, fit(s, w))
			}
		} else {
			rows = append(rows, fit(m.hintText(), w))
		}
	}
	inputTop := len(rows)
	in := m.in.rows()
	for i := 0; i < l.input; i++ {
		s := ""
		if i < len(in) {
			s = in[i]
		}
		rows = append(rows, fit(s, w))
	}
	v.Content = strings.Join(rows, "\n")
	if c := m.in.ta.Cursor(); c != nil {
		c.Y += inputTop
		if c.X < w && c.Y < h && c.Y >= inputTop {
			v.Cursor = c
		}
	}
	return v
}

// appendBody adds the transcript, the layers over it and, on wide
// terminals, the side panel next to it.
func (m *model) appendBody(rows []string, l layout) []string {
	if l.body <= 0 {
		return rows
	}
	var left []string
	exact := false // lines already exactly mainW wide
	if m.tr.empty() {
		left = m.emptyLines(l.mainW)
	} else {
		left = m.tr.window(l.trRows())
		exact = m.tr.width == l.mainW
	}
	if l.docked() > 0 {
		if len(left) > l.trRows() {
			left = left[:l.trRows()]
		}
		for len(left) < l.trRows() {
			left = append(left, strings.Repeat(" ", l.mainW))
		}
		left = append(left, m.dockLines(l.dock, l.body, l.mainW)...)
	}
	blank := strings.Repeat(" ", l.mainW)
	full := make([]string, l.body)
	for i := range full {
		switch {
		case i < len(left) && exact:
			full[i] = left[i]
		case i < len(left):
			full[i] = fit(left[i], l.mainW)
		default:
			full[i] = blank
		}
	}
	var right []string
	if l.panel {
		right = m.cachedPanel(panelWidth, l.body)
	}
	for _, x := range m.layers() {
		ov := x.lines(m)
		switch x.place() {
		case placeFull:
			for i := range full {
				full[i] = blank
				if i < len(ov) {
					full[i] = fit(ov[i], l.mainW)
				}
			}
		case placeBottom:
			for i, o := range ov {
				if j := l.body - len(ov) + i; j >= 0 {
					full[j] = fit(o, l.mainW)
				}
			}
		case placeRight:
			if l.panel {
				continue
			}
			for i, o := range ov {
				if i < len(full) {
					ow := ansi.StringWidth(o)
					full[i] = ansi.Truncate(full[i], max(0, l.mainW-ow), "") + o
					full[i] = fit(full[i], l.mainW)
				}
			}
		}
	}
	edge := m.panelEdge()
	for i := 0; i < l.body; i++ {
		s := full[i]
		if l.panel {
			s += edge + right[i]
		}
		rows = append(rows, s)
	}
	return rows
}

// emptyLines greet a new chat, wrapped to the transcript's width w: they
// name the keys a newcomer needs, so none of them may be cut off.
func (m *model) emptyLines(w int) []string {
	first := "Say something and press Enter."
	if m.raw {
		first = "Type the start of a text and press Enter; the model continues it."
	}
	out := []string{""}
	for _, s := range []string{first, "F1 shows the keys, Ctrl+P the palette, / the commands."} {
		for l := range strings.SplitSeq(ansi.Wrap(s, max(1, w-2), ""), "\n") {
			out = append(out, m.st.r(m.st.dim, "  "+l))
		}
	}
	return out
}

func (m *model) headerText() string {
	i := m.info
	parts := []string{" " + oneLine(i.Model)}
	for _, p := range []string{i.Arch, i.Quant, session.ParamCount(i.Params)} {
		if p != "" {
			parts = append(parts, oneLine(p))
		}
	}
	if i.ContextLength > 0 {
		parts = append(parts, session.ContextText(i))
	}
	mode := oneLine(i.Mode)
	if mode == "" {
		mode = "chat"
	}
	parts = append(parts, mode)
	return strings.Join(parts, " · ")
}

// hintText is the line above the input when there is no notice: what the
// top layer takes, else where the view is, else the keys that matter now.
func (m *model) hintText() string {
	ls := m.layers()
	switch {
	case len(ls) > 0:
		return ls[len(ls)-1].hint(m)
	case m.pending != "":
		return m.st.r(m.st.busy, "running "+oneLine(m.pending)+"…") + m.st.r(m.st.dim, " · the backend answers when it is done")
	case m.editing >= 0:
		// Short enough for 80 columns: cut at the width, it lost "Esc cancels".
		return m.st.r(m.st.warn, fmt.Sprintf("✎ editing · %s resends (drops later turns) · %s earlier · %s cancels",
			m.keys.first("send"), m.keys.first("edit_last"), m.keys.first("stop")))
	case !m.tr.following():
		return m.st.r(m.st.warn, fmt.Sprintf("↑ %d lines up · PgDn or Ctrl+End to follow", m.tr.offset))
	case m.backendStatus() != "":
		return m.st.r(m.st.busy, m.backendStatus()+"…")
	case m.busy && m.vals.Step && !m.stopping:
		return m.st.r(m.st.busy, "step mode") + m.st.r(m.st.dim, " · "+m.keyHints([2]string{"step", "next token"}, [2]string{"stop", "leaves step mode"}, [2]string{"quit", "stop"}))
	case m.busy && m.stats.GenTokens == 0 && !m.stopping:
		what := "reading the prompt"
		if n := m.stats.PromptTokens - m.stats.ReusedTokens; n > 0 {
			what = fmt.Sprintf("prefilling %d prompt tokens (%d reused)", n, m.stats.ReusedTokens)
		}
		return m.st.r(m.st.busy, what+"…") + m.st.r(m.st.dim, " · Esc stops")
	case m.busy:
		return m.st.r(m.st.dim, m.keyHints([2]string{"quit", "stop"}, [2]string{"temperature_down|temperature_up", "temperature"}, [2]string{"greedy", "greedy"}, [2]string{"help", "keys"}))
	case m.in.value() != "":
		hints := m.keyHints([2]string{"send", "send"}, [2]string{"newline", "new line"}, [2]string{"help", "keys"})
		if n := m.tokenCount(); n >= 0 {
			hints = fmt.Sprintf("%d tokens · %s", n, hints)
		}
		return m.st.r(m.st.dim, hints)
	default:
		return m.st.r(m.st.dim, m.keyHints([2]string{"send", "send"}, [2]string{"", "/ commands"}, [2]string{"palette", "palette"}, [2]string{"help", "keys"}, [2]string{"quit", "quit"}))
	}
}

// tokenCount is the token count of the input, asked of a TokenCounter
// backend once per text; -1 when it cannot say.
func (m *model) tokenCount() int {
	tc, ok := m.b.(TokenCounter)
	text := m.in.text()
	if !ok || m.pending != "" || strings.HasPrefix(text, "/") {
		return -1
	}
	if text != m.tokens.text || m.tokens.n == 0 {
		m.tokens.text, m.tokens.n = text, tc.CountTokens(text)
	}
	return m.tokens.n
}

// keyHints joins "KEY what" for the actions that have a key.
func (m *model) keyHints(pairs ...[2]string) string {
	var out []string
	for _, p := range pairs {
		down, up, _ := strings.Cut(p[0], "|")
		if p[0] == "" {
			out = append(out, p[1])
		} else if k := m.keys.pair(down, up); k != "" {
			out = append(out, k+" "+p[1])
		}
	}
	return strings.Join(out, " · ")
}

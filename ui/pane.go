package ui

import (
	"fmt"
	"strings"

	"chat/config/settings"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// pane is text shown over the transcript: the key help (F1), or a command's
// answer or a message too long for the notice lines. Its lines are wrapped
// to its width (a column layout keeps its indent), never cut, and PgUp/PgDn
// scroll it; Esc closes it.
type pane struct {
	help bool     // the key help, made from the key map at its width
	text []string // the answer's lines, unwrapped
	off  int      // rows scrolled past
	w, h int
	rows []string // text wrapped at w
}

func newPane(text string) *pane {
	return &pane{text: strings.Split(strings.TrimRight(text, "\n"), "\n")}
}

func (p *pane) place() placement { return placeFull }

func (p *pane) setSize(w, h int) {
	if w != p.w {
		p.rows = nil
	}
	p.w, p.h = max(1, w), max(0, h)
}

func (p *pane) wrapped(m *model) []string {
	if p.help {
		return m.helpRows(p.w) // cheap, and follows theme and key changes
	}
	if p.rows == nil {
		for _, l := range p.text {
			p.rows = append(p.rows, wrapHanging(" "+l, p.w)...)
		}
	}
	return p.rows
}

func (p *pane) key(m *model, k tea.KeyPressMsg, act string) (tea.Cmd, bool) {
	page := max(1, p.h-1)
	switch act {
	case "stop":
		m.closeTop()
	case "help":
		m.closeTop()
		if !p.help {
			m.openHelp()
		}
	case "page_up":
		p.off = max(0, p.off-page)
	case "page_down":
		p.off += page
	case "line_up":
		p.off = max(0, p.off-1)
	case "line_down":
		p.off++
	case "top":
		p.off = 0
	case "bottom":
		p.off = len(p.wrapped(m))
	default:
		if p.help && k.String() == "?" && m.in.value() == "" {
			m.closeTop()
			return nil, true
		}
		return nil, false
	}
	return nil, true
}

func (p *pane) lines(m *model) []string {
	rows := p.wrapped(m)
	p.off = max(0, min(p.off, len(rows)-p.h))
	out := make([]string, 0, p.h)
	for _, r := range rows[p.off:min(len(rows), p.off+p.h)] {
		out = append(out, fit(r, p.w))
	}
	return out
}

func (p *pane) hint(m *model) string {
	what := "Esc closes"
	if p.help {
		what = "Esc or F1 closes the help"
	}
	if n := len(p.wrapped(m)); n > p.h {
		below := max(0, n-p.off-p.h)
		what += fmt.Sprintf(" · PgUp/PgDn scroll (%d of %d lines below)", below, n)
	}
	return m.st.r(m.st.dim, what)
}

// wrapHanging wraps line to w cells. Continuation rows are indented to where
// the text of a column layout starts ("/set KEY VALUE    change a setting":
// under "change"), or by two cells.
func wrapHanging(line string, w int) []string {
	if ansi.StringWidth(line) <= w {
		return []string{line}
	}
	indent := 2
	if i := strings.Index(strings.TrimLeft(line, " "), "  "); i > 0 {
		lead := len(line) - len(strings.TrimLeft(line, " "))
		j := lead + i
		for j < len(line) && line[j] == ' ' {
			j++
		}
		if col := ansi.StringWidth(line[:j]); col < w/2 {
			indent = col
		}
	}
	first := ansi.Wrap(line, w, "")
	rows := strings.Split(first, "\n")
	if len(rows) <= 1 {
		return rows
	}
	pad := strings.Repeat(" ", indent)
	rest := strings.TrimLeft(strings.Join(rows[1:], " "), " ")
	out := []string{rows[0]}
	for _, r := range strings.Split(ansi.Wrap(rest, max(1, w-indent), ""), "\n") {
		out = append(out, pad+r)
	}
	return out
}

// openHelp shows the key help.
func (m *model) openHelp() { m.push(&pane{help: true}) }

// helpRows is the key help at width w, made from the key map so remapped
// keys show as they are.
func (m *model) helpRows(w int) []string {
	st := m.st
	type kv struct{ keys, what string }
	var rows []kv
	for _, a := range settings.Actions() {
		rows = append(rows, kv{m.keys.keysOf(a.Name), a.Help})
	}
	rows = append(rows,
		kv{"↑ ↓", "earlier messages (on an empty input)"},
		kv{"mouse wheel", "scroll"},
		kv{"/", "commands: type / to list them; /help explains each"},
	)
	keyW := 0
	for _, r := range rows {
		keyW = max(keyW, ansi.StringWidth(r.keys))
	}
	keyW = min(keyW, max(4, w/4))
	out := []string{" " + st.r(st.title, "Keys") + st.r(st.dim, "  (sampler keys act on the next token)")}
	textW := max(8, w-keyW-3)
	for _, r := range rows {
		keys := r.keys
		if ansi.StringWidth(keys) > keyW { // a long key list gets its own row
			for _, l := range strings.Split(ansi.Wrap(keys, max(1, w-1), ""), "\n") {
				out = append(out, " "+st.r(st.key, l))
			}
			keys = ""
		}
		for i, l := range strings.Split(ansi.Wrap(r.what, textW, ""), "\n") {
			k := ""
			if i == 0 {
				k = keys
			}
			out = append(out, " "+st.r(st.key, padTo(k, ansi.StringWidth(k), keyW))+"  "+l)
		}
	}
	if len(m.order) > 0 {
		out = append(out, "")
		order := ansi.Wrap("Sampler order: "+strings.Join(m.order, " → ")+" (the panel lists those the knobs leave on)", max(1, w-2), "")
		for l := range strings.SplitSeq(order, "\n") {
			out = append(out, " "+st.r(st.dim, l))
		}
	}
	return out
}

package ui

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// helpLines renders the key help shown over the transcript (F1 always, ? when
// the input is empty; Esc, F1 or ? closes it).
func (m *model) helpLines(w, h int) []string {
	st := m.st
	type kv struct{ keys, what string }
	rows := []kv{
		{"Enter", "send"},
		{"Alt+Enter Ctrl+J", "new line"},
		{"↑ ↓", "earlier messages (on an empty input)"},
		{"Esc", "stop the reply · close help"},
		{"Ctrl+C", "quit"},
		{"PgUp PgDn", "scroll a page"},
		{"Ctrl+↑ Ctrl+↓", "scroll a line (or Alt+↑ Alt+↓)"},
		{"Ctrl+Home Ctrl+End", "top · bottom (follow)"},
		{"mouse wheel", "scroll"},
	}
	for i, what := range pairHelp {
		a, b := samplerKeys[2*i], samplerKeys[2*i+1]
		rows = append(rows, kv{
			keyName(a.fkey) + "/" + keyName(b.fkey) + " Alt+" + string(a.letter) + "/" + strings.ToUpper(string(b.letter)),
			what,
		})
	}
	last := samplerKeys[len(samplerKeys)-1]
	rows = append(rows,
		kv{keyName(last.fkey) + "   Alt+" + string(last.letter), last.help},
		kv{"F1  ?", "this help (? on an empty input)"},
	)
	keyW := 0
	for _, r := range rows {
		keyW = max(keyW, ansi.StringWidth(r.keys))
	}
	keyW = min(keyW, max(4, w/2))
	ls := []string{" " + st.r(st.title, "Keys") + st.r(st.dim, "  (sampler keys act on the next token)")}
	for _, r := range rows {
		ls = append(ls, " "+st.r(st.key, fit(r.keys, keyW))+"  "+r.what)
	}
	if len(m.order) > 0 {
		ls = append(ls, "")
		order := ansi.Wrap("Sampler order: "+strings.Join(m.order, " → "), max(1, w-2), "")
		for l := range strings.SplitSeq(order, "\n") {
			ls = append(ls, " "+st.r(st.dim, l))
		}
	}
	if len(ls) > h {
		ls = ls[:max(0, h)]
	}
	return ls
}

// pairHelp describes the down/up pairs at the start of samplerKeys.
var pairHelp = []string{"temperature −/+ 0.1", "top-p −/+ 0.05", "min-p down/up", "top-k down/up"}

// keyName turns a keystroke ("ctrl+home", "f10") into what the help prints.
func keyName(k string) string {
	parts := strings.Split(k, "+")
	for i, p := range parts {
		switch {
		case len(p) > 1 && p[0] == 'f' && p[1] >= '0' && p[1] <= '9':
			parts[i] = "F" + p[1:]
		case len(p) > 0:
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return strings.Join(parts, "+")
}

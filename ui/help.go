package ui

import (
	"strings"

	"github.com/charmbracelet/x/ansi"
)

// helpLines renders the key help shown over the transcript (F1 always, ? when
// the input is empty; Esc, F1 or ? closes it). It is made from the key map,
// so remapped keys show as they are.
func (m *model) helpLines(w, h int) []string {
	st := m.st
	type kv struct{ keys, what string }
	var rows []kv
	for _, a := range defaultKeyMap {
		keys := m.keys.keysOf(a.action)
		if sk := m.keys.samplerByAction(a.action); sk != nil && !m.keys.custom[a.action] {
			l := string(sk.letter)
			if sk.upper {
				l = strings.ToUpper(l)
			}
			keys += " Alt+" + l
		}
		rows = append(rows, kv{keys, a.help})
	}
	rows = append(rows,
		kv{"↑ ↓", "earlier messages (on an empty input)"},
		kv{"mouse wheel", "scroll"},
		kv{"/", "commands: type / to list them (/help, /set, /save, /load, /copy, /markdown, /theme, /quit)"},
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
		order := ansi.Wrap("Sampler order: "+strings.Join(m.order, " → ")+" (the panel lists those the knobs leave on)", max(1, w-2), "")
		for l := range strings.SplitSeq(order, "\n") {
			ls = append(ls, " "+st.r(st.dim, l))
		}
	}
	m.helpOff = max(0, min(m.helpOff, len(ls)-h))
	ls = ls[m.helpOff:]
	if len(ls) > h {
		ls = ls[:max(0, h)]
	}
	return ls
}

func (km keyMap) samplerByAction(action string) *samplerKey {
	for i := range samplerKeys {
		if samplerKeys[i].action == action {
			return &samplerKeys[i]
		}
	}
	return nil
}

var names = map[string]string{"pgup": "PgUp", "pgdown": "PgDn", "esc": "Esc", "up": "↑", "down": "↓", "left": "←", "right": "→"}

// keyName turns a keystroke ("ctrl+home", "f10") into what the help prints.
func keyName(k string) string {
	parts := strings.Split(k, "+")
	for i, p := range parts {
		switch {
		case names[p] != "":
			parts[i] = names[p]
		case len(p) > 1 && p[0] == 'f' && p[1] >= '0' && p[1] <= '9':
			parts[i] = "F" + p[1:]
		case len(p) > 0:
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return strings.Join(parts, "+")
}

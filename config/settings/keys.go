package settings

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"chat/models/quote"
)

// The key map: TUI actions and the keys that trigger them, as
// tea.KeyPressMsg.Keystroke() spells them ("f3", "ctrl+j", "alt+enter").
// The actions are the UI's own (below) and the hot keys of the settings
// (table.go); the [keys] table of the config file replaces an action's keys.

// Action is one thing a key does.
type Action struct {
	Name string
	Keys []string
	Help string
}

// uiActions are the UI's own actions; the settings' hot keys follow them.
var uiActions = []Action{
	{"send", []string{"enter"}, "send (or run a /command)"},
	{"newline", []string{"alt+enter", "ctrl+j", "shift+enter"}, "new line"},
	{"stop", []string{"esc"}, "stop the reply · close a popup or pane · cancel an edit"},
	{"quit", []string{"ctrl+c"}, "stop the reply, else clear the input, else quit"},
	{"eof", []string{"ctrl+d"}, "quit (on an empty input)"},
	{"suspend", []string{"ctrl+z"}, "suspend to the shell (fg resumes)"},
	{"help", []string{"f1"}, "this help (also ? on an empty input)"},
	{"palette", []string{"ctrl+p"}, "command palette: every action and setting"},
	{"panel", []string{"ctrl+o"}, "show the side panel over the transcript (narrow terminals)"},
	{"complete", []string{"tab"}, "complete a /command (again: next match)"},
	{"regenerate", []string{"ctrl+r"}, "generate the last reply again (a new seed unless it is pinned)"},
	{"edit_last", []string{"ctrl+e"}, "edit your last message and resend it (empty input; again: the one before)"},
	{"copy_reply", []string{"ctrl+y"}, "copy the last reply (OSC 52, works over SSH)"},
	{"copy_code", []string{"alt+y"}, "copy the last code block"},
	{"toggle_markdown", []string{"f12"}, "markdown in replies on/off"},
	{"page_up", []string{"pgup"}, "scroll a page up"},
	{"page_down", []string{"pgdown"}, "scroll a page down"},
	{"line_up", []string{"ctrl+up", "alt+up"}, "scroll a line up"},
	{"line_down", []string{"ctrl+down", "alt+down"}, "scroll a line down"},
	{"top", []string{"ctrl+home"}, "top"},
	{"bottom", []string{"ctrl+end"}, "bottom (follow new text)"},
}

// Actions are every key action with its default keys and help, the UI's
// first, then the settings' hot keys in table order.
func Actions() []Action {
	out := slices.Clone(uiActions)
	for _, s := range table {
		for _, k := range s.Keys {
			out = append(out, Action{k.Action, k.Keys, k.Help})
		}
	}
	return out
}

// KeyActions are the action names the [keys] table accepts.
func KeyActions() []string {
	acts := Actions()
	out := make([]string, len(acts))
	for i, a := range acts {
		out[i] = a.Name
	}
	return out
}

// DefaultKeys is the built-in key map (a fresh copy).
func DefaultKeys() map[string][]string {
	m := map[string][]string{}
	for _, a := range Actions() {
		m[a.Name] = slices.Clone(a.Keys)
	}
	return m
}

// named keys as Bubble Tea v2 spells them, with the spellings people also
// write mapped to them.
var namedKeys = map[string]string{
	"enter": "enter", "return": "enter", "tab": "tab", "backspace": "backspace",
	"esc": "esc", "escape": "esc", "space": "space", "up": "up", "down": "down",
	"left": "left", "right": "right", "insert": "insert", "ins": "insert",
	"delete": "delete", "del": "delete", "pgup": "pgup", "pageup": "pgup",
	"pgdown": "pgdown", "pagedown": "pgdown", "home": "home", "end": "end",
	"begin": "begin", "find": "find", "select": "select",
}

// modifiers in the order Keystroke() writes them.
var modifiers = []string{"ctrl", "alt", "shift", "meta", "hyper", "super"}

// NormalizeKey checks a key name and spells it as Keystroke() does:
// modifiers first in a fixed order, lower case ("Ctrl+Shift+Up" →
// "ctrl+shift+up", "Escape" → "esc").
func NormalizeKey(name string) (string, error) {
	orig := name
	name = strings.TrimSpace(name)
	if name == "" {
		return "", fmt.Errorf("empty key name")
	}
	// The last part is the key; "ctrl++" binds ctrl and the plus key.
	base, mods := name, ""
	if i := strings.LastIndex(name[:len(name)-1], "+"); i >= 0 {
		mods, base = name[:i], name[i+1:]
	}
	var have []string
	if mods != "" {
		for m := range strings.SplitSeq(strings.ToLower(mods), "+") {
			switch {
			case m == "control":
				m = "ctrl"
			case m == "option":
				m = "alt"
			}
			if !slices.Contains(modifiers, m) {
				return "", fmt.Errorf("key %s: unknown modifier %s (want %s)", quote.Quote(orig), quote.Quote(m), strings.Join(modifiers, ", "))
			}
			if slices.Contains(have, m) {
				return "", fmt.Errorf("key %s: %s given twice", quote.Quote(orig), m)
			}
			have = append(have, m)
		}
	}
	sort.Slice(have, func(i, j int) bool { return slices.Index(modifiers, have[i]) < slices.Index(modifiers, have[j]) })
	lb := strings.ToLower(base)
	switch {
	case namedKeys[lb] != "":
		base = namedKeys[lb]
	case len(lb) >= 2 && lb[0] == 'f' && isFKey(lb[1:]):
		base = lb
	case utf8.RuneCountInString(base) == 1:
		r, _ := utf8.DecodeRuneInString(base)
		if !unicode.IsPrint(r) || r == ' ' {
			return "", fmt.Errorf("key %s: write a space as \"space\"; other invisible characters are not keys", quote.Quote(orig))
		}
		if len(have) > 0 {
			base = string(unicode.ToLower(r)) // with modifiers the key, not the text, is named
		}
	default:
		return "", fmt.Errorf("key %s: unknown key %s (want a character, f1-f63, or one of enter, tab, backspace, esc, space, up, down, left, right, insert, delete, pgup, pgdown, home, end)", quote.Quote(orig), quote.Quote(base))
	}
	return strings.Join(append(have, base), "+"), nil
}

func isFKey(n string) bool {
	i, err := strconv.Atoi(n)
	return err == nil && i >= 1 && i <= 63 && strconv.Itoa(i) == n
}

// MergeKeys applies user bindings (action → keys) over the defaults. A key
// the user binds is taken away from the action it had by default, so
// "temperature_up = f2" needs no second line to free f2; two user actions
// sharing a key is an error (where says which file, for the message).
func MergeKeys(user map[string][]string, where func(action string) string) (map[string][]string, error) {
	keys := DefaultKeys()
	owner := map[string]string{} // key → user action
	actions := make([]string, 0, len(user))
	for a := range user {
		actions = append(actions, a)
	}
	sort.Strings(actions)
	for _, a := range actions {
		if _, ok := keys[a]; !ok {
			return nil, fmt.Errorf("%s: unknown action %s in [keys] (actions: %s)", where(a), quote.Quote(a), strings.Join(KeyActions(), ", "))
		}
		var norm []string
		for _, k := range user[a] {
			n, err := NormalizeKey(k)
			if err != nil {
				return nil, fmt.Errorf("%s: %v", where(a), err)
			}
			if o, ok := owner[n]; ok && o != a {
				return nil, fmt.Errorf("%s: key %s is bound to both %s and %s", where(a), quote.Quote(n), o, a)
			}
			owner[n] = a
			if !slices.Contains(norm, n) {
				norm = append(norm, n)
			}
		}
		keys[a] = norm
	}
	for a, ks := range keys {
		if _, ok := user[a]; ok {
			continue
		}
		keys[a] = slices.DeleteFunc(ks, func(k string) bool { _, taken := owner[k]; return taken })
	}
	return keys, nil
}

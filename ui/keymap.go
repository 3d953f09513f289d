package ui

import (
	"fmt"
	"slices"
	"sort"
	"strings"
)

// Actions and the keys that trigger them. Keys are spelled as
// tea.KeyPressMsg.Keystroke() spells them ("f3", "ctrl+j", "alt+enter").
// Options.Keys (the config file's [keys] table) replaces an action's keys;
// a key given to one action is taken from the action that had it by default.
// The action names are the config package's plus the ones this UI added
// (palette ... toggle_markdown).
type keyAction struct {
	action string
	keys   []string
	help   string
}

var defaultKeyMap = []keyAction{
	{"send", []string{"enter"}, "send (or run a /command)"},
	{"newline", []string{"alt+enter", "ctrl+j", "shift+enter"}, "new line"},
	{"stop", []string{"esc"}, "stop the reply · close a popup · cancel an edit"},
	{"quit", []string{"ctrl+c"}, "quit"},
	{"help", []string{"f1"}, "this help (also ? on an empty input)"},
	{"palette", []string{"ctrl+p"}, "command palette: every action and sampler knob"},
	{"complete", []string{"tab"}, "complete a /command (again: next match)"},
	{"regenerate", []string{"ctrl+r"}, "generate the last reply again"},
	{"edit_last", []string{"ctrl+e"}, "edit your last message and resend it (empty input; again: the one before)"},
	{"copy_reply", []string{"ctrl+y"}, "copy the last reply (OSC 52, works over SSH)"},
	{"copy_code", []string{"alt+y"}, "copy the last code block"},
	{"toggle_markdown", []string{"f12"}, "markdown in replies on/off"},
	{"toggle_int8", []string{"f11", "alt+i"}, "weights float32 ↔ int8 (the chat stays; the next turn re-prefills)"},
	{"cycle_spec", []string{"alt+s"}, "speculative decoding: off → n-gram → prompt lookup → draft model → off"},
	{"page_up", []string{"pgup"}, "scroll a page up"},
	{"page_down", []string{"pgdown"}, "scroll a page down"},
	{"line_up", []string{"ctrl+up", "alt+up"}, "scroll a line up"},
	{"line_down", []string{"ctrl+down", "alt+down"}, "scroll a line down"},
	{"top", []string{"ctrl+home"}, "top"},
	{"bottom", []string{"ctrl+end"}, "bottom (follow new text)"},
	{"temperature_down", []string{"f2", "alt+2"}, "temperature −0.1"},
	{"temperature_up", []string{"f3", "alt+3"}, "temperature +0.1"},
	{"top_p_down", []string{"f4", "alt+4"}, "top-p −0.05"},
	{"top_p_up", []string{"f5", "alt+5"}, "top-p +0.05"},
	{"min_p_down", []string{"f6", "alt+6"}, "min-p down"},
	{"min_p_up", []string{"f7", "alt+7"}, "min-p up"},
	{"top_k_down", []string{"f8", "alt+8"}, "top-k down"},
	{"top_k_up", []string{"f9", "alt+9"}, "top-k up"},
	{"greedy", []string{"f10", "alt+0"}, "greedy on/off"},
}

// KeyActions lists the action names Options.Keys accepts.
func KeyActions() []string {
	out := make([]string, len(defaultKeyMap))
	for i, a := range defaultKeyMap {
		out[i] = a.action
	}
	return out
}

type keyMap struct {
	byKey    map[string]string   // keystroke → action
	byAction map[string][]string // action → keystrokes
	custom   map[string]bool     // actions whose keys Options.Keys set
}

// newKeyMap merges user bindings over the defaults. Unknown actions are
// reported (and ignored), so a config written for a newer UI still runs.
func newKeyMap(user map[string][]string) (keyMap, error) {
	km := keyMap{byKey: map[string]string{}, byAction: map[string][]string{}, custom: map[string]bool{}}
	taken := map[string]string{} // key → the action the user gave it to
	var unknown []string
	for a, ks := range user {
		i := slices.IndexFunc(defaultKeyMap, func(d keyAction) bool { return d.action == a })
		if i < 0 {
			unknown = append(unknown, a)
			continue
		}
		if slices.Equal(ks, defaultKeyMap[i].keys) {
			continue // a full map (config's) repeats the defaults
		}
		km.custom[a] = true
		for _, k := range ks {
			taken[strings.ToLower(k)] = a
		}
	}
	for _, d := range defaultKeyMap {
		ks := d.keys
		if km.custom[d.action] {
			ks = user[d.action]
		}
		for _, k := range ks {
			k = strings.ToLower(k)
			if owner, ok := taken[k]; ok && owner != d.action {
				continue // given to another action
			}
			if _, dup := km.byKey[k]; dup {
				continue
			}
			km.byKey[k] = d.action
			km.byAction[d.action] = append(km.byAction[d.action], k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return km, fmt.Errorf("keys: unknown action %s (actions: %s)", strings.Join(unknown, ", "), strings.Join(KeyActions(), ", "))
	}
	return km, nil
}

func (km keyMap) action(keystroke string) string { return km.byKey[keystroke] }

// keysOf is what the help shows for an action: "F2 / Alt+2".
func (km keyMap) keysOf(action string) string {
	ks := km.byAction[action]
	if len(ks) == 0 {
		return "—"
	}
	names := make([]string, len(ks))
	for i, k := range ks {
		names[i] = keyName(k)
	}
	return strings.Join(names, " ")
}

// first is the action's first key for hints ("Ctrl+P"), "" when unbound.
func (km keyMap) first(action string) string {
	if ks := km.byAction[action]; len(ks) > 0 {
		return keyName(ks[0])
	}
	return ""
}

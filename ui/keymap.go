package ui

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"chat/config/settings"

	tea "charm.land/bubbletea/v2"
)

// Actions and the keys that trigger them come from config/settings: the
// UI's own actions and the settings' hot keys, with their default keys and
// help. Keys are spelled as tea.KeyPressMsg.Keystroke() spells them ("f3",
// "ctrl+j", "alt+enter"). Options.Keys (the config file's [keys] table)
// replaces an action's keys; a key given to one action is taken from the
// action that had it by default.

type keyMap struct {
	byKey    map[string]string   // keystroke → action
	byAction map[string][]string // action → keystrokes
	custom   map[string]bool     // actions whose keys Options.Keys set
}

// newKeyMap merges user bindings over the defaults. Unknown actions are
// reported (and ignored), so a config written for a newer UI still runs.
func newKeyMap(user map[string][]string) (keyMap, error) {
	km := keyMap{byKey: map[string]string{}, byAction: map[string][]string{}, custom: map[string]bool{}}
	acts := settings.Actions()
	taken := map[string]string{} // key → the action the user gave it to
	var unknown []string
	for a, ks := range user {
		i := slices.IndexFunc(acts, func(d settings.Action) bool { return d.Name == a })
		if i < 0 {
			unknown = append(unknown, a)
			continue
		}
		if slices.Equal(ks, acts[i].Keys) {
			continue // a full map (config's) repeats the defaults
		}
		km.custom[a] = true
		for _, k := range ks {
			taken[strings.ToLower(k)] = a
		}
	}
	for _, d := range acts {
		ks := d.Keys
		if km.custom[d.Name] {
			ks = user[d.Name]
		}
		for _, k := range ks {
			k = strings.ToLower(k)
			if owner, ok := taken[k]; ok && owner != d.Name {
				continue // given to another action
			}
			if _, dup := km.byKey[k]; dup {
				continue
			}
			km.byKey[k] = d.Name
			km.byAction[d.Name] = append(km.byAction[d.Name], k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return km, fmt.Errorf("keys: unknown action %s (actions: %s)", strings.Join(unknown, ", "), strings.Join(settings.KeyActions(), ", "))
	}
	return km, nil
}

// action is the action of a key press: by the key map, or by the
// Alt+letter of a setting's hot key whose keys were not remapped.
func (km keyMap) action(k tea.KeyPressMsg) string {
	if a := km.byKey[k.Keystroke()]; a != "" {
		return a
	}
	letter, upper, ok := altLetter(k)
	if !ok {
		return ""
	}
	for _, s := range settings.All() {
		for _, hk := range s.Keys {
			if hk.Letter == letter && hk.Upper == upper && !km.custom[hk.Action] {
				return hk.Action
			}
		}
	}
	return ""
}

// altLetter reads Alt+letter and Alt+Shift+letter however the terminal
// encodes them: "ESC T" arrives as alt+shift+t, the kitty protocol may say
// alt+T or alt+shift+T.
func altLetter(k tea.KeyPressMsg) (letter rune, upper, ok bool) {
	if !k.Mod.Contains(tea.ModAlt) || k.Mod.Contains(tea.ModCtrl) {
		return 0, false, false
	}
	c := k.Code
	if c >= 'A' && c <= 'Z' {
		return c + ('a' - 'A'), true, true
	}
	if c < 'a' || c > 'z' {
		return 0, false, false
	}
	return c, k.Mod.Contains(tea.ModShift) || (k.ShiftedCode >= 'A' && k.ShiftedCode <= 'Z'), true
}

// keysOf is what the help shows for an action: "F2 Alt+2 Alt+t".
func (km keyMap) keysOf(action string) string {
	names := make([]string, 0, 3)
	for _, k := range km.byAction[action] {
		names = append(names, keyName(k))
	}
	if _, hk := settings.KeyOf(action); hk != nil && hk.Letter != 0 && !km.custom[action] {
		l := string(hk.Letter)
		if hk.Upper {
			l = strings.ToUpper(l)
		}
		names = append(names, "Alt+"+l)
	}
	if len(names) == 0 {
		return "—"
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

// pair names the keys of a down/up pair of actions: "F2/3", "Alt+2/Alt+3".
func (km keyMap) pair(down, up string) string {
	a, b := km.first(down), km.first(up)
	if up == "" {
		return a
	}
	if a == "" || b == "" {
		return a + b
	}
	if strings.HasPrefix(a, "F") && strings.HasPrefix(b, "F") {
		return a + "/" + strings.TrimPrefix(b, "F")
	}
	return a + "/" + b
}

var keyNames = map[string]string{"pgup": "PgUp", "pgdown": "PgDn", "esc": "Esc", "up": "↑", "down": "↓", "left": "←", "right": "→"}

// keyName turns a keystroke ("ctrl+home", "f10") into what the help prints.
func keyName(k string) string {
	parts := strings.Split(k, "+")
	for i, p := range parts {
		switch {
		case keyNames[p] != "":
			parts[i] = keyNames[p]
		case len(p) > 1 && p[0] == 'f' && p[1] >= '0' && p[1] <= '9':
			parts[i] = "F" + p[1:]
		case len(p) == 1 && i > 0 && strings.HasPrefix(k, "alt+"):
			// Alt+letter keeps its case: the help says Alt+T for Alt+Shift+t.
		case len(p) > 0:
			parts[i] = strings.ToUpper(p[:1]) + p[1:]
		}
	}
	return strings.Join(parts, "+")
}

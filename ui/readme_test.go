package ui

import (
	"os"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"chat/config/settings"
)

// readmeCommandText is README.md's paragraph on the commands typed in the
// input.
func readmeCommandText(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, s, ok := strings.Cut(string(b), "Commands typed in the input")
	s, _, ok2 := strings.Cut(s, "`//text`")
	if !ok || !ok2 {
		t.Fatal("README.md lost its paragraph on commands")
	}
	return s
}

// Every command of the UI's own is in README's list.
func TestReadmeUICommands(t *testing.T) {
	text := readmeCommandText(t)
	for _, c := range uiCommands {
		if !strings.Contains(text, "`"+c.name) {
			t.Errorf("README's command list lacks %s", c.name)
		}
	}
}

// The README's key table is the key map's: each action's row names it and
// every key the help shows for it, and each action a row names exists.
func TestReadmeKeyTable(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, table, ok := strings.Cut(string(b), "\n### Keys (TUI)\n")
	if !ok {
		t.Fatal("README.md has no ### Keys (TUI) section")
	}
	_, table, _ = strings.Cut(table, "\n\n| ") // after the text before the table
	table, _, _ = strings.Cut(table, "\n\n")   // the table itself
	rows := map[string]string{}                // action → its row
	name := regexp.MustCompile("`([a-z0-9_]+)`")
	for _, row := range strings.Split(table, "\n") {
		// The action names are in the row's last parentheses: "(`top`, `bottom`)".
		i := strings.LastIndex(row, "(`")
		if i < 0 {
			continue
		}
		for _, m := range name.FindAllStringSubmatch(row[i:], -1) {
			rows[m[1]] = row
		}
	}
	km, err := newKeyMap(nil)
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, a := range settings.Actions() {
		known[a.Name] = true
		row, ok := rows[a.Name]
		if !ok {
			t.Errorf("README's key table has no row naming `%s`", a.Name)
			continue
		}
		for _, k := range strings.Fields(km.keysOf(a.Name)) {
			if !hasKey(row, k) {
				t.Errorf("README's row of %s lacks %s: %s", a.Name, k, row)
			}
		}
	}
	for a := range rows {
		if !known[a] {
			t.Errorf("README's key table names `%s`, which is no action", a)
		}
	}
}

// hasKey: key appears in row as a whole key name (F1 is not F10's start).
func hasKey(row, key string) bool {
	for i := 0; ; {
		j := strings.Index(row[i:], key)
		if j < 0 {
			return false
		}
		end := i + j + len(key)
		if end == len(row) || !unicode.IsLetter(rune(row[end])) && !unicode.IsDigit(rune(row[end])) {
			return true
		}
		i = end
	}
}

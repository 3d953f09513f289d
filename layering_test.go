package main

import (
	"os/exec"
	"strings"
	"testing"
)

// TestLayering keeps data flowing one way, ui → session → engine → models:
// no package imports one above it, and only the UI imports the TUI
// framework (bubbletea, bubbles, lipgloss, glamour).
func TestLayering(t *testing.T) {
	out, err := exec.Command("go", "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, "./...").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	// above[p] are the layers package p's layer must not import.
	tui := "charm.land/"
	above := map[string][]string{
		"chat/models":  {"chat/engine", "chat/session", "chat/ui", "chat/config", tui},
		"chat/engine":  {"chat/session", "chat/ui", tui},
		"chat/session": {"chat/ui", tui},
	}
	checked := 0
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		for layer, banned := range above {
			if f[0] != layer && !strings.HasPrefix(f[0], layer+"/") {
				continue
			}
			checked++
			for _, imp := range f[1:] {
				for _, b := range banned {
					if imp == b || strings.HasPrefix(imp, b) && (strings.HasSuffix(b, "/") || strings.HasPrefix(imp, b+"/")) {
						t.Errorf("%s imports %s: data flows ui → session → engine → models", f[0], imp)
					}
				}
			}
		}
	}
	if checked < 10 {
		t.Fatalf("only %d packages checked: go list output changed?", checked)
	}
}

package session

import (
	"os"
	"strings"
	"testing"
)

// Every command of the session is in README's list of the commands typed
// in the input.
func TestReadmeSessionCommands(t *testing.T) {
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, text, ok := strings.Cut(string(b), "Commands typed in the input")
	text, _, ok2 := strings.Cut(text, "`//text`")
	if !ok || !ok2 {
		t.Fatal("README.md lost its paragraph on commands")
	}
	for _, c := range commands {
		if !strings.Contains(text, "`"+c.name) {
			t.Errorf("README's command list lacks %s", c.name)
		}
	}
}

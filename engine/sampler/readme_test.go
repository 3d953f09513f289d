package sampler

import (
	"os"
	"strings"
	"testing"
)

// README.md's sampler order names the stages in Order's order.
func TestReadmeOrder(t *testing.T) {
	b, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, text, ok := strings.Cut(string(b), "\n### Sampler order\n")
	text, _, ok2 := strings.Cut(text, "The TUI panel and")
	if !ok || !ok2 {
		t.Fatal("README.md lost its sampler order")
	}
	spelt := map[string]string{"dry": "DRY", "top-n-sigma": "top-nσ", "xtc": "XTC", "draw": "uniform draw"}
	for _, name := range Order() {
		s := name
		if r, ok := spelt[name]; ok {
			s = r
		}
		i := strings.Index(text, s)
		if i < 0 {
			t.Fatalf("README's sampler order lacks %s, or names it before the stage it follows", s)
		}
		text = text[i+len(s):]
	}
}

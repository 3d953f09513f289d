package ui

import (
	"os"
	"strings"
	"testing"
)

// TestDemo runs the real UI against the fake backend in this terminal, for
// trying the keys by hand:
//
//	go test -c -o /tmp/ui.test ./ui && CHAT_UI_DEMO=1 /tmp/ui.test -test.run Demo
//
// CHAT_UI_DEMO=raw shows raw (continuation) mode.
func TestDemo(t *testing.T) {
	if os.Getenv("CHAT_UI_DEMO") == "" {
		t.Skip("set CHAT_UI_DEMO=1 and run the test binary in a terminal")
	}
	f := newFullFake().withHistory(30)
	f.history = []string{"an old prompt from a saved session"}
	if os.Getenv("CHAT_UI_DEMO") == "raw" {
		f.info.Mode = "raw"
	}
	f.reply = strings.SplitAfter(strings.Repeat("The little robot counted the stars, one by one, "+
		"日本語 and 🍵 included, until the sky ran out of them.\n", 6)+"\n"+markdownReply, " ")
	if err := Run(f, Options{Theme: os.Getenv("CHAT_UI_THEME")}); err != nil {
		t.Fatal(err)
	}
}

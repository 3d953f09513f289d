package ui

import (
	"strings"
	"testing"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"
)

// The input moves and deletes by grapheme cluster: an emoji with a skin
// tone, a flag and e + a combining accent each take one Left, Right,
// Backspace or Delete (they took two, and the cursor stopped inside them).
func TestInputMovesByGraphemeCluster(t *testing.T) {
	const thumb, flag, eAcute = "👍🏽", "🇫🇷", "e\u0301"
	tm := startProgram(t, newFake(), 80, 24, Options{Plain: true})
	tm.Send(tea.PasteMsg{Content: "a" + thumb + "b" + flag + eAcute})
	// a 👍🏽 b 🇫🇷 é| → a 👍🏽 b| é → a| b é → a b| é → a b|
	for _, k := range []rune{tea.KeyLeft, tea.KeyBackspace, tea.KeyLeft, tea.KeyBackspace, tea.KeyRight, tea.KeyDelete} {
		tm.Send(press(k))
	}
	m := quitModel(t, tm)
	if got, want := m.in.value(), "ab"; got != want {
		t.Errorf("value %q, want %q", got, want)
	}
	// The cursor is after "ab": 2 cells of prompt and 2 of text.
	if c := m.View().Cursor; c == nil || c.X != 4 {
		t.Errorf("cursor %+v, want X 4", c)
	}
}

// On a 20-column terminal the same text wraps over several rows; one key
// per cluster walks it to the start and back, and deletes it all.
func TestInputClustersOnANarrowTerminal(t *testing.T) {
	clusters := strings.Split(strings.Repeat("👍🏽,🇫🇷,e\u0301, ,", 6), ",")
	clusters = clusters[:len(clusters)-1]
	s := strings.Join(clusters, "")
	tm := startProgram(t, newFake(), 20, 24, Options{Plain: true})
	tm.Send(tea.PasteMsg{Content: s})
	keys := func(k rune, n int) {
		for range n {
			tm.Send(press(k))
		}
	}
	keys(tea.KeyLeft, len(clusters))
	tm.Send(text("<"))
	keys(tea.KeyRight, len(clusters))
	tm.Send(text(">"))
	m := quitModel(t, tm)
	if got, want := m.in.value(), "<"+s+">"; got != want {
		t.Fatalf("value %q, want %q", got, want)
	}
	v := m.View()
	lines := strings.Split(v.Content, "\n")
	if len(lines) != 24 {
		t.Fatalf("%d rows:\n%s", len(lines), v.Content)
	}
	for i, l := range lines {
		if w := ansi.StringWidth(l); w != 20 {
			t.Fatalf("row %d is %d wide: %q", i, w, l)
		}
	}
	if row := lines[v.Cursor.Y]; ansi.StringWidth(strings.TrimRight(row, " ")) != v.Cursor.X || !strings.HasSuffix(strings.TrimRight(row, " "), ">") {
		t.Errorf("cursor at %d on %q, want just after the >", v.Cursor.X, row)
	}

	tm = startProgram(t, newFake(), 20, 24, Options{Plain: true})
	tm.Send(tea.PasteMsg{Content: s})
	keys(tea.KeyBackspace, len(clusters)-2)
	keys(tea.KeyLeft, 2)
	keys(tea.KeyDelete, 2)
	if got := quitModel(t, tm).in.value(); got != "" {
		t.Errorf("one Backspace or Delete per cluster left %q", got)
	}
}

func quitModel(t *testing.T, tm *teatest.TestModel) Model {
	t.Helper()
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	return tm.FinalModel(t, teatest.WithFinalTimeout(waitLimit)).(Model)
}

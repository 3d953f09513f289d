package ui

import (
	"testing"

	tea "charm.land/bubbletea/v2"
)

// A keystroke on a long chat must cost about the same as on a short one:
// finished messages are cached and only the visible lines are assembled.
// Run: go test ./ui/ -run '^$' -bench . -benchmem
func BenchmarkKeystroke1000Messages(b *testing.B) { benchKeystroke(b, 500) }

// The same keystroke on an empty chat, for comparison.
func BenchmarkKeystrokeEmpty(b *testing.B) { benchKeystroke(b, 0) }

func benchKeystroke(b *testing.B, turns int) {
	f := newFake().withHistory(turns) // two messages a turn
	m := New(f, Options{Width: 120, Height: 40})
	m.View()
	k := tea.KeyPressMsg{Code: 'a', Text: "a"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if i%64 == 0 {
			m.input.Reset() // keep the input at chat-message length
		}
		m.Update(k)
		_ = m.View()
	}
}

// One 30 Hz poll that brings a few tokens of a long reply, on a long chat.
func BenchmarkStreamPoll1000Messages(b *testing.B) {
	f := newFake().withHistory(500)
	f.reply = []string{" the quick brown fox jumps over the lazy dog,"}
	m := New(f, Options{Width: 120, Height: 40})
	sendText(m, "go")
	m.View()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if i%12 == 11 {
			m.tr.appendStream("\n") // a new paragraph now and then, as real replies have
		}
		f.pos = 0
		m.Update(pollMsg{gen: m.pollGen})
		_ = m.View()
	}
}

// A resize re-wraps only what is on screen, not the whole history.
func BenchmarkResize1000Messages(b *testing.B) {
	f := newFake().withHistory(500)
	m := New(f, Options{Width: 120, Height: 40})
	m.View()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		m.Update(tea.WindowSizeMsg{Width: 100 + i%40, Height: 40})
		_ = m.View()
	}
}

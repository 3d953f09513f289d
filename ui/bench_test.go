package ui

import (
	"fmt"
	"strings"
	"testing"

	"chat/session"

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
			m.in.setValue("") // keep the input at chat-message length
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

// BenchmarkKeystroke1000Turns: one keystroke (Update + View) on a 1,000-turn
// chat whose replies are markdown, as a user types through an afternoon.
// Finished messages are rendered once and only what is visible is
// assembled, so this costs the same as on an empty chat.
func BenchmarkKeystroke1000Turns(b *testing.B) {
	f := newFake()
	for i := range 1000 {
		f.msgs = append(f.msgs,
			session.Message{Role: session.User, Content: fmt.Sprintf("Question %d: how do I reverse a list in Go?", i)},
			session.Message{Role: session.Assistant, Content: fmt.Sprintf("Answer %d. Use **slices.Reverse**:\n\n```go\ns := []int{1, 2, 3}\nslices.Reverse(s)\n```\n\n- it works in place\n- it needs Go 1.21", i)})
	}
	m := New(f, Options{Width: 120, Height: 40})
	m.View()
	k := tea.KeyPressMsg{Code: 'a', Text: "a"}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if i%64 == 0 {
			m.in.setValue("")
		}
		m.Update(k)
		_ = m.View()
	}
	b.StopTimer()
	if m.tr.cached > maxCachedLines {
		b.Fatalf("%d lines cached", m.tr.cached)
	}
}

// Streaming a markdown reply: one poll with a few tokens, on a reply that
// is already long (60 finished blocks). Only the open block is rendered.
func BenchmarkStreamPollMarkdown(b *testing.B) { benchStreamMarkdown(b, true) }

// The same with markdown off (plain wrapped text), for comparison.
func BenchmarkStreamPollPlain(b *testing.B) { benchStreamMarkdown(b, false) }

func benchStreamMarkdown(b *testing.B, md bool) {
	f := newFake().withHistory(500)
	f.reply = []string{strings.Repeat("A paragraph with **bold** and `code`, going on. ", 3) + "\n\n"}
	m := New(f, Options{Width: 120, Height: 40, NoMarkdown: !md})
	sendText(m, "go")
	for range 60 {
		f.pos = 0
		poll(m)
	}
	f.reply = []string{" the quick brown *fox* jumps over the lazy dog,"}
	m.View()
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		if i%12 == 11 {
			m.tr.appendStream("\n\n") // a new paragraph now and then
		}
		f.pos = 0
		m.Update(pollMsg{gen: m.pollGen})
		_ = m.View()
	}
}

// Rendering a whole long markdown reply once (what a finished message costs
// per width, and what re-rendering every poll would cost).
func BenchmarkMarkdownWholeReply(b *testing.B) {
	st := newStyles(false, false)
	r := newMDRenderer(st)
	text := strings.Repeat("A paragraph with **bold** and `code`, going on and on for a while.\n\n- a list item\n- another\n\n```go\nfmt.Println(1)\n```\n\n", 20)
	b.ReportAllocs()
	for b.Loop() {
		r.render(nil, text, 100)
	}
}

// Ctrl+Home on a 1,000-turn markdown chat: every message must be measured
// once at the current width (then only the visible ones are kept).
func BenchmarkTop1000Turns(b *testing.B) {
	for b.Loop() {
		b.StopTimer()
		f := newFake()
		for i := range 1000 {
			f.msgs = append(f.msgs,
				session.Message{Role: session.User, Content: fmt.Sprintf("Question %d", i)},
				session.Message{Role: session.Assistant, Content: fmt.Sprintf("Answer %d. Use **slices.Reverse**:\n\n```go\nslices.Reverse(s)\n```\n\n- in place\n- Go 1.21", i)})
		}
		m := New(f, Options{Width: 120, Height: 40})
		m.View()
		b.StartTimer()
		m.Update(tea.KeyPressMsg{Code: tea.KeyHome, Mod: tea.ModCtrl})
		_ = m.View()
	}
}

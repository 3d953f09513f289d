package ui

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"chat/session"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/charmbracelet/x/exp/teatest/v2"
)

// The views' golden frames: each view at 80×24 and 20×5 (plain) and at
// 120×40 (in colour), on the fake backend's canned records. A fake clock
// steps 25 ms per reading, so the sparklines' rates are fixed too.

func fakeClock() func() time.Time {
	t := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	return func() time.Time {
		t = t.Add(25 * time.Millisecond)
		return t
	}
}

// startViews is startProgram with the views named on and the fake clock.
func startViews(t *testing.T, f *fakeBackend, w, h int, opts Options, views ...string) *teatest.TestModel {
	t.Helper()
	for _, v := range views {
		switch v {
		case "next":
			f.vals.ViewNext = true
		case "tokens":
			f.vals.ViewTokens = true
		case "kv":
			f.vals.ViewKV = true
		case "spark":
			f.vals.ViewSpark = true
		case "step":
			f.vals.Step = true
		}
	}
	opts.Width, opts.Height = w, h
	opts.BusyPoll = 5 * time.Millisecond
	opts.IdlePoll = time.Hour
	m := New(f, opts)
	m.views.now = fakeClock()
	return teatest.NewTestModel(t, m, teatest.WithInitialTermSize(w, h))
}

func replyDone(f *fakeBackend) func() bool {
	return func() bool { f.mu.Lock(); defer f.mu.Unlock(); return !f.busy && len(f.msgs) >= 4 }
}

type viewGolden struct {
	w, h  int
	color bool
}

var viewSizes = []viewGolden{{80, 24, false}, {120, 40, true}, {20, 5, false}}

func (g viewGolden) opts() Options {
	if g.color {
		return Options{Theme: "dark"}
	}
	return Options{Plain: true}
}

// runViewGolden sends a message with the views on and compares the frame
// taken when the reply is streamed (hold) or done.
func runViewGolden(t *testing.T, views []string, hold bool, after func(tm *teatest.TestModel, f *fakeBackend)) {
	for _, g := range viewSizes {
		t.Run(fmt.Sprintf("%dx%d", g.w, g.h), func(t *testing.T) {
			f := newFake().withHistory(1)
			f.hold = hold
			tm := startViews(t, f, g.w, g.h, g.opts(), views...)
			typeAndSend(tm, "Tell me a story about a robot.")
			if after != nil {
				after(tm, f)
			} else if hold {
				waitFor(t, tm, f.drained)
			} else {
				waitFor(t, tm, replyDone(f))
			}
			teatest.RequireEqualOutput(t, finalFrame(t, tm))
		})
	}
}

func TestGoldenViewNext(t *testing.T) { runViewGolden(t, []string{"next"}, true, nil) }

func TestGoldenViewTokens(t *testing.T) { runViewGolden(t, []string{"tokens"}, false, nil) }

func TestGoldenViewKV(t *testing.T) { runViewGolden(t, []string{"kv"}, true, nil) }

func TestGoldenViewSpark(t *testing.T) {
	runViewGolden(t, []string{"spark"}, false, func(tm *teatest.TestModel, f *fakeBackend) {
		waitFor(t, tm, replyDone(f))
		typeAndSend(tm, "And then?")
		waitFor(t, tm, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return !f.busy && len(f.msgs) >= 6 })
	})
}

// Step mode: the reply waits for the step key; two presses make two
// pieces; the view shows the next token before it is drawn.
func TestGoldenViewStep(t *testing.T) {
	runViewGolden(t, []string{"step", "next"}, true, func(tm *teatest.TestModel, f *fakeBackend) {
		for range 2 {
			waitFor(t, tm, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.busy && f.steps == 0 })
			tm.Send(tea.KeyPressMsg{Code: '.', Mod: tea.ModAlt})
			waitFor(t, tm, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.stepCalls > 0 && f.steps == 0 })
		}
		waitFor(t, tm, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return f.pos == 2 })
	})
}

// Everything at once still fits, and degrades on a small terminal.
func TestGoldenViewAll(t *testing.T) {
	runViewGolden(t, []string{"next", "tokens", "kv", "spark"}, true, nil)
}

// The keys and /view toggle the views; each key is the setting's.
func TestViewKeysAndCommand(t *testing.T) {
	f := newFake()
	m := newTest(f, 100, 30)
	m.Update(alt('n'))
	m.Update(alt('h'))
	m.Update(alt('v'))
	m.Update(alt('w'))
	if v := f.Settings(); !v.ViewNext || !v.ViewTokens || !v.ViewKV || !v.ViewSpark {
		t.Fatalf("keys did not turn the views on: %+v", v)
	}
	if !strings.Contains(m.View().Content, "views      next tokens kv") {
		t.Fatalf("the panel does not list the views:\n%s", m.View().Content)
	}
	sendText(m, "/view kv")
	if f.Settings().ViewKV {
		t.Fatal("/view kv did not toggle the KV map off")
	}
	sendText(m, "/view tokens off")
	sendText(m, "/view next on")
	if v := f.Settings(); v.ViewTokens || !v.ViewNext {
		t.Fatalf("/view NAME on|off: %+v", v)
	}
	sendText(m, "/view")
	if !strings.Contains(m.note.text, "next (Alt+n) on") || !strings.Contains(m.note.text, "kv (Alt+v) off") {
		t.Fatalf("/view lists %q", m.note.text)
	}
	sendText(m, "/view off")
	if v := f.Settings(); v.ViewNext || v.ViewSpark {
		t.Fatalf("/view off left %+v", v)
	}
	sendText(m, "/view nope")
	if m.note.kind != noteErr {
		t.Fatalf("/view nope: %q", m.note.text)
	}
}

// Step mode by key: the first press turns it on, the next ones step the
// reply, Esc leaves it (and a second Esc stops the reply).
func TestStepModeKeys(t *testing.T) {
	f := newFake()
	f.hold = true
	m := newTest(f, 100, 30)
	m.Update(alt('.'))
	if !f.Settings().Step {
		t.Fatal("the step key did not turn step mode on")
	}
	sendText(m, "go")
	poll(m)
	if f.pos != 0 || m.stateText() != "stepping" {
		t.Fatalf("step mode did not wait: pos %d, state %q", f.pos, m.stateText())
	}
	m.Update(alt('.'))
	poll(m)
	if f.stepCalls != 1 || f.pos != 1 {
		t.Fatalf("one step: %d calls, pos %d", f.stepCalls, f.pos)
	}
	if !strings.Contains(m.View().Content, "step mode · Alt+. next token · Esc leaves step mode") {
		t.Fatalf("no step hint:\n%s", m.View().Content)
	}
	m.Update(press(tea.KeyEscape))
	if f.Settings().Step || f.stopCalls != 0 {
		t.Fatalf("Esc: step %v, stops %d", f.Settings().Step, f.stopCalls)
	}
	m.Update(press(tea.KeyEscape))
	if f.stopCalls != 1 {
		t.Fatal("a second Esc does not stop the reply")
	}
}

// The next-token view prints the record's own after-chain numbers (the
// engine's, see engine.TestRecordIsTheSamplersOwn and the session test)
// and marks the drawn token; cut tokens and the stages follow.
func TestNextTokenShowsTheRecord(t *testing.T) {
	f := newFake()
	f.vals.ViewNext = true
	m := newTest(f, 100, 40)
	v := fakeStep(3, false)
	m.views.step = v
	out := strings.Join(m.nextLines(70, 20), "\n")
	for _, c := range v.After {
		if !strings.Contains(out, pct(c.After)) || !strings.Contains(out, pct(c.Before)) {
			t.Errorf("candidate %q: %s / %s not shown:\n%s", c.Text, pct(c.Before), pct(c.After), out)
		}
	}
	for _, want := range []string{`▸ " cat"`, "vocab 4096 → temperature 4096 → top-p 3", `"\n"`, `"\x1b[2J"`, "entropy 2.31 → 1.20 bits"} {
		if !strings.Contains(out, want) {
			t.Errorf("missing %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "\x1b") {
		t.Errorf("a token's escape reached the frame: %q", out)
	}
}

// The token view sanitises the model's bytes, joins a character split over
// tokens, and breaks lines at newline tokens.
// A speculative round in the next-token view: its guesses, accepted ✓ and
// rejected ✗.
func TestRoundText(t *testing.T) {
	v := &session.StepView{Round: true, Guesses: []string{" a", " b", "\n"}, Accepted: 2}
	if got, want := roundText(v), `round: 3 guessed, 2 accepted ✓ " a" " b" ✗ "\n"`; got != want {
		t.Errorf("roundText = %q, want %q", got, want)
	}
}

func TestTokenViewCells(t *testing.T) {
	st := newStyles(true, false)
	toks := []session.Token{{Text: "a\x1b[2J"}, {Text: "\xe6\x97"}, {Text: "\xa5"}, {Text: "\n"}, {Text: " b"}, {Text: "\x07"}}
	lines := st.renderTokens(session.Message{Role: session.Assistant, Tokens: toks}, 30)
	got := strings.TrimRight(strings.Join(lines, "|"), " ")
	want := "  a¦日¦↵                      |   b¦∅" // ESC [2J goes whole
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	for _, l := range lines {
		if ansi.StringWidth(l) != 30 || strings.ContainsRune(l, '\x1b') || strings.ContainsRune(l, '\a') {
			t.Fatalf("bad line %q", l)
		}
	}
}

// A keystroke with every view on, on a 1,000-turn transcript (compare
// BenchmarkKeystroke1000Turns): the dock is drawn from what the last poll
// brought.
func BenchmarkKeystroke1000TurnsViews(b *testing.B) {
	f := newFake()
	for i := range 1000 {
		f.msgs = append(f.msgs,
			session.Message{Role: session.User, Content: fmt.Sprintf("Question %d: how do I reverse a list in Go?", i),
				Tokens: fakeTokens(fmt.Sprintf("Question %d: how do I reverse a list in Go?", i), 0)},
			session.Message{Role: session.Assistant, Content: fmt.Sprintf("Answer %d. Use slices.Reverse, in place.", i),
				Tokens: fakeTokens(fmt.Sprintf("Answer %d. Use slices.Reverse, in place.", i), 0)})
	}
	f.vals.ViewNext, f.vals.ViewTokens, f.vals.ViewKV, f.vals.ViewSpark = true, true, true, true
	m := New(f, Options{Width: 120, Height: 40})
	m.views.step, m.views.blocks = fakeStep(5, false), fakeBlocks()
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
}

// Raw mode flows the prompt and the continuation as one text; in the token
// view a finished reply and its turn are drawn as tokens, a span cut by the
// wrap closed and opened again on the next line.
func TestGoldenViewTokensRaw(t *testing.T) {
	for _, g := range []viewGolden{{80, 24, true}, {20, 5, false}} {
		t.Run(fmt.Sprintf("%dx%d", g.w, g.h), func(t *testing.T) {
			f := newFake()
			f.info.Mode = "raw"
			tm := startViews(t, f, g.w, g.h, g.opts(), "tokens")
			typeAndSend(tm, "Once upon a time")
			waitFor(t, tm, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return !f.busy && len(f.msgs) >= 2 })
			teatest.RequireEqualOutput(t, finalFrame(t, tm))
		})
	}
}

package ui

import (
	"strings"
	"testing"
	"time"

	"chat/engine/sampler"
	"chat/models/testmodels"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/exp/teatest/v2"
)

// The golden tests run the real program headless with teatest and compare
// the final frame (View().Content, escape codes and all) with
// testdata/<TestName>.golden. `go test ./ui/ -update` rewrites them.
//
// The frame, not the terminal byte stream, is compared: the renderer's
// output depends on how frames happened to be batched, the frame does not.
// The fake backend's stats are fixed and nothing animates, so a frame
// depends only on the keys sent and the chunks polled.

// waitLimit bounds each wait for the program to reach a state (and for it
// to quit): a hang detector, not a speed check, so it is the tests' one
// hang bound, testmodels.HangAfter, which allows for the race detector. A
// fixed 10 s was not: under go test -race on a loaded 2-core host a golden
// run is 5 to 30 times slower (TestGoldenViewSpark's 20x5 case, the
// longest sequence, two replies and 39 keystrokes each drawn in full, took
// 4.8 s against 0.17 s alone), and its waits timed out.
const waitLimit = testmodels.HangAfter

func startProgram(t *testing.T, f *fakeBackend, w, h int, opts Options) *teatest.TestModel {
	t.Helper()
	opts.Width, opts.Height = w, h
	opts.BusyPoll = 5 * time.Millisecond
	opts.IdlePoll = time.Hour // an idle poll would bring stats in at a random moment
	return teatest.NewTestModel(t, New(f, opts), teatest.WithInitialTermSize(w, h))
}

func finalFrame(t *testing.T, tm *teatest.TestModel) []byte {
	t.Helper()
	if err := tm.Quit(); err != nil {
		t.Fatal(err)
	}
	fm := tm.FinalModel(t, teatest.WithFinalTimeout(waitLimit))
	return []byte(fm.(Model).View().Content)
}

// waitFor polls cond (not the output) so the snapshot is taken at a known
// state of the fake backend.
func waitFor(t *testing.T, tm *teatest.TestModel, cond func() bool) {
	t.Helper()
	teatest.WaitFor(t, tm.Output(), func([]byte) bool { return cond() },
		teatest.WithDuration(waitLimit), teatest.WithCheckInterval(5*time.Millisecond))
}

func typeAndSend(tm *teatest.TestModel, s string) {
	tm.Type(s)
	tm.Send(tea.KeyPressMsg{Code: tea.KeyEnter})
}

func TestGoldenEmpty80x24(t *testing.T) {
	tm := startProgram(t, newFake(), 80, 24, Options{Plain: true})
	teatest.RequireEqualOutput(t, finalFrame(t, tm))
}

func TestGoldenEmpty40x12(t *testing.T) {
	tm := startProgram(t, newFake(), 40, 12, Options{Plain: true})
	teatest.RequireEqualOutput(t, finalFrame(t, tm))
}

func TestGoldenStreaming80x24(t *testing.T) {
	f := newFake().withHistory(2)
	f.hold = true
	tm := startProgram(t, f, 80, 24, Options{Plain: true})
	typeAndSend(tm, "Tell me a story about a robot.")
	waitFor(t, tm, f.drained)
	teatest.RequireEqualOutput(t, finalFrame(t, tm))
}

// The wide layout with the side panel, in colour.
func TestGoldenStreaming100x30Color(t *testing.T) {
	f := newFake().withHistory(2)
	f.hold = true
	tm := startProgram(t, f, 100, 30, Options{})
	typeAndSend(tm, "Tell me a story about a robot.")
	waitFor(t, tm, f.drained)
	teatest.RequireEqualOutput(t, finalFrame(t, tm))
}

func TestGoldenHelp80x24(t *testing.T) {
	tm := startProgram(t, newFake(), 80, 24, Options{Plain: true})
	tm.Type("?")
	teatest.RequireEqualOutput(t, finalFrame(t, tm))
}

func TestGoldenHelp100x30(t *testing.T) {
	tm := startProgram(t, newFake(), 100, 30, Options{Plain: true})
	tm.Send(tea.KeyPressMsg{Code: tea.KeyF1})
	teatest.RequireEqualOutput(t, finalFrame(t, tm))
}

func TestGoldenNarrow20x5(t *testing.T) {
	f := newFake().withHistory(1)
	tm := startProgram(t, f, 20, 5, Options{Plain: true})
	typeAndSend(tm, "Hi")
	waitFor(t, tm, func() bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		return !f.busy && len(f.msgs) == 4
	})
	teatest.RequireEqualOutput(t, finalFrame(t, tm))
}

func TestGoldenPalette80x24(t *testing.T) {
	tm := startProgram(t, newFake().withHistory(2), 80, 24, Options{Plain: true})
	tm.Send(tea.KeyPressMsg{Code: 'p', Mod: tea.ModCtrl})
	tm.Type("set")
	teatest.RequireEqualOutput(t, finalFrame(t, tm))
}

func TestGoldenCompletion80x24(t *testing.T) {
	tm := startProgram(t, newFake().withHistory(2), 80, 24, Options{Plain: true})
	tm.Type("/s")
	teatest.RequireEqualOutput(t, finalFrame(t, tm))
}

const markdownReply = "## A plan\n\nFirst **bold**, then *italic* and `inline code`.\n\n" +
	"- one\n- two\n  - nested\n\n```go\nfunc main() {\n\tfmt.Println(\"hi, 日本語 🍵\")\n}\n```\n\n> a quote\n\n| name | value |\n|---|---|\n| 日本 | 🍵 |\n"

func markdownFake() *fakeBackend {
	f := newFake().withHistory(1)
	f.reply = strings.SplitAfter(markdownReply, " ")
	return f
}

func TestGoldenMarkdown100x30Color(t *testing.T) {
	f := markdownFake()
	tm := startProgram(t, f, 100, 40, Options{Theme: "dark"})
	typeAndSend(tm, "Plan something.")
	waitFor(t, tm, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return !f.busy && len(f.msgs) == 4 })
	teatest.RequireEqualOutput(t, finalFrame(t, tm))
}

func TestGoldenMarkdownPlain80x30(t *testing.T) {
	f := markdownFake()
	tm := startProgram(t, f, 80, 30, Options{Plain: true})
	typeAndSend(tm, "Plan something.")
	waitFor(t, tm, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return !f.busy && len(f.msgs) == 4 })
	teatest.RequireEqualOutput(t, finalFrame(t, tm))
}

func TestGoldenLightTheme100x30(t *testing.T) {
	f := markdownFake()
	tm := startProgram(t, f, 100, 30, Options{Theme: "light"})
	typeAndSend(tm, "Plan something.")
	waitFor(t, tm, func() bool { f.mu.Lock(); defer f.mu.Unlock(); return !f.busy && len(f.msgs) == 4 })
	teatest.RequireEqualOutput(t, finalFrame(t, tm))
}

// Below 90 columns the panel is not beside the transcript; Ctrl+O shows it
// over the transcript's right side, with every setting and counter.
func TestGoldenPanelOverlay80x24(t *testing.T) {
	f := newFake().withHistory(2)
	tm := startProgram(t, f, 80, 24, Options{Plain: true})
	tm.Send(tea.KeyPressMsg{Code: 'o', Mod: tea.ModCtrl})
	teatest.RequireEqualOutput(t, finalFrame(t, tm))
}

// Mirostat runs in place of top-nσ to XTC (as in llama.cpp): the panel
// shows their rows dimmed as "— (mirostat)", not values that do nothing,
// and the status line names mirostat instead of top-p, min-p and top-k.
func TestGoldenMirostatPanel80x24Color(t *testing.T) {
	f := newFake()
	f.params.Mirostat, f.params.MirostatTau, f.params.MirostatEta = 2, 5, 0.1
	f.params.XTCProbability, f.params.XTCThreshold = 0.5, 0.1
	f.order = sampler.Order()
	tm := startProgram(t, f, 80, 24, Options{Theme: "dark"})
	tm.Send(tea.KeyPressMsg{Code: 'o', Mod: tea.ModCtrl})
	teatest.RequireEqualOutput(t, finalFrame(t, tm))
}

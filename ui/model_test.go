package ui

import (
	"errors"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"chat/session"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// These tests drive the model directly: Update with key, poll and size
// messages, then look at the fake backend and the frame.

func press(code rune) tea.KeyPressMsg { return tea.KeyPressMsg{Code: code} }

func text(s string) tea.KeyPressMsg {
	r := []rune(s)
	return tea.KeyPressMsg{Code: r[0], Text: s}
}

func alt(code rune) tea.KeyPressMsg { return tea.KeyPressMsg{Code: code, Mod: tea.ModAlt} }
func ctrl(code rune) tea.KeyPressMsg {
	return tea.KeyPressMsg{Code: code, Mod: tea.ModCtrl}
}

func newTest(f *fakeBackend, w, h int) Model {
	return New(f, Options{Width: w, Height: h, Plain: true})
}

func poll(m Model) { m.Update(pollMsg{gen: m.pollGen}) }

func sendText(m Model, s string) {
	m.setInput(s)
	_, cmd := m.Update(press(tea.KeyEnter))
	drainCommand(m, cmd)
}

// drainCommand runs the backend command the last key started, as the
// program would, and hands its answer back.
func drainCommand(m Model, cmd tea.Cmd) tea.Cmd {
	if m.pending == "" || cmd == nil {
		return cmd
	}
	_, next := m.Update(cmd())
	return next
}

// checkFrame checks that the frame fills the terminal exactly.
func checkFrame(t *testing.T, m Model, w, h int) string {
	t.Helper()
	c := m.View().Content
	if w <= 0 || h <= 0 {
		if c != "" {
			t.Fatalf("%dx%d: want an empty frame, got %q", w, h, c)
		}
		return c
	}
	lines := strings.Split(c, "\n")
	if len(lines) != h {
		t.Fatalf("%dx%d: %d lines:\n%s", w, h, len(lines), c)
	}
	for i, l := range lines {
		if lw := ansi.StringWidth(l); lw != w {
			t.Fatalf("%dx%d: line %d is %d wide: %q", w, h, i, lw, l)
		}
	}
	return c
}

func TestFollowModeKeepsPlaceWhileReplyGrows(t *testing.T) {
	f := newFake().withHistory(20)
	f.reply = []string{"first words", "\nline two\n", "line three\nline four\n", "five\nsix\nseven\n", "eight"}
	f.hold = true
	m := newTest(f, 80, 24)
	body := m.layout().body

	sendText(m, "go")
	poll(m)
	if !m.tr.following() || !strings.Contains(m.View().Content, "first words") {
		t.Fatalf("at the bottom the new text must be shown:\n%s", m.View().Content)
	}

	m.Update(press(tea.KeyPgUp))
	if m.tr.following() {
		t.Fatal("PgUp must leave follow mode")
	}
	before := slices.Clone(m.tr.window(body))
	offset := m.tr.offset
	poll(m)
	poll(m)
	if got := m.tr.window(body); !slices.Equal(got, before) {
		t.Fatalf("scrolled view moved while the reply grew:\nbefore %q\nafter  %q", before, got)
	}
	if m.tr.offset <= offset {
		t.Fatalf("offset %d should have grown from %d", m.tr.offset, offset)
	}
	if !strings.Contains(m.View().Content, "lines up") {
		t.Fatal("the hint line should say the view is scrolled")
	}

	// Finishing the reply (transcript taken from Messages) keeps the place too.
	f.mu.Lock()
	f.hold = false
	f.mu.Unlock()
	poll(m)
	poll(m)
	poll(m)
	if m.busy {
		t.Fatal("reply should be done")
	}
	if got := m.tr.window(body); !slices.Equal(got, before) {
		t.Fatalf("scrolled view moved when the reply finished:\nbefore %q\nafter  %q", before, got)
	}

	m.Update(tea.MouseWheelMsg{Button: tea.MouseWheelUp})
	if m.tr.offset <= offset {
		t.Fatal("wheel up should scroll up")
	}
	for range 100 {
		m.Update(press(tea.KeyPgDown))
	}
	if !m.tr.following() {
		t.Fatal("PgDn to the bottom must resume follow mode")
	}
	if !strings.Contains(m.View().Content, "eight") {
		t.Fatalf("bottom should show the end of the reply:\n%s", m.View().Content)
	}

	m.Update(tea.KeyPressMsg{Code: tea.KeyHome, Mod: tea.ModCtrl})
	if !strings.Contains(m.View().Content, "Question 0:") {
		t.Fatalf("Ctrl+Home should show the first message:\n%s", m.View().Content)
	}
	m.Update(tea.KeyPressMsg{Code: tea.KeyUp, Mod: tea.ModCtrl})
	if !strings.Contains(m.View().Content, "Question 0:") {
		t.Fatal("scrolling above the top must clamp")
	}
	m.Update(tea.KeyPressMsg{Code: tea.KeyEnd, Mod: tea.ModCtrl})
	if !m.tr.following() {
		t.Fatal("Ctrl+End must resume follow mode")
	}
}

func TestHotKeysChangeSampler(t *testing.T) {
	f := newFake()
	f.hold = true
	m := newTest(f, 100, 30)
	sendText(m, "hi") // while generating: the backend applies it on the next token
	poll(m)

	steps := []struct {
		k     tea.KeyPressMsg
		check func() bool
		what  string
	}{
		{press(tea.KeyF3), func() bool { return f.params.Temperature == 0.9 }, "F3 temperature 0.9"},
		{tea.KeyPressMsg{Code: 't', ShiftedCode: 'T', Mod: tea.ModAlt | tea.ModShift}, func() bool { return f.params.Temperature == 1.0 }, "Alt+T (ESC T) temperature 1.0"},
		{tea.KeyPressMsg{Code: 'T', Mod: tea.ModAlt}, func() bool { return f.params.Temperature == 1.1 }, "Alt+T (kitty) temperature 1.1"},
		{alt('t'), func() bool { return f.params.Temperature == 1.0 }, "Alt+t temperature 1.0"},
		{press(tea.KeyF2), func() bool { return f.params.Temperature == 0.9 }, "F2 temperature 0.9"},
		{press(tea.KeyF4), func() bool { return f.params.TopP == 0.9 }, "F4 top-p 0.9"},
		{press(tea.KeyF5), func() bool { return f.params.TopP == 0.95 }, "F5 top-p 0.95"},
		{tea.KeyPressMsg{Code: 'P', Mod: tea.ModAlt | tea.ModShift}, func() bool { return f.params.TopP == 1 }, "Alt+Shift+P top-p off"},
		{press(tea.KeyF7), func() bool { return f.params.MinP == 0.01 }, "F7 min-p 0.01"},
		{press(tea.KeyF6), func() bool { return f.params.MinP == 0 }, "F6 min-p off"},
		{press(tea.KeyF8), func() bool { return f.params.TopK == 500 }, "F8 top-k 500"},
		{alt('k'), func() bool { return f.params.TopK == 200 }, "Alt+k top-k 200"},
		{press(tea.KeyF9), func() bool { return f.params.TopK == 500 }, "F9 top-k 500"},
		{press(tea.KeyF9), func() bool { return f.params.TopK == 0 }, "F9 top-k off"},
		{press(tea.KeyF10), func() bool { return f.params.Greedy }, "F10 greedy on"},
		{alt('g'), func() bool { return !f.params.Greedy }, "Alt+g greedy off"},
		{alt('m'), func() bool { return f.params.MinP == 0 }, "Alt+m min-p stays off"},
		{ctrl('t'), func() bool { return f.params.Temperature == 0.9 }, "Ctrl+T is the input's, not a hot key"},
	}
	for _, s := range steps {
		m.Update(s.k)
		_, _, _, p := f.snapshot()
		f.params = p
		if !s.check() {
			t.Fatalf("%s: params %+v", s.what, p)
		}
	}
	if m.in.value() != "" {
		t.Fatalf("hot keys must not type: %q", m.in.value())
	}
	if !m.busy {
		t.Fatal("hot keys must not end the reply")
	}
	m.Update(press(tea.KeyF3))
	if !strings.Contains(m.View().Content, "temperature 1 ") {
		t.Fatalf("panel should show the new temperature:\n%s", m.View().Content)
	}
	for range 50 {
		m.Update(press(tea.KeyF3))
	}
	if _, _, _, p := f.snapshot(); p.Temperature != 2 {
		t.Fatalf("temperature should stop at 2, got %v", p.Temperature)
	}
	for range 50 {
		m.Update(press(tea.KeyF2))
	}
	if _, _, _, p := f.snapshot(); p.Temperature != 0 {
		t.Fatalf("temperature should stop at 0, got %v", p.Temperature)
	}
}

func TestEscStopsReplyWithoutQuitting(t *testing.T) {
	f := newFake()
	f.hold = true
	m := newTest(f, 80, 24)
	m.Update(press(tea.KeyEscape)) // idle: nothing to stop
	if _, stops, _, _ := f.snapshot(); stops != 0 {
		t.Fatalf("Esc while idle called Stop %d times", stops)
	}
	sendText(m, "hi")
	poll(m)
	poll(m)

	m.Update(press(tea.KeyF1))
	m.Update(press(tea.KeyEscape)) // closes the help first
	if m.helpShown() {
		t.Fatal("Esc should close the help")
	}
	if _, stops, _, _ := f.snapshot(); stops != 0 {
		t.Fatal("Esc that closes the help must not stop the reply")
	}

	_, cmd := m.Update(press(tea.KeyEscape))
	if _, stops, _, _ := f.snapshot(); stops != 1 {
		t.Fatalf("Esc should call Stop once, got %d", stops)
	}
	if cmd != nil {
		if _, quit := cmd().(tea.QuitMsg); quit {
			t.Fatal("Esc must not quit")
		}
	}
	if m.stateText() != "stopping" {
		t.Fatalf("state %q, want stopping", m.stateText())
	}
	poll(m)
	if m.busy || m.stateText() != "stopped" {
		t.Fatalf("after Done(stopped): busy=%v state=%q", m.busy, m.stateText())
	}
	if !strings.Contains(m.View().Content, "Once upon a time, there was a little") {
		t.Fatalf("the partial reply should stay in the transcript:\n%s", m.View().Content)
	}
}

// Bug 2: Ctrl+C while a reply streamed quit and lost the turn. As in
// ollama and llama-cli, the first Ctrl+C stops the reply and keeps its text;
// a Ctrl+C on an idle prompt quits, and so does Ctrl+D on an empty input.
func TestCtrlCStopsThenQuits(t *testing.T) {
	f := newFake()
	f.hold = true
	m := newTest(f, 80, 24)
	sendText(m, "hi")
	poll(m)
	_, cmd := m.Update(ctrl('c'))
	if _, stops, _, _ := f.snapshot(); stops != 1 {
		t.Fatal("Ctrl+C should stop the reply")
	}
	if cmd != nil {
		if _, quit := cmd().(tea.QuitMsg); quit {
			t.Fatal("Ctrl+C while a reply streams must not quit")
		}
	}
	poll(m)
	if m.busy || !strings.Contains(m.View().Content, "Once upon a time") || !strings.Contains(m.note.text, "stopped; the text so far is kept · Ctrl+C again quits") {
		t.Fatalf("after Ctrl+C: busy %v, notice %q\n%s", m.busy, m.note.text, m.View().Content)
	}
	if msgs := f.Messages(); len(msgs) != 2 || msgs[1].Content != "Once upon a time" {
		t.Fatalf("the partial reply is not kept: %+v", msgs)
	}
	_, cmd = m.Update(ctrl('c'))
	if cmd == nil {
		t.Fatal("Ctrl+C on an idle prompt should quit")
	}
	if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Fatal("Ctrl+C on an idle prompt should quit")
	}

	m = newTest(newFake(), 80, 24)
	typeIn(m, "ab")
	m.Update(press(tea.KeyHome))
	if _, cmd := m.Update(ctrl('d')); cmd != nil || m.in.value() != "b" {
		t.Fatalf("Ctrl+D on text deletes forward: %q", m.in.value())
	}
	m.setInput("")
	if _, cmd := m.Update(ctrl('d')); cmd == nil {
		t.Fatal("Ctrl+D on an empty input should quit")
	} else if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Fatal("Ctrl+D on an empty input should quit")
	}

	// Ctrl+Z suspends to the shell, whatever is typed (fg comes back to it).
	typeIn(m, "half a thought")
	if _, cmd := m.Update(ctrl('z')); cmd == nil {
		t.Fatal("Ctrl+Z should suspend")
	} else if _, ok := cmd().(tea.SuspendMsg); !ok || m.in.value() != "half a thought" {
		t.Fatalf("Ctrl+Z: %T, input %q", cmd(), m.in.value())
	}
}

func TestSanitizeInput(t *testing.T) {
	cases := []struct{ in, want string }{
		{"hello", "hello"},
		{"\x1b[31mred\x1b[0m text", "red text"},
		{"a\x00b\x07c\x08d\x7f", "abcd"},
		{"one\r\ntwo\rthree", "one\ntwo\nthree"},
		{"bad \xff\xfe utf8", "bad \uFFFD utf8"},
		{"\u202Eevil\u2066", "evil"},
		{"\u009b2Jc1", "c1"},
		{"raw \x9b byte", "raw \uFFFD byte"},
		{"\n \n  code();  \n\n", "  code();"},
		{" \t\n\r ", ""},
		{"a\tb", "a\tb"},
		{"日本語 🍵 ok", "日本語 🍵 ok"},
	}
	for _, c := range cases {
		if got := sanitizeInput(c.in); got != c.want {
			t.Errorf("sanitizeInput(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

func TestPastedGarbageIsCleanedBeforeSend(t *testing.T) {
	f := newFake()
	m := newTest(f, 80, 24)
	m.Update(tea.PasteMsg{Content: "hello\x1b[2J\x00 wor\u202Eld\x07\r\nnext\xff"})
	m.Update(press(tea.KeyEnter))
	sent, _, _, _ := f.snapshot()
	if len(sent) != 1 || sent[0] != "hello world\nnext" {
		t.Fatalf("sent %q", sent)
	}
	checkFrame(t, m, 80, 24)
}

func TestInputKeys(t *testing.T) {
	f := newFake()
	m := newTest(f, 80, 24)
	m.Update(text("?"))
	if !m.helpShown() {
		t.Fatal("? on an empty input opens the help")
	}
	m.Update(text("?"))
	if m.helpShown() {
		t.Fatal("? closes it again")
	}
	m.Update(text("a"))
	m.Update(text("?"))
	if m.helpShown() || m.in.value() != "a?" {
		t.Fatalf("? after text is typed: help=%v value=%q", m.helpShown(), m.in.value())
	}
	m.Update(ctrl('j'))
	m.Update(text("b"))
	m.Update(tea.KeyPressMsg{Code: tea.KeyEnter, Mod: tea.ModAlt})
	m.Update(text("c"))
	if m.in.value() != "a?\nb\nc" {
		t.Fatalf("newline keys: %q", m.in.value())
	}
	m.Update(press(tea.KeyF1))
	if !m.helpShown() {
		t.Fatal("F1 opens the help even with text in the input")
	}
	m.Update(press(tea.KeyEnter))
	sent, _, _, _ := f.snapshot()
	if len(sent) != 1 || sent[0] != "a?\nb\nc" {
		t.Fatalf("sent %q", sent)
	}
	if m.helpShown() || m.in.value() != "" {
		t.Fatal("sending clears the input and closes the help")
	}

	// Enter while busy keeps the text and says why.
	f.hold = true
	m.setInput("next question")
	m.Update(press(tea.KeyEnter))
	if sent, _, _, _ := f.snapshot(); len(sent) != 1 || m.in.value() != "next question" {
		t.Fatalf("Enter while busy: sent %q, input %q", sent, m.in.value())
	}
	if !strings.Contains(m.View().Content, "still being generated") {
		t.Fatal("Enter while busy should say why nothing happened")
	}
}

func TestSendErrorShown(t *testing.T) {
	f := newFake()
	f.sendErr = errors.New("model not loaded")
	m := newTest(f, 80, 24)
	sendText(m, "hi")
	if m.busy || m.in.value() != "hi" {
		t.Fatalf("failed send: busy=%v input=%q", m.busy, m.in.value())
	}
	if !strings.Contains(m.View().Content, "✗ model not loaded") {
		t.Fatalf("error not shown:\n%s", m.View().Content)
	}
}

func TestNoticesShown(t *testing.T) {
	f := newFake()
	f.notices = []string{"dropped 2 oldest turns to fit the context"}
	m := newTest(f, 40, 12)
	poll(m)
	if !strings.Contains(m.View().Content, "! dropped 2 oldest turns") {
		t.Fatalf("notice not shown:\n%s", m.View().Content)
	}
	m.Update(press(tea.KeyEscape))
	if strings.Contains(m.View().Content, "dropped") {
		t.Fatal("Esc while idle clears the notice")
	}
	// Too short for a hint line: the notice takes the status line.
	f.notices = []string{"hello notice"}
	m.Update(tea.WindowSizeMsg{Width: 30, Height: 6})
	poll(m)
	if !strings.Contains(checkFrame(t, m, 30, 6), "! hello notice") {
		t.Fatalf("notice not shown on a small screen:\n%s", m.View().Content)
	}
}

func TestUserTurnShownOnceWhateverMessagesSays(t *testing.T) {
	for _, late := range []bool{false, true} {
		f := newFake()
		f.lateUser = late
		m := newTest(f, 80, 24)
		sendText(m, "ping")
		if c := m.View().Content; strings.Count(c, "› ping") != 1 {
			t.Fatalf("late=%v: user turn shown %d times while streaming:\n%s", late, strings.Count(c, "› ping"), c)
		}
		for range 10 {
			poll(m)
		}
		if m.busy {
			t.Fatal("reply should be done")
		}
		if c := m.View().Content; strings.Count(c, "› ping") != 1 || !strings.Contains(c, "happy") {
			t.Fatalf("late=%v: after the reply:\n%s", late, c)
		}
	}
}

func TestBackendIdleWithoutDoneEndsReply(t *testing.T) {
	f := newFake()
	f.noDone = true
	m := newTest(f, 80, 24)
	sendText(m, "hi")
	for range 10 {
		poll(m)
	}
	if m.busy || m.stateText() != "idle" {
		t.Fatalf("busy=%v state=%q", m.busy, m.stateText())
	}
}

func TestSystemPromptAndRawMode(t *testing.T) {
	f := newFake()
	f.info.System = "You are terse."
	m := newTest(f, 80, 24)
	if !strings.Contains(m.View().Content, "# You are terse.") {
		t.Fatalf("system prompt not shown:\n%s", m.View().Content)
	}

}

// In raw mode the prompt and its continuation are one flowing text.
func TestRawModeFlowsAsOneText(t *testing.T) {
	for _, plain := range []bool{true, false} {
		r := newFake()
		r.info.Mode = "raw"
		r.reply = []string{" was", " happy.\nThe", " end."}
		m := New(r, Options{Width: 30, Height: 12, Plain: plain})
		sendText(m, "The robot")
		poll(m)
		c := ansi.Strip(m.View().Content)
		if !strings.Contains(c, "\nThe robot was") {
			t.Fatalf("raw mode should show one text:\n%s", c)
		}
		for range 5 {
			poll(m)
		}
		sendText(m, " Then it")
		for range 5 {
			poll(m)
		}
		sendText(m, "") // an empty input in raw mode: keep going
		for range 5 {
			poll(m)
		}
		c = ansi.Strip(checkFrame(t, m, 30, 12))
		want := "\n" + fit("The robot was happy.", 30) + "\n" + fit("The end. Then it was happy.", 30) + "\n" + fit("The end. was happy.", 30) + "\n" + fit("The end.", 30) + "\n"
		if !strings.Contains(c, want) {
			t.Fatalf("plain=%v: want %q in\n%s", plain, want, c)
		}
		if !plain {
			// Every line that opens the user's colour closes it again.
			for _, l := range m.tr.window(100) {
				if strings.Count(l, m.st.user.pre) != strings.Count(l, m.st.user.post) {
					t.Fatalf("unbalanced style on %q", l)
				}
			}
		}
	}
}

// A user prompt that wraps keeps its colour on every line.
func TestWrapPaintedReopensStyle(t *testing.T) {
	st := newStyles(false, false)
	p := st.r(st.user, "one two three four five six") + " seven eight"
	lines := st.wrapPainted(p, 9)
	for i, l := range lines {
		if ansi.StringWidth(l) != 9 {
			t.Fatalf("line %d is not 9 wide: %q", i, l)
		}
		lines[i] = strings.TrimRight(l, " ")
		if i < 3 && (!strings.HasPrefix(l, st.user.pre) || !strings.HasSuffix(lines[i], st.user.post)) {
			t.Fatalf("line %d lost the style: %q", i, l)
		}
	}
	if got := ansi.Strip(strings.Join(lines, "|")); got != "one two|three|four five|six seven|eight" {
		t.Fatalf("wrapped as %q", got)
	}
}

// Every size from absurd to large gives a full frame and no panic, with the
// help open or closed, idle or streaming wide characters.
func TestAnySizeRenders(t *testing.T) {
	widths := []int{-5, 0, 1, 2, 3, 4, 5, 10, 19, 20, 21, 31, 39, 40, 41, 79, 80, 89, 90, 91, 120, 200}
	heights := []int{-3, 0, 1, 2, 3, 4, 5, 6, 8, 9, 12, 24, 40}
	f := newFake().withHistory(3)
	f.hold = true
	m := newTest(f, 80, 24)
	for phase := range 3 {
		switch phase {
		case 1:
			sendText(m, "日本語の質問 🍵🍵🍵 with a long line that will need wrapping")
			for range 6 {
				poll(m)
			}
		case 2:
			m.Update(press(tea.KeyF1))
		}
		for _, w := range widths {
			for _, h := range heights {
				m.Update(tea.WindowSizeMsg{Width: w, Height: h})
				checkFrame(t, m, w, h)
				m.Update(press(tea.KeyPgUp))
				checkFrame(t, m, w, h)
				m.Update(tea.KeyPressMsg{Code: tea.KeyEnd, Mod: tea.ModCtrl})
			}
		}
	}
}

// A resize storm in the middle of a reply ends in the same frame as a model
// that only ever saw the final size: no stale wrapping survives.
func TestResizeStorm(t *testing.T) {
	for _, mode := range []string{"chat", "raw"} {
		t.Run(mode, func(t *testing.T) { resizeStorm(t, mode) })
	}
}

func resizeStorm(t *testing.T, mode string) {
	run := func(storm bool) string {
		f := newFake().withHistory(5)
		f.info.Mode = mode
		f.reply = strings.SplitAfter("Once upon a time 日本語 there was a 🍵 robot.\nIt wrapped text all day long, through every resize, and never lost a word.\nThe end.", " ")
		m := newTest(f, 80, 24)
		sendText(m, "story please")
		rng := rand.New(rand.NewPCG(1, 2))
		for range len(f.reply) + 2 {
			if storm {
				for range 20 {
					w, h := rng.IntN(130)-5, rng.IntN(50)-3
					m.Update(tea.WindowSizeMsg{Width: w, Height: h})
					checkFrame(t, m, w, h)
				}
			}
			poll(m)
		}
		m.Update(tea.WindowSizeMsg{Width: 61, Height: 20})
		return checkFrame(t, m, 61, 20)
	}
	if a, b := run(false), run(true); a != b {
		t.Fatalf("frames differ after a resize storm:\n%s\n---\n%s", a, b)
	}
}

// Streaming in chunks, re-wrapping only the last paragraph, gives exactly
// the lines of the finished message rendered in one go.
func TestIncrementalWrapMatchesFull(t *testing.T) {
	full := "Zoë 日本語テキスト and 🍵🍵 emoji, a long first paragraph that has to wrap more than once at a narrow width.\n\n" +
		"Second paragraph.\nThird: aVeryLongWordWithoutAnySpacesThatMustBeBrokenHard and more."
	st := newStyles(true, false)
	for _, w := range []int{1, 2, 3, 7, 12, 25, 80} {
		for seed := range uint64(5) {
			tr := newTranscript(st, false, w)
			rng := rand.New(rand.NewPCG(seed, 9))
			rest := strings.ReplaceAll(full, "\n", "\r\n") // CRLF pieces may split between \r and \n
			for rest != "" {
				n := min(len(rest), 1+rng.IntN(12))
				for n < len(rest) && !utf8RuneStart(rest[n]) {
					n++
				}
				tr.appendStream(rest[:n])
				rest = rest[n:]
			}
			sl, tl := tr.streamLines()
			got := append(slices.Clone(sl), tl...)
			want := st.renderMessage(session.Message{Role: session.Assistant, Content: full}, w)
			if !slices.Equal(got, want) {
				t.Fatalf("width %d seed %d:\n got %q\nwant %q", w, seed, got, want)
			}
			for _, l := range got {
				if lw := ansi.StringWidth(l); w >= 3 && lw > w {
					t.Fatalf("width %d: line %q is %d wide", w, l, lw)
				}
			}
		}
	}
}

func utf8RuneStart(b byte) bool { return b&0xC0 != 0x80 }

func TestSilentBackendDoesNotHangTheUI(t *testing.T) {
	f := newFake()
	f.silent = true
	m := newTest(f, 80, 24)
	sendText(m, "clear it all")
	for range maxQuietPolls - 1 {
		poll(m)
	}
	if !m.busy {
		t.Fatal("gave up waiting too early")
	}
	poll(m)
	if m.busy || m.tr.streaming {
		t.Fatal("a Send that never starts a reply must not leave the UI generating")
	}
}

func TestModeChangeAfterTurnRerenders(t *testing.T) {
	f := newFake().withHistory(1)
	f.silent = true
	m := newTest(f, 80, 24)
	if !strings.Contains(m.View().Content, "› Question 0") {
		t.Fatal("chat mode marks user turns")
	}
	f.info.Mode = "raw"
	sendText(m, "switch to raw")
	for range maxQuietPolls {
		poll(m)
	}
	c := m.View().Content
	if strings.Contains(c, "› Question 0") || !strings.Contains(c, "\nQuestion 0") || !strings.Contains(c, " raw") {
		t.Fatalf("after switching to raw mode:\n%s", c)
	}
}

func TestCursorSitsInTheInput(t *testing.T) {
	for _, sz := range [][2]int{{80, 24}, {100, 30}, {20, 5}} {
		m := newTest(newFake(), sz[0], sz[1])
		m.Update(text("a"))
		m.Update(text("b"))
		v := m.View()
		if v.Cursor == nil {
			t.Fatalf("%v: no cursor", sz)
		}
		lines := strings.Split(v.Content, "\n")
		row := lines[v.Cursor.Y]
		if !strings.HasPrefix(row, "› ab") || v.Cursor.X != 4 {
			t.Fatalf("%v: cursor at %d,%d on %q", sz, v.Cursor.X, v.Cursor.Y, row)
		}
	}
}

func TestRawModeScrolledViewStays(t *testing.T) {
	f := newFake().withHistory(10)
	f.info.Mode = "raw"
	f.reply = []string{" one", " two\nthree", "\nfour\nfive six", " seven\n", "eight"}
	m := newTest(f, 40, 12)
	body := m.layout().body
	sendText(m, "start")
	poll(m)
	m.Update(press(tea.KeyPgUp))
	before := slices.Clone(m.tr.window(body))
	for range 8 {
		poll(m)
	}
	if m.busy {
		t.Fatal("reply should be done")
	}
	if got := m.tr.window(body); !slices.Equal(got, before) {
		t.Fatalf("raw view moved:\nbefore %q\nafter  %q", before, got)
	}
	m.Update(tea.KeyPressMsg{Code: tea.KeyEnd, Mod: tea.ModCtrl})
	if c := m.View().Content; !strings.Contains(c, "\nfive six seven") || !strings.Contains(c, "\neight") {
		t.Fatalf("bottom of the raw text:\n%s", c)
	}
}

// Names, notices and errors are one row each, whatever they contain.
func TestMultiLineStringsStayOnOneRow(t *testing.T) {
	f := newFake()
	f.info.Model = "evil\nname\x1b[2J"
	f.info.Arch = "a\r\nb"
	f.order = []string{"top-k\n", "\x1b[31mtemp"}
	f.notices = []string{"line one\nline two"}
	for _, sz := range [][2]int{{80, 24}, {100, 30}, {30, 6}} {
		m := newTest(f, sz[0], sz[1])
		poll(m)
		c := checkFrame(t, m, sz[0], sz[1])
		if strings.Contains(c, "\x1b") {
			t.Fatalf("escape code leaked into a plain frame:\n%q", c)
		}
		m.Update(press(tea.KeyF1))
		checkFrame(t, m, sz[0], sz[1])
		f.notices = []string{"line one\nline two"}
	}
	f.sendErr = errors.New("multi\nline\nerror")
	m := newTest(f, 80, 24)
	sendText(m, "x")
	if c := checkFrame(t, m, 80, 24); !strings.Contains(c, "✗ multi line error") {
		t.Fatalf("error not on one row:\n%s", c)
	}
}

func TestHistoryRecall(t *testing.T) {
	f := newFake()
	m := newTest(f, 80, 24)
	for _, s := range []string{"first", "second\nline"} {
		sendText(m, s)
		for range 10 {
			poll(m)
		}
	}
	up, down := press(tea.KeyUp), press(tea.KeyDown)
	m.Update(up)
	if v := m.in.value(); v != "second\nline" {
		t.Fatalf("Up recalls the last message, got %q", v)
	}
	m.Update(up)
	m.Update(up) // already the oldest
	if v := m.in.value(); v != "first" {
		t.Fatalf("Up again recalls the one before, got %q", v)
	}
	m.Update(down)
	m.Update(down)
	if v := m.in.value(); v != "" {
		t.Fatalf("Down past the newest clears the input, got %q", v)
	}
	m.Update(up)
	m.Update(text("!"))
	m.Update(up) // edited: Up moves the cursor in the input now
	if v := m.in.value(); v != "second\nline!" {
		t.Fatalf("an edited recall is not replaced, got %q", v)
	}
}

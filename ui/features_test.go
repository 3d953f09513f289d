package ui

import (
	"chat/config/settings"

	"fmt"
	"image/color"
	"math/rand/v2"
	"regexp"
	"slices"
	"strings"
	"testing"

	"chat/engine/sampler"
	"chat/session"
	"chat/session/termtext"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// Tests of the commands, palette, completion, clipboard, edit, theme, key
// map and markdown paths, driving the model directly.

func typeIn(m Model, s string) {
	for _, r := range s {
		m.Update(tea.KeyPressMsg{Code: r, Text: string(r)})
	}
}

func keyMod(code rune, mod tea.KeyMod) tea.KeyPressMsg { return tea.KeyPressMsg{Code: code, Mod: mod} }

// clip runs cmd and returns what it puts on the clipboard ("" if nothing).
func clip(t *testing.T, cmd tea.Cmd) string {
	t.Helper()
	if cmd == nil {
		return ""
	}
	msg := cmd()
	if fmt.Sprintf("%T", msg) != "tea.setClipboardMsg" {
		t.Fatalf("want a clipboard message, got %T", msg)
	}
	return fmt.Sprint(msg)
}

func finishReply(m Model, f *fakeBackend) {
	for i := 0; i < 50 && (m.busy || !f.drained()); i++ {
		poll(m)
	}
}

func TestSlashCommandGoesToBackend(t *testing.T) {
	f := newFullFake()
	m := New(f, Options{Width: 80, Height: 24, Plain: true})
	sendText(m, "/set temperature 0.5")
	if !slices.Equal(f.commands, []string{"/set temperature 0.5"}) || m.vals.Sampler.Temperature != 0.5 {
		t.Fatalf("commands %v, T %v", f.commands, m.vals.Sampler.Temperature)
	}
	if m.note.text != "temperature 0.5" || (m.note.kind == noteErr) || m.in.value() != "" {
		t.Fatalf("notice %q err %v input %q", m.note.text, (m.note.kind == noteErr), m.in.value())
	}
	if len(f.sent) != 0 {
		t.Fatal("a command is not a message")
	}
	sendText(m, "/set nope 1")
	if !(m.note.kind == noteErr) || !strings.Contains(m.View().Content, `unknown setting "nope"`) {
		t.Fatalf("errors show in the status line:\n%s", m.View().Content)
	}
	// "//" sends the text with one slash.
	sendText(m, "//etc/passwd is a file")
	if len(f.sent) != 1 || f.sent[0] != "/etc/passwd is a file" {
		t.Fatalf("sent %q", f.sent)
	}
}

func TestSeveralLineAnswerOpensPane(t *testing.T) {
	f := newFullFake()
	m := New(f, Options{Width: 80, Height: 24, Plain: true})
	sendText(m, "/help")
	c := m.View().Content
	if m.openPane() == nil || !strings.Contains(c, "/show            show the settings") || !strings.Contains(c, "/copy [code]") {
		t.Fatalf("help pane with the backend's and the UI's commands:\n%s", c)
	}
	m.Update(press(tea.KeyEscape))
	if m.openPane() != nil {
		t.Fatal("Esc closes the pane")
	}
}

func TestBasicCommandsWithoutCommander(t *testing.T) {
	f := newFake().withHistory(1)
	m := newTest(f, 80, 24)
	sendText(m, "/set top_k 7")
	sendText(m, "/set penalty_window 32")
	sendText(m, "/set repeat-penalty 1.1")
	_, _, _, p := f.snapshot()
	if p.TopK != 7 || p.PenaltyWindow != 32 || p.RepeatPenalty != 1.1 {
		t.Fatalf("params %+v", p)
	}
	sendText(m, "/set temperature warm")
	if !(m.note.kind == noteErr) {
		t.Fatal("a bad value is an error")
	}
	sendText(m, "/regen")
	if !(m.note.kind == noteErr) || !strings.Contains(m.note.text, "cannot regenerate") {
		t.Fatalf("notice %q", m.note.text)
	}
	sendText(m, "/frobnicate")
	if !(m.note.kind == noteErr) || !strings.Contains(m.note.text, "unknown command /frobnicate") {
		t.Fatalf("notice %q", m.note.text)
	}
	if len(f.sent) != 0 {
		t.Fatalf("commands were sent as messages: %q", f.sent)
	}
	// "/bye now" quit: a command without arguments refuses one.
	if cmd := m.runCommand("/bye now"); cmd != nil || m.note.kind != noteErr || m.note.text != `/quit takes no argument, got "now"` {
		t.Fatalf("/bye now: quits %v, notice %q", cmd != nil, m.note.text)
	}
	for _, q := range []string{"/quit", "/exit", "/bye"} {
		if cmd := m.runCommand(q); cmd == nil || fmt.Sprint(cmd()) != fmt.Sprint(tea.Quit()) {
			t.Fatalf("%s quits", q)
		}
	}
	sendText(m, "/keys")
	if !m.helpShown() {
		t.Fatal("/keys does not open the key help")
	}
}

func TestCompletionPopupAndTab(t *testing.T) {
	f := newFullFake()
	m := New(f, Options{Width: 80, Height: 24, Plain: true})
	typeIn(m, "/se")
	if !m.popupVisible() || !slices.Equal(m.compl.items, []string{"/set", "/sessions"}) {
		t.Fatalf("popup %v %v", m.popupVisible(), m.compl.items)
	}
	if c := m.View().Content; !strings.Contains(c, " /sessions ") || !strings.Contains(c, "change a setting") {
		t.Fatalf("the popup is drawn:\n%s", c)
	}
	m.Update(press(tea.KeyTab))
	if v := m.in.value(); v != "/set" {
		t.Fatalf("Tab takes the first: %q", v)
	}
	m.Update(press(tea.KeyTab))
	if v := m.in.value(); v != "/sessions" {
		t.Fatalf("Tab again takes the next: %q", v)
	}
	m.setInput("/set ")
	if !slices.Equal(m.compl.items, []string{"/set temperature", "/set top_k", "/set seed"}) {
		t.Fatalf("arguments: %v", m.compl.items)
	}
	typeIn(m, "s")
	m.Update(press(tea.KeyTab))
	if v := m.in.value(); v != "/set seed " {
		t.Fatalf("one match completes with a space: %q", v)
	}
	// The UI's own commands complete too, and Esc hides the popup.
	m.setInput("/ma")
	if !slices.Contains(m.compl.items, "/markdown") {
		t.Fatalf("items %v", m.compl.items)
	}
	m.Update(press(tea.KeyEscape))
	if m.popupVisible() {
		t.Fatal("Esc hides the popup")
	}
	// ↑/↓ choose in the popup, Enter takes the choice.
	m.setInput("/")
	m.Update(press(tea.KeyDown))
	want := m.compl.items[1] + " "
	m.Update(press(tea.KeyEnter))
	if v := m.in.value(); v != want {
		t.Fatalf("Enter after ↓ takes the item: %q", v)
	}
	if slices.ContainsFunc(f.commands, func(c string) bool { return c != "/help" }) {
		t.Fatalf("nothing ran but /help (for the descriptions): %v", f.commands)
	}
}

// At 20 columns the popup's names took 16 cells and their help was cut to
// "cha…"; the help goes when it has too few cells to say anything.
func TestCompletionPopupNarrow(t *testing.T) {
	m := New(newFullFake(), Options{Width: 20, Height: 24, Plain: true})
	typeIn(m, "/se")
	c := m.View().Content
	for l := range strings.SplitSeq(c, "\n") {
		if strings.Contains(l, "/se") && strings.Contains(l, "…") {
			t.Fatalf("a cut help in the narrow popup:\n%s", c)
		}
	}
	if !strings.Contains(c, "▸ /set") {
		t.Fatalf("no popup:\n%s", c)
	}
}

func TestCompletionWithoutCompleter(t *testing.T) {
	m := newTest(newFake(), 80, 24)
	typeIn(m, "/s")
	if !slices.Equal(m.compl.items, []string{"/system", "/save", "/set", "/sessions"}) {
		t.Fatalf("items %v", m.compl.items)
	}
	m.setInput("/set t")
	if !slices.Equal(m.compl.items, []string{"/set temperature", "/set top_p", "/set top_k", "/set token_view", "/set top_n_sigma", "/set typical_p"}) {
		t.Fatalf("items %v", m.compl.items)
	}
}

func TestPaletteFiltersAndRuns(t *testing.T) {
	f := newFullFake().withHistory(0)
	f.msgs = []session.Message{{Role: session.User, Content: "hi"}, {Role: session.Assistant, Content: "Hello **there**.\n\n```go\nfmt.Println(\"x\")\n```"}}
	m := New(f, Options{Width: 80, Height: 24, Plain: true})
	m.Update(ctrl('p'))
	if m.pal() == nil {
		t.Fatal("Ctrl+P opens the palette")
	}
	labels := func() []string {
		var out []string
		for _, i := range m.pal().shown {
			out = append(out, m.pal().items[i].label)
		}
		return out
	}
	all := strings.Join(labels(), "|")
	for _, want := range []string{"Regenerate", "New chat", "Clear", "Save the conversation", "Load a saved", "System prompt", "Copy the last reply", "Copy the last code block", "Markdown off", "Set temperature", "Set top p", "Set min p", "Set top k", "Greedy on", "Set repeat penalty", "Set frequency penalty", "Set presence penalty", "Set penalty window", "Set seed"} {
		if !strings.Contains(all, want) {
			t.Errorf("palette lacks %q: %s", want, all)
		}
	}
	typeIn(m, "code")
	if got := labels(); len(got) != 1 || got[0] != "Copy the last code block" {
		t.Fatalf("filtered: %v", got)
	}
	_, got := m.Update(press(tea.KeyEnter))
	if m.pal() != nil {
		t.Fatal("Enter closes the palette")
	}
	if s := clip(t, got); s != `fmt.Println("x")` {
		t.Fatalf("copied %q", s)
	}
	// A knob item puts the command in the input to finish.
	m.Update(ctrl('p'))
	typeIn(m, "seed")
	m.Update(press(tea.KeyEnter))
	if v := m.in.value(); v != "/set seed random" {
		t.Fatalf("input %q", v)
	}
	m.setInput("")
	// Esc closes without running.
	m.Update(ctrl('p'))
	m.Update(press(tea.KeyEscape))
	if m.pal() != nil {
		t.Fatal("Esc closes the palette")
	}
}

// At 200 columns the palette's keys stood 130 cells right of their labels.
func TestPaletteWide(t *testing.T) {
	m := New(newFullFake(), Options{Width: 200, Height: 60, Plain: true})
	m.Update(ctrl('p'))
	for l := range strings.SplitSeq(m.View().Content, "\n") {
		if strings.Contains(l, "Regenerate the last reply") {
			if i := strings.Index(l, "Ctrl+R"); i < 0 || ansi.StringWidth(l[:i]) > 100 {
				t.Fatalf("the key is far from its label:\n%s", l)
			}
			return
		}
	}
	t.Fatalf("no palette:\n%s", m.View().Content)
}

func TestSessionsPicker(t *testing.T) {
	f := newFullFake()
	m := New(f, Options{Width: 80, Height: 24, Plain: true})
	sendText(m, "/sessions")
	if m.pal() == nil || len(m.pal().items) != 2 || !strings.Contains(m.pal().items[1].label, "Tea") {
		t.Fatalf("picker %+v", m.pal())
	}
	m.Update(press(tea.KeyDown))
	_, cmd := m.Update(press(tea.KeyEnter))
	id := fakeSessions[1].ID
	if m.pending != "/load "+id || !strings.Contains(m.View().Content, "running /load "+id) {
		t.Fatalf("pending %q:\n%s", m.pending, m.View().Content)
	}
	drainCommand(m, cmd)
	if !slices.Equal(f.loaded, []string{id}) || !strings.Contains(m.View().Content, "loaded "+id) {
		t.Fatalf("loaded %v:\n%s", f.loaded, m.View().Content)
	}
}

// At 80 columns the picker's rows were the /sessions list cut at the right,
// which hid the model. Each row keeps the title and the model (elided in
// the middle when long), its columns at the same cells in every row, and
// drops the id, count and date as the terminal narrows.
func TestSessionsPickerWidths(t *testing.T) {
	for _, c := range []struct {
		w          int
		want, lose []string // in both rows' text, and in neither
	}{
		{200, []string{"[notes] Robots", "TinyLlama-1.1B-Chat-v1.0.Q4_K_M.gguf", "history of tea in China", "2026-11-29 10:00", "4 messages", "20261129-100000-1a2b"}, nil},
		{120, []string{"[notes] Robots", "TinyLlama-1.1…", ".Q4_K_M.gguf", "Tea and the history of", "stories15M.pt", "2026-11-29 10:00"}, []string{"messages", "1a2b"}},
		{80, []string{"[notes] Robots", "TinyLlama-1.1…", ".Q4_K_M.gguf", "stories15M.pt", "2026-11-29 10:00"}, []string{"messages", "1a2b"}},
		{40, []string{"[notes] Robots", "Tea and the", "TinyLla…_M.gguf", "stories15M.pt"}, []string{"2026", "messages"}},
		{20, []string{"[notes] Rob…", "Tea and the…"}, []string{"2026", "messages", ".gguf"}},
	} {
		m := New(newFullFake(), Options{Width: c.w, Height: 24, Plain: true})
		sendText(m, "/sessions")
		var rows []string
		for l := range strings.SplitSeq(m.View().Content, "\n") {
			if strings.Contains(l, "[notes]") || strings.Contains(l, "Tea and") {
				rows = append(rows, l)
			}
		}
		text := strings.Join(rows, "\n")
		if len(rows) != 2 {
			t.Fatalf("%d columns: rows\n%s", c.w, m.View().Content)
		}
		for _, s := range c.want {
			if !strings.Contains(text, s) {
				t.Errorf("%d columns: the rows lack %q:\n%s", c.w, s, text)
			}
		}
		for _, s := range c.lose {
			if strings.Contains(text, s) {
				t.Errorf("%d columns: the rows have %q:\n%s", c.w, s, text)
			}
		}
		for _, r := range rows {
			if ansi.StringWidth(r) != c.w {
				t.Errorf("%d columns: a row %d wide: %q", c.w, ansi.StringWidth(r), r)
			}
		}
		// The model column starts at the same cell in both rows.
		if c.w >= 40 {
			a, b := strings.Index(rows[0], "TinyLla"), strings.Index(rows[1], "stories15M")
			if a < 0 || b < 0 || ansi.StringWidth(rows[0][:a]) != ansi.StringWidth(rows[1][:b]) {
				t.Errorf("%d columns: the model columns differ:\n%s", c.w, text)
			}
		}
	}
}

func TestCopyReplyAndCodeBlock(t *testing.T) {
	f := newFake()
	m := newTest(f, 80, 24)
	if _, cmd := m.Update(ctrl('y')); cmd != nil || !strings.Contains(m.note.text, "no reply") {
		t.Fatal("nothing to copy yet")
	}
	reply := "Here:\n\n```python\ndef f(x):\n\treturn x  # tab kept\n```\n\nand\n\n~~~\nlast   block\n~~~\n"
	f.msgs = []session.Message{{Role: session.User, Content: "code"}, {Role: session.Assistant, Content: reply}}
	m.syncMessages()
	_, cmd := m.Update(ctrl('y'))
	if got := clip(t, cmd); got != reply {
		t.Fatalf("reply %q", got)
	}
	_, cmd = m.Update(alt('y'))
	if got := clip(t, cmd); got != "last   block" {
		t.Fatalf("code %q", got)
	}
	code, _ := lastCodeBlock("```python\ndef f(x):\n\treturn x  # tab kept\n```")
	if code != "def f(x):\n\treturn x  # tab kept" {
		t.Fatalf("code %q", code)
	}
}

func TestEditLastMessageAndResend(t *testing.T) {
	f := newFullFake().withHistory(2)
	f.fakeBackend.msgs = append([]session.Message{{Role: session.System, Content: "Be brief."}}, f.fakeBackend.msgs...)
	m := New(f, Options{Width: 80, Height: 24, Plain: true})
	m.Update(ctrl('e'))
	if m.editing != 3 || m.in.value() != "Question 1: tell me something about the number 1, please." {
		t.Fatalf("editing %d %q", m.editing, m.in.value())
	}
	m.Update(ctrl('e'))
	if m.editing != 1 || !strings.HasPrefix(m.in.value(), "Question 0") {
		t.Fatalf("Ctrl+E again goes back: %d %q", m.editing, m.in.value())
	}
	m.setInput("Question 0, edited")
	m.Update(press(tea.KeyEnter))
	if !slices.Equal(f.edits, []string{"1:Question 0, edited"}) || !m.busy {
		t.Fatalf("edits %v busy %v", f.edits, m.busy)
	}
	finishReply(m, f.fakeBackend)
	c := m.View().Content
	if strings.Contains(c, "Question 1") || !strings.Contains(c, "Question 0, edited") || !strings.Contains(c, "robot named Zoë") {
		t.Fatalf("after the edit:\n%s", c)
	}
	// Esc cancels an edit; /edit is Ctrl+E.
	m.Update(ctrl('e'))
	m.Update(press(tea.KeyEscape))
	if m.editing != -1 || m.in.value() != "" {
		t.Fatal("Esc cancels")
	}
	sendText(m, "/edit")
	if m.editing < 0 || !strings.HasPrefix(m.in.value(), "Question 0, edited") {
		t.Fatalf("/edit: editing %d %q", m.editing, m.in.value())
	}
	m.Update(press(tea.KeyEscape))
	// Without Edit the text is sent as a new message.
	g := newFake().withHistory(1)
	m = newTest(g, 80, 24)
	m.Update(ctrl('e'))
	m.Update(press(tea.KeyEnter))
	if len(g.sent) != 1 || !strings.HasPrefix(g.sent[0], "Question 0") {
		t.Fatalf("sent %q", g.sent)
	}
	// With text in the input Ctrl+E is the input's end-of-line.
	m = newTest(newFake().withHistory(1), 80, 24)
	m.setInput("abc")
	m.Update(ctrl('e'))
	if m.editing != -1 || m.in.value() != "abc" {
		t.Fatal("Ctrl+E on text moves the cursor")
	}
}

func TestRegenerate(t *testing.T) {
	f := newFullFake().withHistory(1)
	m := New(f, Options{Width: 80, Height: 24, Plain: true})
	m.Update(ctrl('r'))
	if f.regens != 1 || !m.busy {
		t.Fatalf("regens %d busy %v", f.regens, m.busy)
	}
	finishReply(m, f.fakeBackend)
	if c := m.View().Content; strings.Contains(c, "Answer 0") || !strings.Contains(c, "robot named Zoë") {
		t.Fatalf("the new reply replaces the old:\n%s", c)
	}
	sendText(m, "/regen")
	if f.regens != 2 || !m.busy {
		t.Fatalf("/regen: regens %d busy %v", f.regens, m.busy)
	}
	m.Update(ctrl('r'))
	if f.regens != 2 || !strings.Contains(m.note.text, "still being generated") {
		t.Fatal("no regenerate while busy")
	}
}

func TestHistoryFromBackend(t *testing.T) {
	f := newFullFake()
	f.history = []string{"from an old session", "from another"}
	m := New(f, Options{Width: 80, Height: 24, Plain: true})
	m.Update(press(tea.KeyUp))
	if v := m.in.value(); v != "from another" {
		t.Fatalf("recalled %q", v)
	}
	m.Update(press(tea.KeyUp))
	if v := m.in.value(); v != "from an old session" {
		t.Fatalf("recalled %q", v)
	}
}

func TestThemeFollowsBackground(t *testing.T) {
	m := New(newFake(), Options{Width: 80, Height: 24})
	if !m.autoBG || m.light {
		t.Fatal("auto theme starts dark")
	}
	m.Update(tea.BackgroundColorMsg{Color: color.White})
	if !m.light || !m.st.light {
		t.Fatal("a white background picks the light theme")
	}
	m.Update(tea.BackgroundColorMsg{Color: color.Black})
	if m.light {
		t.Fatal("a black background picks the dark theme")
	}
	sendText(m, "/theme light")
	m.Update(tea.BackgroundColorMsg{Color: color.Black})
	if !m.light {
		t.Fatal("a chosen theme stays")
	}
	// Plain (NO_COLOR) ignores the background and has no escapes.
	p := New(newFake(), Options{Width: 80, Height: 24, Plain: true, Theme: "light"})
	if p.autoBG || strings.Contains(p.View().Content, "\x1b") {
		t.Fatal("plain has no colours")
	}
	if New(newFake(), Options{Theme: "light"}).st.light != true {
		t.Fatal("theme light")
	}
}

func TestKeyRemap(t *testing.T) {
	m := New(newFake().withHistory(1), Options{Width: 80, Height: 24, Plain: true,
		Keys: map[string][]string{"palette": {"ctrl+o"}, "temperature_up": {"f2"}, "bogus": {"f11"}}})
	if !(m.note.kind == noteErr) || !strings.Contains(m.note.text, `unknown action bogus`) {
		t.Fatalf("unknown actions are reported: %q", m.note.text)
	}
	m.Update(ctrl('p'))
	if m.pal() != nil {
		t.Fatal("Ctrl+P was remapped away")
	}
	m.Update(ctrl('o'))
	if m.pal() == nil {
		t.Fatal("Ctrl+O opens the palette")
	}
	m.Update(press(tea.KeyEscape))
	t0 := m.vals.Sampler.Temperature
	m.Update(press(tea.KeyF2))
	if m.vals.Sampler.Temperature <= t0 {
		t.Fatalf("F2 is temperature up now: %v → %v", t0, m.vals.Sampler.Temperature)
	}
	if help := strings.Join(m.helpRows(80), "\n"); !strings.Contains(help, "F2  ") || strings.Contains(help, "F3  ") {
		t.Errorf("the help does not show the remap:\n%s", help)
	}
	if settings.KeyActions()[0] != "send" {
		t.Fatal("actions")
	}
}

func TestMarkdownToggleAndPlain(t *testing.T) {
	f := newFake()
	f.msgs = []session.Message{{Role: session.User, Content: "md"}, {Role: session.Assistant, Content: "# Title\n\nSome **bold** text.\n\n- one\n- two"}}
	m := New(f, Options{Width: 80, Height: 24})
	c := m.View().Content
	if strings.Contains(c, "**bold**") || !strings.Contains(c, "• one") {
		t.Fatalf("markdown is rendered:\n%s", c)
	}
	m.Update(press(tea.KeyF12))
	if c := m.View().Content; !strings.Contains(c, "**bold**") || !strings.Contains(c, "- one") {
		t.Fatalf("F12 shows the plain text:\n%s", c)
	}
	sendText(m, "/markdown on")
	if !m.markdown {
		t.Fatal("/markdown on")
	}
	p := New(f, Options{Width: 80, Height: 24, Plain: true})
	if c := p.View().Content; strings.Contains(c, "\x1b") || !strings.Contains(c, "• one") {
		t.Fatalf("plain markdown has structure but no escapes:\n%q", c)
	}
}

// A reply streamed in random pieces looks the same as the finished reply.
func TestMarkdownStreamMatchesFinished(t *testing.T) {
	reply := "# Plan\n\nFirst a paragraph with *emphasis*,\na soft line and `code`.\n\n" +
		"- item one\n- item **two**\n  continued\n1. first\n2. second\n\n" +
		"```go\nfunc main() {\n    fmt.Println(\"日本語 🍵\") // a long comment that goes well past the width of the narrow view\n}\n```\n" +
		"> a quote\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\nThe end."
	r := rand.New(rand.NewPCG(3, 4))
	for _, w := range []int{40, 57, 80, 120} {
		f := newFake()
		var chunks []string
		for s := reply; s != ""; {
			n := min(len(s), 1+r.IntN(9))
			for n < len(s) && !utf8RuneStart(s[n]) {
				n++
			}
			chunks = append(chunks, s[:n])
			s = s[n:]
		}
		f.reply = chunks
		m := New(f, Options{Width: w, Height: 200})
		sendText(m, "go")
		for !f.drained() {
			poll(m)
			m.View()
		}
		st, tl := m.tr.streamLines()
		streamed := append(slices.Clone(st), tl...)
		want := m.tr.md.render(nil, reply, m.tr.width)
		if !slices.Equal(streamed, want) {
			t.Fatalf("width %d: streamed\n%s\nfinished\n%s", w, strings.Join(streamed, "\n"), strings.Join(want, "\n"))
		}
		for _, l := range want {
			if lw := ansi.StringWidth(l); lw != m.tr.width {
				t.Fatalf("line %q is %d wide, want %d", l, lw, m.tr.width)
			}
		}
		// The code keeps its exact text: hard-wrapped pieces join back.
		var code strings.Builder
		for _, l := range want {
			p := ansi.Strip(l)
			if strings.HasPrefix(p, "  ") {
				code.WriteString(strings.TrimRight(p[2:], " "))
			}
		}
		if !strings.Contains(code.String(), `fmt.Println("日本語 🍵") // a long comment that goes well past the width of the narrow view`) {
			t.Fatalf("width %d: code changed:\n%s", w, strings.Join(want, "\n"))
		}
	}
}

func TestSplitMarkdown(t *testing.T) {
	bs := splitMarkdown("Para one\nstill one\n\n## Head\ntext\n- a\n- b\n  more b\n\n```\nx\n\ny\n```\n* * *\n2) two\n| t | u |\n|---|---|\nafter")
	var got []string
	for _, b := range bs {
		got = append(got, fmt.Sprintf("%q code=%v item=%v blank=%v head=%v cont=%v", b.src, b.code, b.item, b.blank, b.heading, b.cont))
	}
	want := []string{
		`"Para one" code=false item=false blank=false head=false cont=false`,
		`"still one" code=false item=false blank=false head=false cont=true`,
		`"## Head" code=false item=false blank=true head=true cont=false`,
		`"text" code=false item=false blank=false head=false cont=false`,
		`"- a" code=false item=true blank=false head=false cont=false`,
		`"- b\n  more b" code=false item=true blank=false head=false cont=false`,
		`"x\n\ny" code=true item=false blank=true head=false cont=false`,
		`"* * *" code=false item=false blank=false head=false cont=false`,
		`"2) two" code=false item=true blank=false head=false cont=false`,
		`"| t | u |\n|---|---|" code=false item=false blank=false head=false cont=false`,
		`"after" code=false item=false blank=false head=false cont=false`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got\n%s", strings.Join(got, "\n"))
	}
}

func TestPanelShowsEveryKnobAndOrder(t *testing.T) {
	f := newFake()
	f.params.RepeatPenalty, f.params.FrequencyPenalty, f.params.PresencePenalty, f.params.Seed = 1.1, 0.2, 0.3, 42
	f.vals.RandomSeed, f.vals.MaxTokens = false, 77
	m := New(f, Options{Width: 120, Height: 40, Plain: true})
	c := m.View().Content
	for _, want := range []string{"repeat pen  1.1", "freq pen    0.2", "pres pen    0.3", "seed        42", "max tokens  77", "applied: penalties →"} {
		if !strings.Contains(c, want) {
			t.Errorf("panel lacks %q:\n%s", want, c)
		}
	}
	n := New(f, Options{Width: 80, Height: 24, Plain: true})
	if c := n.View().Content; !strings.Contains(c, "rep=1.1 freq=0.2 pres=0.3") {
		t.Errorf("status line lacks the penalties:\n%s", c)
	}
}

func TestLoadingFeedback(t *testing.T) {
	f := newFullFake()
	f.status = "loading model"
	m := New(f, Options{Width: 120, Height: 30, Plain: true})
	if c := m.View().Content; !strings.Contains(c, "loading model…") || !strings.Contains(c, "state      loading model") {
		t.Fatalf("status shown:\n%s", c)
	}
	f.status = ""
	f.hold, f.reply = true, nil
	sendText(m, "hi")
	poll(m)
	if c := m.View().Content; !strings.Contains(c, "prefilling 12 prompt tokens (30 reused)…") {
		t.Fatalf("prefill shown:\n%s", c)
	}
}

// Every overlay fits every size, wide characters included.
func TestOverlaysAtAnySize(t *testing.T) {
	f := newFullFake().withHistory(3)
	f.msgs = append(f.msgs, session.Message{Role: session.User, Content: "表を作って 🍵"},
		session.Message{Role: session.Assistant, Content: "| 名前 | 値 |\n|---|---|\n| 日本語 | 🍵🍵 |\n\n```\n全角のコード　です\n```"})
	for _, sz := range [][2]int{{40, 12}, {41, 13}, {60, 20}, {80, 24}, {89, 30}, {90, 30}, {120, 40}, {300, 100}, {20, 5}, {1, 1}} {
		for _, state := range []string{"plain", "palette", "popup", "pane", "help", "edit"} {
			m := New(f, Options{Width: sz[0], Height: sz[1]})
			switch state {
			case "palette":
				m.Update(ctrl('p'))
			case "popup":
				typeIn(m, "/s")
			case "pane":
				sendText(m, "/help")
			case "help":
				m.Update(press(tea.KeyF1))
			case "edit":
				m.Update(ctrl('e'))
			}
			checkFrame(t, m, sz[0], sz[1])
			m.Update(tea.WindowSizeMsg{Width: sz[1] + 30, Height: sz[0]/3 + 3})
			checkFrame(t, m, sz[1]+30, sz[0]/3+3)
			rng := rand.New(rand.NewPCG(uint64(sz[0]), uint64(sz[1])))
			for range 8 { // a small storm
				w, h := rng.IntN(310), rng.IntN(105)
				m.Update(tea.WindowSizeMsg{Width: w, Height: h})
				checkFrame(t, m, w, h)
			}
		}
	}
}

func TestCacheIsBounded(t *testing.T) {
	f := newFake().withHistory(3000)
	m := New(f, Options{Width: 120, Height: 40, Plain: true})
	m.View()
	m.Update(keyMod(tea.KeyHome, tea.ModCtrl))
	m.View()
	m.View()
	if m.tr.cached > maxCachedLines {
		t.Fatalf("%d lines cached", m.tr.cached)
	}
	n := 0
	for _, e := range m.tr.msgs {
		n += len(e.lines)
	}
	if n != m.tr.cached {
		t.Fatalf("count %d, really %d", m.tr.cached, n)
	}
	if c := m.View().Content; !strings.Contains(c, "Question 0:") {
		t.Fatalf("top:\n%s", c)
	}
}

func TestAppliedOrder(t *testing.T) {
	order := []string{"penalties", "greedy", "temperature", "top-k", "top-p", "min-p", "softmax", "draw"}
	p := sampler.Defaults()
	if got := strings.Join(appliedOrder(order, p, false), " "); got != "temperature top-p softmax draw" {
		t.Fatalf("defaults: %s", got)
	}
	p.RepeatPenalty, p.TopK, p.Temperature = 1.1, 40, 1
	if got := strings.Join(appliedOrder(order, p, false), " "); got != "penalties top-k top-p softmax draw" {
		t.Fatalf("got %s", got)
	}
	p.Greedy = true
	if got := strings.Join(appliedOrder(order, p, false), " "); got != "penalties greedy (argmax)" {
		t.Fatalf("greedy: %s", got)
	}
	if got := strings.Join(appliedOrder(append([]string{"mask"}, order...), p, true), " "); got != "mask penalties greedy (argmax)" {
		t.Fatalf("constrained greedy: %s", got)
	}
}

// The panel's applied order is the chain's: with knobs that switch each
// stage on and off in turn, it lists the stages a traced Sample ran (the
// UI once restated each stage's rule and could drift from the sampler).
func TestAppliedOrderIsTheChain(t *testing.T) {
	logits := make([]float32, 500)
	for i := range logits {
		logits[i] = float32(i%37) / 5
	}
	all := sampler.Params{Temperature: 0.8, TopNSigma: 3, TopK: 400, TypicalP: 0.99, TopP: 0.99, MinP: 0.001,
		XTCProbability: 1, XTCThreshold: 0.001, RepeatPenalty: 1.1, FrequencyPenalty: 0.1, PresencePenalty: 0.1,
		DRYMultiplier: 0.8, DRYBase: 1.75, DRYPenaltyLastN: -1, MirostatTau: 5, MirostatEta: 0.1, Seed: 1}
	for _, c := range []struct {
		name string
		set  func(p *sampler.Params)
	}{
		{"all on", func(p *sampler.Params) {}},
		{"defaults", func(p *sampler.Params) { *p = sampler.Defaults() }},
		{"all off", func(p *sampler.Params) {
			*p = sampler.Params{Temperature: 1, TopP: 1, MinP: 1, TypicalP: 1, XTCThreshold: 0.6, DRYBase: 0.5}
		}},
		{"mirostat", func(p *sampler.Params) { p.Mirostat = 2 }},
		{"greedy", func(p *sampler.Params) { p.Greedy = true }},
		{"greedy, mirostat", func(p *sampler.Params) { p.Greedy, p.Mirostat = true, 1 }},
		{"no penalties", func(p *sampler.Params) {
			p.RepeatPenalty, p.FrequencyPenalty, p.PresencePenalty, p.DRYPenaltyLastN = 1, 0, 0, 0
		}},
	} {
		for _, masked := range []bool{false, true} {
			p := all
			c.set(&p)
			s := sampler.New(len(logits), p)
			if masked {
				s.SetMask([]uint64{^uint64(0) >> 1, ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0), ^uint64(0)})
			}
			var tr sampler.Trace
			s.SetTrace(&tr)
			if _, err := s.Sample(logits, []int{1, 2, 3, 1, 2}); err != nil {
				t.Fatal(err)
			}
			var ran []string
			for i, name := range sampler.Order() {
				if tr.Applied[i] {
					if i == sampler.StageGreedy {
						name = "greedy (argmax)"
					}
					ran = append(ran, name)
				}
			}
			if got := appliedOrder(sampler.Order(), p, masked); !slices.Equal(got, ran) {
				t.Errorf("%s, masked %v: panel %q, sampler ran %q", c.name, masked, got, ran)
			}
		}
	}
}

// Under /format the panel names the constraint, the ids it allowed at the
// last step and the mask time, and the applied order starts with the mask.
func TestPanelShowsConstraint(t *testing.T) {
	f := newFake()
	f.order = append([]string{"mask"}, f.order...)
	m := New(f, Options{Width: 120, Height: 40, Plain: true})
	if c := m.View().Content; strings.Contains(c, "format") || strings.Contains(c, "mask") {
		t.Fatalf("no constraint, yet the panel shows one:\n%s", c)
	}
	f.constraint = session.ConstraintStats{Spec: "schema person.json", Allowed: 312, MaskTime: 1500}
	poll(m)
	c := m.View().Content
	for _, want := range []string{"format     schema person.json", "mask       312 ids · 1.5 µs", "applied: mask → temperature"} {
		if !strings.Contains(c, want) {
			t.Errorf("panel lacks %q:\n%s", want, c)
		}
	}
}

// Scrolled up, a resize storm re-wraps once, after it settles.
func TestResizeWhileScrolledRewrapsOnce(t *testing.T) {
	m := newTest(newFake().withHistory(50), 80, 24)
	m.Update(press(tea.KeyPgUp))
	w0 := m.tr.width
	var last tea.Cmd
	for w := 60; w < 100; w += 7 {
		_, last = m.Update(tea.WindowSizeMsg{Width: w, Height: 24})
		checkFrame(t, m, w, 24)
		if m.tr.width != w0 {
			t.Fatal("no re-wrap during the storm")
		}
	}
	m.Update(last())
	if m.tr.width != m.layout().mainW {
		t.Fatalf("width %d after the storm", m.tr.width)
	}
	checkFrame(t, m, 95, 24)
}

// A very long open paragraph streams as plain text; finished, it is markdown.
func TestLongOpenParagraphStreamsPlain(t *testing.T) {
	f := newFake()
	f.reply = strings.SplitAfter(strings.Repeat("some **bold** words ", 100), " ")
	f.hold = true
	m := New(f, Options{Width: 80, Height: 100})
	sendText(m, "go")
	for !f.drained() {
		poll(m)
	}
	if c := m.View().Content; !strings.Contains(c, "**bold**") {
		t.Fatalf("the long open paragraph is plain:\n%s", c)
	}
	f.mu.Lock()
	f.hold = false
	f.mu.Unlock()
	finishReply(m, f)
	if c := m.View().Content; strings.Contains(c, "**bold**") || !strings.Contains(c, "bold") {
		t.Fatalf("finished, it is markdown:\n%s", c)
	}
}

func TestPanelShowsPoolAndSpeculation(t *testing.T) {
	f := newFake()
	f.vals.Spec = "ngram"
	m := New(f, Options{Width: 120, Height: 50, Plain: true})
	m.stats.KV = session.KVStats{Blocks: 64, Used: 10, HitRate: 0.5, Evictions: 3, FormatK: "int8"}
	m.stats.Spec = session.SpecStats{Method: "ngram", K: 4, Acceptance: 0.625, TokensPerPass: 2.5, MeanAccepted: 2.75,
		PerPosition: [16]float64{0.9, 0.7, 0.5, 0.25}}
	c := m.View().Content
	for _, want := range []string{"KV pool    10/64 blk", "cache hit  50% (3 evicted)", "KV k/v     int8/f32", "spec       ngram k=4", "accepted   62% · 2.5/pass",
		"mean run   2.75 tok", "by guess   90 70 50 25%"} {
		if !strings.Contains(c, want) {
			t.Errorf("panel lacks %q:\n%s", want, c)
		}
	}
	m.stats.KV.FormatK, m.stats.KV.FormatV = "fp8", "int4"
	if c := m.View().Content; !strings.Contains(c, "KV k/v     fp8/int4") {
		t.Errorf("panel lacks the fp8/int4 formats:\n%s", c)
	}
	// The pool's memory: Llama 3.2 1B's default 512 blocks of 16 f16
	// positions, and the 2,050 of a 32,768-token window.
	for bytes, want := range map[int64]string{512 * 524288: "KV pool    10/64 · 268 MB", 2050 * 524288: "KV pool    10/64 · 1.07 GB"} {
		m.stats.KV.Bytes = bytes
		if c := m.View().Content; !strings.Contains(c, want) {
			t.Errorf("panel lacks %q:\n%s", want, c)
		}
	}
}

// The config package passes its whole key map: the defaults of the actions
// it knows, with the user's changes.
func TestFullConfigKeyMap(t *testing.T) {
	full := settings.DefaultKeys()
	full["top_k_up"] = []string{"ctrl+p"} // the user takes Ctrl+P
	km, err := newKeyMap(full)
	if err != nil {
		t.Fatal(err)
	}
	for ks, want := range map[string]string{"enter": "send", "f2": "temperature_down", "alt+2": "temperature_down", "ctrl+p": "top_k_up",
		"f9": "", "ctrl+r": "regenerate", "esc": "stop", "ctrl+j": "newline"} {
		if got := km.byKey[ks]; got != want {
			t.Errorf("%s: %q, want %q", ks, got, want)
		}
	}
	if len(km.byAction["palette"]) != 0 || !km.custom["top_k_up"] || km.custom["send"] {
		t.Errorf("palette %v custom %v", km.byAction["palette"], km.custom)
	}
}

func TestTabOnTextDoesNothing(t *testing.T) {
	m := newTest(newFake(), 80, 24)
	typeIn(m, "hello world")
	m.Update(press(tea.KeyHome))
	m.Update(press(tea.KeyTab))
	typeIn(m, ">")
	if v := m.in.value(); v != ">hello world" {
		t.Fatalf("input %q", v)
	}
}

// Closed code of a known language is coloured without changing its text;
// an open block, an unknown language and plain output are not coloured.
func TestCodeHighlightKeepsText(t *testing.T) {
	code := "func main() {\n    s := \"multi\\nline `x`\" // comment\n}"
	r := newMDRenderer(newStyles(false, false))
	hl := r.highlight(code, "go")
	if hl == nil || !strings.Contains(hl[0], "\x1b[") {
		t.Fatalf("no colours: %q", hl)
	}
	for i, l := range strings.Split(code, "\n") {
		if ansi.Strip(hl[i]) != l {
			t.Fatalf("line %d: %q", i, hl[i])
		}
	}
	if r.highlight(code, "no-such-language") != nil || newMDRenderer(newStyles(true, false)).highlight(code, "go") != nil {
		t.Fatal("unknown languages and plain output are not coloured")
	}
	lines := r.block(nil, mdBlock{src: code, code: true, lang: "go", closed: true}, 60)
	open := r.block(nil, mdBlock{src: code, code: true, lang: "go"}, 60)
	for i := range lines {
		if ansi.Strip(lines[i]) != ansi.Strip(open[i]) {
			t.Fatalf("open and closed differ in text: %q %q", lines[i], open[i])
		}
	}
}

// The message being edited is marked and scrolled into view.
func TestEditedMessageShownInTranscript(t *testing.T) {
	f := newFullFake().withHistory(30)
	m := New(f, Options{Width: 80, Height: 24, Plain: true})
	for range 25 {
		m.Update(ctrl('e'))
	}
	c := m.View().Content
	if !strings.Contains(c, "✎ Question 5:") || strings.Count(c, "› Question 5:") != 1 || !strings.Contains(c, "✎ editing · Enter resends (drops later turns) · Ctrl+E earlier · Esc cancels") {
		t.Fatalf("Question 5 is marked and in view:\n%s", c)
	}
	m.Update(press(tea.KeyEscape))
	if c := m.View().Content; strings.Contains(c, "✎") || strings.Count(c, "› Question 5:") != 1 {
		t.Fatalf("Esc unmarks it:\n%s", c)
	}
	checkFrame(t, m, 80, 24)
}

// While the backend runs a command the UI does not call it: polls wait,
// keys that need it are refused, typing and scrolling work.
func TestCommandRunsOffTheLoop(t *testing.T) {
	f := newFullFake().withHistory(20)
	m := New(f, Options{Width: 80, Height: 24, Plain: true})
	m.setInput("/set temperature 0.3")
	_, cmd := m.Update(press(tea.KeyEnter))
	if m.pending == "" || len(f.commands) != 0 {
		t.Fatal("the command runs in a tea.Cmd")
	}
	polls := f.polls
	poll(m)
	m.Update(press(tea.KeyF3))
	typeIn(m, "next")
	m.Update(press(tea.KeyPgUp))
	if f.polls != polls || f.setCalls != 0 || m.in.value() != "next" || m.tr.following() {
		t.Fatalf("polls %d→%d sets %d input %q", polls, f.polls, f.setCalls, m.in.value())
	}
	if !strings.Contains(m.note.text, "still running") {
		t.Fatalf("notice %q", m.note.text)
	}
	m.Update(cmd())
	if m.pending != "" || m.vals.Sampler.Temperature != 0.3 || m.note.text != "temperature 0.3" {
		t.Fatalf("after: pending %q T %v notice %q", m.pending, m.vals.Sampler.Temperature, m.note.text)
	}
}

func TestMarkdownFollowsModeSwitch(t *testing.T) {
	f := newFullFake()
	f.info.Mode = "raw"
	m := New(f, Options{Width: 80, Height: 24})
	if m.tr.md != nil {
		t.Fatal("no markdown in raw mode")
	}
	f.info.Mode = "chat"
	m.refreshInfo()
	if m.tr.md == nil {
		t.Fatal("markdown in chat mode")
	}
}

// F11 switches the weights between float32 and int8, and Alt+S steps
// speculative decoding through its methods: typed calls to the backend
// (Apply), run between replies off the UI's loop, each confirmed.
func TestQuantAndSpecKeys(t *testing.T) {
	f := newFullFake()
	f.info.Draft = "draft15M"
	m := New(f, Options{Width: 80, Height: 24, Plain: true})
	var seen []string
	_, cmd := m.Update(press(tea.KeyF11))
	drainCommand(m, cmd)
	seen = append(seen, f.info.Quant+" "+m.note.text)
	_, cmd = m.Update(press(tea.KeyF11))
	drainCommand(m, cmd)
	seen = append(seen, f.info.Quant+" "+m.note.text)
	for range 4 {
		_, cmd = m.Update(alt('s'))
		drainCommand(m, cmd)
		seen = append(seen, f.vals.Spec+" "+m.note.text)
	}
	want := []string{
		"int8 weights int8 from the next reply (the conversation is prefilled again)",
		"f32 weights f32 from the next reply (the conversation is prefilled again)",
		"ngram speculative decoding ngram (k=4) from the next reply",
		"lookup speculative decoding lookup (k=4) from the next reply",
		"draft speculative decoding draft (k=4) from the next reply",
		"off speculative decoding off",
	}
	if !slices.Equal(seen, want) || len(f.commands) != 0 {
		t.Fatalf("got %q, want %q; /set commands %q", seen, want, f.commands)
	}
	// Bug: without a draft model, Alt+s stuck at lookup: each press tried
	// draft and was refused. It skips draft.
	f = newFullFake()
	m = New(f, Options{Width: 80, Height: 24, Plain: true})
	seen = nil
	for range 3 {
		_, cmd = m.Update(alt('s'))
		drainCommand(m, cmd)
		seen = append(seen, f.vals.Spec)
	}
	if want := []string{"ngram", "lookup", "off"}; !slices.Equal(seen, want) {
		t.Errorf("Alt+s without a draft model: %q, want %q", seen, want)
	}
}

// What was typed while the model loaded is not lost: the terminal, still
// in its line mode, turned Enter into a newline, which the input box took
// as "insert a line", so "hello" sat unsent (a new user's report). Lines
// ended by Enter are sent when the TUI starts; a line not ended stays in
// the input.
func TestTypedAhead(t *testing.T) {
	f := newFullFake()
	m := New(f, Options{Width: 80, Height: 24, Plain: true, typedAhead: "hello\r\n"})
	if !m.sendTyped {
		t.Fatal("Init will not send the typed line")
	}
	m.Update(sendTypedMsg{}) // what Init's command answers
	if !slices.Equal(f.sent, []string{"hello"}) {
		t.Fatalf("sent %q, want hello", f.sent)
	}
	f = newFullFake()
	m = New(f, Options{Width: 80, Height: 24, Plain: true, typedAhead: "half a li"})
	if m.sendTyped || len(f.sent) != 0 || m.in.value() != "half a li" {
		t.Fatalf("sent %q, input %q; want nothing sent and the line in the input", f.sent, m.in.value())
	}
}

// sgr is a Select Graphic Rendition sequence: the styles the renderer
// writes itself.
var sgr = regexp.MustCompile("\x1b\\[[0-9;:]*m")

// checkMarkdownSafe fails when rendering text as markdown writes anything
// but text and styles to the terminal.
func checkMarkdownSafe(t *testing.T, r *mdRenderer, text string) string {
	t.Helper()
	out := strings.Join(r.render(nil, text, 60), "\n")
	if !termtext.Safe(sgr.ReplaceAllString(out, ""), true) {
		t.Fatalf("%q renders to %q: control characters beside the styles", text, out)
	}
	return ansi.Strip(out)
}

// A reply's character references to control characters stay text: glamour
// decoded &#27; into an ESC, so a model could clear the screen (&#27;[2J),
// retitle the window or colour text at will through the markdown view.
func TestMarkdownControlReferencesAreText(t *testing.T) {
	r := newMDRenderer(newStyles(false, false))
	for in, want := range map[string]string{
		"hi &#27;[2J there":                 "hi &#27;[2J there",
		"&#x1b;]0;title&#7; &#155;31m":      "&#x1b;]0;title&#7; &#155;31m",
		"# &#X1B;[8mhidden":                 "&#X1B;[8mhidden",
		"a `&#27;[2J` b":                    "&#27;[2J",
		"&#65;&#x42; &amp; &#0;":            "AB &",
		"\U000F0000 &#27;":                  "\U000F0000 \uFFFD",
		"0&#01 &#4294967323; &#x10000001b;": "0&#01 &#4294967323; &#x10000001b;",
	} {
		if got := checkMarkdownSafe(t, r, in); !strings.Contains(got, want) {
			t.Errorf("%q renders as %q, want %q in it", in, got, want)
		}
	}
}

func FuzzMarkdown(f *testing.F) {
	for _, s := range []string{"hi &#27;[2J", "# a\n\n- b &#x9b;\n\n| a | b |\n|---|---|\n| &#7; | c |", "[x](&#27;) <&#27;> `&#27;`", "\\`&#27;`", "> &#8238;rtl"} {
		f.Add(s)
	}
	r := newMDRenderer(newStyles(false, false))
	f.Fuzz(func(t *testing.T, s string) {
		checkMarkdownSafe(t, r, termtext.Clean(s, false))
	})
}

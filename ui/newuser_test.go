package ui

import (
	"slices"
	"strings"
	"testing"
	"time"
	"unicode"

	"chat/config/settings"
	"chat/session"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// What a new user hit (issue 15), UI side; each test failed before its fix.

// Bug 6: /help, F1 and the error lists were cut off with "…" at the
// transcript's width, and /help listed /sessions and /quit twice. Panes
// wrap (and scroll) instead; each command is listed once.
func TestHelpPanesWrapAndListOnce(t *testing.T) {
	f := newFullFake()
	long := "/kv save|load FILE     write the KV cache to a file, or load one: a prompt that starts with its tokens skips their prefill"
	f.help = "/set KEY VALUE   change a setting\n" + long + "\n/sessions        list saved conversations\n/quit            leave chat (also /exit, /bye)"
	m := New(f, Options{Width: 60, Height: 30, Plain: true})
	sendText(m, "/help")
	c := strings.Join(m.openPane().lines(m.model), "\n")
	if strings.Contains(c, "…") || !strings.Contains(c, "skips their") || !strings.Contains(c, "prefill") {
		t.Fatalf("the help pane cuts the long line:\n%s", c)
	}
	if n := strings.Count(c, "/quit"); n != 1 {
		t.Errorf("/quit listed %d times:\n%s", n, c)
	}
	if n := strings.Count(c, "/sessions "); n != 1 {
		t.Errorf("/sessions listed %d times:\n%s", n, c)
	}
	m.Update(press(tea.KeyEscape))
	m.Update(press(tea.KeyF1))
	if c := strings.Join(m.openPane().lines(m.model), "\n"); strings.Contains(c, "…") || !m.helpShown() {
		t.Fatalf("F1 cuts lines:\n%s", c)
	}
	// An error longer than the notice lines opens in full in a pane.
	m.Update(press(tea.KeyEscape))
	m.setNotice(strings.Repeat("unknown command /x; commands: /set /show /system /model /draft /kv ", 6)+"END", true)
	if p := m.openPane(); p == nil || !strings.Contains(strings.Join(p.lines(m.model), ""), "END") {
		t.Fatalf("a long error is not shown whole:\n%s", m.View().Content)
	}
}

// On a 20-column terminal the "reached max_tokens" notice a reply ends
// with wraps to 5 rows, more than 3, so it opened in a pane over the
// transcript: the user saw the notice and not the reply. A notice may now
// take a quarter of the terminal's height before it opens a pane.
func TestNarrowNoticeLeavesTheReplyInSight(t *testing.T) {
	f := newFake()
	m := newTest(f, 20, 24)
	sendText(m, "hi")
	f.finishWith = "length"
	for !f.drained() {
		poll(m)
	}
	poll(m)
	if c := m.View().Content; m.openPane() != nil || !strings.Contains(c, "max_tokens") || !strings.Contains(c, "› hi") {
		t.Errorf("the notice covers the reply:\n%s", c)
	}
}

// Bug 9: two notices arriving together showed only the second (older turns
// dropped and the length limit); the pane's "Esc closes" stayed after the
// pane closed; F11 gave no confirmation (that is TestQuantAndSpecKeys).
func TestNoticesTogetherAndPaneHint(t *testing.T) {
	f := newFake()
	m := newTest(f, 100, 30)
	sendText(m, "hi")
	f.mu.Lock()
	f.notices = []string{"the model no longer sees the 2 oldest messages"}
	f.mu.Unlock()
	for !f.drained() {
		poll(m)
	}
	f.finishWith = "length"
	poll(m)
	c := m.View().Content
	if !strings.Contains(c, "no longer sees the 2 oldest messages") || !strings.Contains(c, "reached max_tokens (256)") {
		t.Fatalf("both notices should show:\n%s", c)
	}
	// Bug: a chat reply cut by the end of the context (-c 64 -n 1000) said
	// "reached max_tokens (1000)".
	f = newFake()
	m = newTest(f, 100, 30)
	sendText(m, "hi")
	f.finishWith, f.fullKV = "length", true
	for !f.drained() {
		poll(m)
	}
	poll(m)
	if c := m.View().Content; !strings.Contains(c, "the reply filled the 256-token context; the next turn drops the oldest") || strings.Contains(c, "max_tokens") {
		t.Errorf("a reply that filled the context:\n%s", c)
	}
	m.showText("line one\nline two")
	if !strings.Contains(m.View().Content, "Esc closes") {
		t.Fatal("the pane's hint is missing")
	}
	m.Update(press(tea.KeyEscape))
	if c := m.View().Content; strings.Contains(c, "Esc closes") || strings.Contains(c, "line two") {
		t.Fatalf("the pane and its hint should be gone:\n%s", c)
	}
}

// Bug 8: a system prompt set mid-chat was drawn at the top, above the turns
// sent without it. The transcript shows messages in the backend's order.
func TestSystemPromptShownWhereItWasSet(t *testing.T) {
	f := newFake().withHistory(1)
	f.info.System = "Be brief."
	f.msgs = append(f.msgs, session.Message{Role: session.System, Content: "Be brief."})
	m := newTest(f, 80, 24)
	c := m.View().Content
	q, sys := strings.Index(c, "Question 0"), strings.Index(c, "# Be brief.")
	if q < 0 || sys < q {
		t.Fatalf("the system prompt is not after the turn before it:\n%s", c)
	}
}

// Bug 13: a paste of about 800 KB was silently dropped (the textarea's row
// limit). It is held aside, shown as a marker, and sent whole.
func TestBigPasteIsKept(t *testing.T) {
	f := newFake()
	m := newTest(f, 80, 24)
	big := strings.Repeat("All work and no play makes Jack a dull boy. ", 800<<10/44) + "THE END"
	m.Update(tea.PasteMsg{Content: big})
	if v := m.in.value(); !strings.Contains(v, "[pasted 800.") || !strings.Contains(v, "#1]") {
		t.Fatalf("input after the paste: %.80q", v)
	}
	typeIn(m, " Summarize.")
	m.Update(press(tea.KeyEnter))
	sent, _, _, _ := f.snapshot()
	if len(sent) != 1 || sent[0] != big+" Summarize." {
		t.Fatalf("sent %d messages; the paste is not sent whole", len(sent))
	}
	// Held aside from 16 KB or 200 lines; a smaller paste goes in as text.
	for _, c := range []struct {
		paste string
		held  bool
	}{{strings.Repeat("x", 16<<10), true}, {strings.Repeat("x", 16<<10-1), false}, {strings.Repeat("y\n", 200), true}, {strings.Repeat("y\n", 199), false}} {
		m := newTest(newFake(), 80, 24)
		m.Update(tea.PasteMsg{Content: c.paste})
		if held := strings.Contains(m.in.value(), "[pasted "); held != c.held {
			t.Errorf("a paste of %d bytes, %d lines: held aside %v", len(c.paste), strings.Count(c.paste, "\n"), held)
		}
	}
	// Bug: a file of 250 lines pasted said "251 lines" (its final newline
	// counted as a line), and a copied one-line reply "1 lines".
	m = newTest(newFake(), 80, 24)
	m.Update(tea.PasteMsg{Content: strings.Repeat("row\n", 250)})
	if v := m.in.value(); !strings.Contains(v, ", 250 lines #1]") {
		t.Errorf("a 250-line paste: %q", v)
	}
	for text, want := range map[string]string{"one": "1 line", "one\n": "1 line", "a\nb": "2 lines", "": "1 line"} {
		if got := lineCount(text); got != want {
			t.Errorf("lineCount(%q) = %q, want %q", text, got, want)
		}
	}
}

// Bug 11: the panel showed the last reply's speculation until the next
// reply. It shows the setting at once, and the last reply's numbers only
// when they are for that setting; a prefill too short to time gets no rate.
func TestPanelSpeculationIsCurrent(t *testing.T) {
	f := newFake()
	m := New(f, Options{Width: 120, Height: 50, Plain: true})
	m.stats.Spec = session.SpecStats{Method: "ngram", K: 4, Acceptance: 0.6, TokensPerPass: 2}
	f.vals.Spec = "ngram"
	m.vals = f.Settings()
	if c := m.View().Content; !strings.Contains(c, "spec       ngram k=4") || !strings.Contains(c, "accepted   60%") {
		t.Fatalf("ngram:\n%s", c)
	}
	_, cmd := m.Update(alt('s')) // ngram → lookup
	drainCommand(m, cmd)
	c := m.View().Content
	if !strings.Contains(c, "spec       lookup k=4") || strings.Contains(c, "accepted   60%") || !strings.Contains(c, "after next reply") {
		t.Fatalf("after switching to lookup the panel still shows ngram's numbers:\n%s", c)
	}
	m.stats = session.Stats{PromptTokens: 40, ReusedTokens: 39}
	m.panel.lines = nil
	if c := m.View().Content; !strings.Contains(c, "prefill    1 tok") || strings.Contains(c, "tok/s") && strings.Contains(c, "prefill    7") {
		t.Fatalf("a 1-token prefill:\n%s", c)
	}
}

// Ctrl+O shows the panel over the transcript on a narrow terminal, and
// the input shows its token count while typing.
func TestPanelOverlayAndTokenCount(t *testing.T) {
	f := newFullFake()
	m := New(f, Options{Width: 80, Height: 24, Plain: true})
	m.Update(ctrl('o'))
	if c := m.View().Content; !strings.Contains(c, "│ temperature 0.8") || !strings.Contains(c, "Esc closes the panel") {
		t.Fatalf("no overlay:\n%s", c)
	}
	// One column of 18 rows cut the last counters; two columns hold them.
	if c := m.View().Content; !strings.Contains(c, "│ generated  0 tok") || !strings.Contains(c, "│ Speed") {
		t.Fatalf("the overlay cuts the panel at 80x24:\n%s", c)
	}
	m.Update(press(tea.KeyEscape))
	if c := m.View().Content; strings.Contains(c, "│ temperature") {
		t.Fatal("Esc closes the overlay")
	}
	typeIn(m, "four words right here")
	if c := m.View().Content; !strings.Contains(c, "4 tokens · Enter send") {
		t.Fatalf("no token count:\n%s", c)
	}
}

// Turns that no longer fit the context stay on screen, dimmed, with a line
// after the last of them saying the model does not see them.
func TestDroppedTurnsAreMarked(t *testing.T) {
	f := newFake().withHistory(2)
	f.msgs[0].Dropped, f.msgs[1].Dropped = true, true
	m := New(f, Options{Width: 100, Height: 30, Plain: true})
	c := m.View().Content
	cut, q1 := strings.Index(c, "the model no longer sees the messages above"), strings.Index(c, "Question 1")
	if cut < 0 || q1 < cut || strings.Index(c, "Answer 0") > cut {
		t.Fatalf("the cut is not marked after the dropped turn:\n%s", c)
	}
}

// Ctrl+C with text in the input quit the app and lost the text, where a
// shell or ollama's prompt clears the line. It clears the input (and
// cancels an edit); only on an empty idle prompt does it quit.
func TestCtrlCClearsTheInput(t *testing.T) {
	m := New(newFullFake().withHistory(1), Options{Width: 80, Height: 24, Plain: true})
	typeIn(m, "a long draft")
	if _, cmd := m.Update(ctrl('c')); cmd != nil {
		if _, quit := cmd().(tea.QuitMsg); quit {
			t.Fatal("Ctrl+C with typed text quits")
		}
	}
	if m.in.value() != "" || !strings.Contains(m.note.text, "input cleared · Ctrl+C again quits") {
		t.Fatalf("input %q, notice %q", m.in.value(), m.note.text)
	}
	m.Update(ctrl('e'))
	if m.editing < 0 {
		t.Fatal("Ctrl+E does not edit")
	}
	m.Update(ctrl('c'))
	if m.editing >= 0 || m.in.value() != "" {
		t.Fatalf("Ctrl+C does not cancel the edit: editing %d, input %q", m.editing, m.in.value())
	}
	if _, cmd := m.Update(ctrl('c')); cmd == nil {
		t.Fatal("Ctrl+C on an empty prompt should quit")
	} else if _, ok := cmd().(tea.QuitMsg); !ok {
		t.Fatal("Ctrl+C on an empty prompt should quit")
	}
}

// The help named Alt+S, Alt+N, Alt+I... for keys bound to Alt+s, Alt+n,
// Alt+i, in the list where Alt+T is Alt+Shift+t: pressed as written, they
// did nothing. Every Alt+letter the help names is now the key that works.
func TestHelpNamesAltLettersAsPressed(t *testing.T) {
	km, err := newKeyMap(nil)
	if err != nil {
		t.Fatal(err)
	}
	seen := 0
	for _, a := range settings.Actions() {
		for name := range strings.FieldsSeq(km.keysOf(a.Name)) {
			l, ok := strings.CutPrefix(name, "Alt+")
			if !ok || len(l) != 1 || !unicode.IsLetter(rune(l[0])) {
				continue
			}
			c := rune(l[0])
			k := alt(c) // Alt+t: ESC t
			if unicode.IsUpper(c) {
				k = tea.KeyPressMsg{Code: unicode.ToLower(c), ShiftedCode: c, Mod: tea.ModAlt | tea.ModShift} // Alt+T: ESC T
			}
			if got := km.action(k); got != a.Name {
				t.Errorf("the help says %s for %s, which does %q", name, a.Name, got)
			}
			seen++
		}
	}
	if seen < 10 {
		t.Fatalf("only %d Alt+letter keys in the help", seen)
	}
}

// The panel's bound line, "bound 0.77 ms/tok · measured 2 ms", is wider
// than the 30-column panel, so the measured half was always cut off ("mea…").
// A long value goes on under itself.
func TestPanelKeepsTheMeasuredTime(t *testing.T) {
	m := newTest(newFake(), 100, 30)
	poll(m)
	m.stats.DecodeBound = 770 * time.Microsecond
	m.stats.DecodeTokS = 500
	got := strings.Join(m.cachedPanel(panelWidth, 30), "\n")
	if strings.Contains(got, "…") || !strings.Contains(got, "bound      0.77 ms/tok ·") || !strings.Contains(got, "measured 2 ms") {
		t.Fatalf("panel:\n%s", got)
	}
	// Without a row to spare the value is cut as before, so the lines
	// below it (the speculation's, last) are not pushed off.
	tall := m.panelLines(panelWidth, 100)
	n := 0
	for _, l := range tall {
		if l != "" {
			n++
		}
	}
	tight := m.cachedPanel(panelWidth, n-1)
	if last := tall[len(tall)-1]; strings.TrimRight(tight[len(tight)-1], " ") != last || !strings.Contains(strings.Join(tight, "\n"), "bound      0.77 ms/tok · mea…") {
		t.Fatalf("tight panel loses %q:\n%s", last, strings.Join(tight, "\n"))
	}
}

// At 100 columns transcript text ran up to the panel's separator: a line
// that filled the transcript touched it. A blank column keeps them apart,
// beside the transcript and over it (Ctrl+O below 90 columns).
func TestPanelGap(t *testing.T) {
	long := strings.Repeat("x", 400) // wraps filling every row
	for w := 60; w <= 160; w++ {
		f := newFake()
		f.msgs = []session.Message{{Role: session.User, Content: long}, {Role: session.Assistant, Content: long}}
		m := newTest(f, w, 30)
		if !m.layout().panel {
			m.Update(ctrl('o'))
		}
		touching, filled := 0, 0
		for _, l := range strings.Split(ansi.Strip(m.View().Content), "\n") {
			r := []rune(l)
			i := slices.Index(r, '│')
			if i < 2 {
				continue
			}
			if r[i-1] != ' ' {
				touching++
			}
			if r[i-2] == 'x' {
				filled++
			}
		}
		if touching > 0 || filled == 0 {
			t.Fatalf("%d columns: %d rows touch the panel, %d reach its gap:\n%s", w, touching, filled, ansi.Strip(m.View().Content))
		}
	}
}

// A notice of two or three rows (an unknown /set key lists the settings)
// wrapped at the full width and then indented its later rows by two
// columns, so each lost its last word to the edge ("ignore_eos, quan…").
// Every word shows now, and no row is wider than the terminal.
func TestNoticeRowsKeepEveryWord(t *testing.T) {
	for _, w := range []int{40, 61, 80, 110} {
		m := New(newFake(), Options{Width: w, Height: 30, Plain: true})
		var words []string
		for i := range 24 {
			words = append(words, "word"+string(rune('a'+i))+strings.Repeat("x", i%5))
		}
		text := strings.Join(words, ", ")
		m.setNotice(text, true)
		if m.openPane() != nil {
			continue // too long for the notice rows: shown whole in a pane
		}
		rows := strings.Join(m.note.rows, "\n")
		for _, row := range m.note.rows {
			if ansi.StringWidth(row) > w {
				t.Errorf("width %d: the row %q is %d wide", w, row, ansi.StringWidth(row))
			}
		}
		for _, word := range words {
			if !strings.Contains(rows, word) {
				t.Errorf("width %d: %q is missing from the notice:\n%s", w, word, rows)
			}
		}
		for _, line := range strings.Split(m.View().Content, "\n") {
			if strings.Contains(line, "…") && strings.Contains(line, "word") {
				t.Errorf("width %d: a notice row is cut: %q", w, line)
			}
		}
	}
}

// ollama's multi-line input: typing """ and Enter sent the three quotes to
// the model. Now """ opens a multi-line message, Enter adds lines, and a
// line ending with """ sends what is between.
func TestOllamaTripleQuotes(t *testing.T) {
	f := newFake()
	f.silent = true
	m := newTest(f, 80, 24)
	m.setInput(`"""`)
	m.Update(press(tea.KeyEnter))
	if len(f.sent) != 0 || m.in.value() != "\"\"\"\n" {
		t.Fatalf(`""" then Enter: sent %q, input %q`, f.sent, m.in.value())
	}
	m.in.ta.InsertString("Hello,")
	m.Update(press(tea.KeyEnter))
	m.in.ta.InsertString(`world."""`)
	_, cmd := m.Update(press(tea.KeyEnter))
	drainCommand(m, cmd)
	if len(f.sent) != 1 || f.sent[0] != "Hello,\nworld." {
		t.Fatalf("sent %q, want the text between the quotes", f.sent)
	}
	for range maxQuietPolls {
		poll(m)
	}
	sendText(m, `"""one line"""`)
	if len(f.sent) != 2 || f.sent[1] != "one line" {
		t.Fatalf("sent %q", f.sent)
	}
	// Raw mode continues the text as typed.
	for range maxQuietPolls {
		poll(m)
	}
	m.raw = true
	sendText(m, `"""`)
	if len(f.sent) != 3 || f.sent[2] != `"""` {
		t.Fatalf("raw mode: sent %q", f.sent)
	}
}

// Bug: an escape sequence the model made of several tokens ("\x1b", "[31m")
// lost only its ESC while the reply streamed, and "[31m" showed (in raw
// mode it stayed). The streamed pieces are sanitised as one text.
func TestSplitEscapeSequenceWhileStreaming(t *testing.T) {
	for _, mode := range []string{"chat", "raw"} {
		f := newFake()
		f.info.Mode = mode
		f.reply = []string{"Once\x1b", "[31", "mRED\x1b]0;ti", "tle\x07 end"}
		f.hold = true
		m := New(f, Options{Width: 80, Height: 24})
		sendText(m, "go")
		for !f.drained() {
			poll(m)
		}
		if c := ansi.Strip(m.View().Content); strings.Contains(c, "[31") || strings.Contains(c, "title") || !strings.Contains(c, "OnceRED end") {
			t.Errorf("%s mode, streaming:\n%s", mode, c)
		}
	}
}

// A notice too long for a narrow terminal's rows opens in a pane over the
// transcript. Widened, the terminal kept the pane, which then hid the
// whole transcript behind a two-line notice, and the rows lost their
// "Esc closes" hint, so nothing said how to get the text back. On a
// resize the notice is placed again as a new one would be.
func TestResizedNoticeLeavesItsPane(t *testing.T) {
	m := newTest(newFake(), 20, 12)
	long := "the text outgrew the 256-token context: the model sees only its latest tokens (the course's window rule: it keeps the latest 128 and goes on from them each time the context fills)"
	m.setNotice(long, false)
	if m.openPane() == nil {
		t.Fatalf("20×12: the notice did not open a pane:\n%s", m.View().Content)
	}
	m.Update(tea.WindowSizeMsg{Width: 24, Height: 12})
	if m.openPane() == nil || !strings.Contains(m.View().Content, "(in full above") {
		t.Fatalf("24×12: the pane closed or its hint is gone:\n%s", m.View().Content)
	}
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 30})
	c := ansi.Strip(m.View().Content)
	if m.openPane() != nil || !strings.Contains(c, "fills)") || strings.Contains(c, "(in full above") {
		t.Fatalf("200×30: the notice fits its rows, but the pane stays:\n%s", c)
	}
	m.Update(tea.WindowSizeMsg{Width: 20, Height: 12})
	if m.openPane() == nil || !strings.Contains(m.View().Content, "(in full above") {
		t.Fatalf("20×12 again: the notice does not fit, and no pane shows it:\n%s", m.View().Content)
	}
	// Another pane open (F1's help) is left as it is.
	m.Update(tea.WindowSizeMsg{Width: 200, Height: 30})
	m.setNotice("model not found", true)
	m.Update(press(tea.KeyF1))
	m.Update(tea.WindowSizeMsg{Width: 20, Height: 12})
	if !m.helpShown() {
		t.Fatalf("a resize closed the help:\n%s", m.View().Content)
	}
	m.Update(press(tea.KeyEscape))
	m.setNotice(long, false)
	// Closed with Esc, the pane stays closed when the terminal is resized.
	m.Update(press(tea.KeyEscape))
	m.Update(tea.WindowSizeMsg{Width: 22, Height: 12})
	if m.openPane() != nil {
		t.Fatalf("a closed notice pane opened again on a resize:\n%s", m.View().Content)
	}
}

// A notice may take as many rows as the layout shows it, no more: on a
// 12-row terminal the layout shows 2 but a notice could take 3 before it
// opened a pane, so the third row, the pane's "Esc closes" hint or the end
// of a three-row warning, was cut off unseen. At every height, a notice
// is either whole in the rows or in a pane the rows say how to close.
func TestNoticeRowsFitTheLayout(t *testing.T) {
	for _, words := range []int{6, 9, 30} {
		text := strings.TrimSpace(strings.Repeat("word ", words-1)) + " END"
		for h := 3; h <= 40; h++ {
			for _, w := range []int{20, 40, 120} {
				m := newTest(newFake(), w, h)
				if h%2 == 1 { // a taller input leaves fewer rows
					m.in.setValue("one\ntwo\nthree")
					m.Update(tea.WindowSizeMsg{Width: w, Height: h})
				}
				m.setNotice(text, false)
				c := ansi.Strip(m.View().Content)
				if p := m.openPane(); p == nil && !strings.Contains(c, "END") {
					t.Errorf("%d words, %d×%d: the notice is cut and no pane shows it:\n%s", words, w, h, c)
				} else if p != nil && !strings.Contains(c, "(in full above") {
					t.Errorf("%d words, %d×%d: the notice opened a pane but the rows do not say Esc closes it:\n%s", words, w, h, c)
				}
			}
		}
	}
}

// A small model writes a whole reply in under a second, so the Ctrl+C
// pressed to stop it often came a moment after it ended, on the idle
// prompt, and quit the app. A reply that ended by itself now takes one
// Ctrl+C that stops nothing and says so; the next one quits (llama-cli's
// second Ctrl+C). Any other key in between, or a Ctrl+C that stopped the
// reply, leaves the single Ctrl+C quitting.
func TestCtrlCJustAfterAReplyDoesNotQuit(t *testing.T) {
	quits := func(cmd tea.Cmd) bool {
		if cmd == nil {
			return false
		}
		_, ok := cmd().(tea.QuitMsg)
		return ok
	}
	f := newFake()
	m := newTest(f, 80, 24)
	sendText(m, "hi")
	for range len(f.reply) + 2 {
		poll(m)
	}
	if m.busy {
		t.Fatal("the reply did not end")
	}
	if _, cmd := m.Update(ctrl('c')); quits(cmd) {
		t.Fatal("the Ctrl+C right after a reply ended by itself quit")
	}
	if !strings.Contains(m.note.text, "the reply had already ended · Ctrl+C again quits") {
		t.Fatalf("notice %q", m.note.text)
	}
	if _, cmd := m.Update(ctrl('c')); !quits(cmd) {
		t.Fatal("the second Ctrl+C did not quit")
	}

	// A key pressed after the reply: the Ctrl+C is meant, it quits.
	sendText(m, "again")
	for range len(f.reply) + 2 {
		poll(m)
	}
	m.Update(press(tea.KeyPgUp))
	if _, cmd := m.Update(ctrl('c')); !quits(cmd) {
		t.Fatal("Ctrl+C after another key did not quit")
	}

	// A reply stopped with Ctrl+C: the next one quits, as the notice says.
	f.hold = true
	sendText(m, "and again")
	poll(m)
	m.Update(ctrl('c'))
	poll(m)
	if _, cmd := m.Update(ctrl('c')); !quits(cmd) {
		t.Fatalf("Ctrl+C after a stopped reply did not quit; notice %q", m.note.text)
	}
}

// A reply stopped before its first token said "the text so far is kept"
// over an empty reply.
func TestStopBeforeTheFirstToken(t *testing.T) {
	f := newFake()
	f.hold = true
	m := newTest(f, 80, 24)
	sendText(m, "hi")
	m.Update(ctrl('c'))
	poll(m)
	if m.busy || m.note.text != "stopped before the first token · Ctrl+C again quits" {
		t.Fatalf("busy %v, notice %q", m.busy, m.note.text)
	}
}

// Enter pressed while a command still ran ("/set max_tokens 20", Enter,
// "again", Enter, typed fast or by a script) was refused with "wait: ...
// is still running" that the command's answer then covered, so the message
// sat in the input unsent. It is sent when the command is done.
func TestEnterWhileACommandRunsSendsAfterIt(t *testing.T) {
	f := newFullFake()
	m := New(f, Options{Width: 80, Height: 24, Plain: true})
	m.setInput("/set temperature 0.3")
	_, cmd := m.Update(press(tea.KeyEnter))
	if m.pending == "" {
		t.Fatal("the command does not run off the loop")
	}
	typeIn(m, "again")
	m.Update(press(tea.KeyEnter))
	if len(f.sent) != 0 || !strings.Contains(m.note.text, "sent when /set temperature 0.3 is done") {
		t.Fatalf("sent %q while the command ran; notice %q", f.sent, m.note.text)
	}
	m.Update(cmd())
	if !slices.Equal(f.sent, []string{"again"}) || m.in.value() != "" || !m.busy || m.vals.Sampler.Temperature != 0.3 {
		t.Fatalf("after the command: sent %q, input %q, busy %v, T %v", f.sent, m.in.value(), m.busy, m.vals.Sampler.Temperature)
	}
}

// A notice too long for its rows opens in a pane, and the rows say
// "(in full above · Esc closes)". Closed with Esc, the pane went but the
// rows kept saying "in full above" over the transcript. Closing the pane
// dismisses the notice.
func TestClosedNoticePaneLeavesNoPointer(t *testing.T) {
	m := newTest(newFake(), 36, 8)
	m.setNotice("-ngl is ignored: this app runs on the CPU · --system is used in chat mode only: this model runs in raw mode, which continues the prompt as text", false)
	if m.openPane() == nil || !strings.Contains(m.View().Content, "(in full above") {
		t.Fatalf("36×8: the notice did not open a pane:\n%s", m.View().Content)
	}
	m.Update(press(tea.KeyEscape))
	if c := ansi.Strip(m.View().Content); m.openPane() != nil || strings.Contains(c, "in full above") || strings.Contains(c, "-ngl") {
		t.Fatalf("after Esc:\n%s", c)
	}
	checkFrame(t, m, 36, 8)
}

// A mistyped command got the session's list of commands, which lacks the
// UI's own: /copy, /markdown, /theme, /edit, /view, /keys were nowhere in
// the one list a user is shown. The list has them, each once.
func TestUnknownCommandListsTheUIsToo(t *testing.T) {
	f := newFullFake()
	m := New(f, Options{Width: 100, Height: 30, Plain: true})
	sendText(m, "/frobnicate")
	for _, c := range uiCommands {
		if n := strings.Count(m.note.text+" ", " "+c.name+" "); n != 1 {
			t.Errorf("%s is listed %d times: %q", c.name, n, m.note.text)
		}
	}
	if !strings.HasPrefix(m.note.text, "unknown command /frobnicate; commands: /set /show /sessions /help /quit") {
		t.Errorf("notice %q", m.note.text)
	}
	// A UI command's start is offered as the session offers its own.
	sendText(m, "/cop")
	if !strings.HasPrefix(m.note.text, "unknown command /cop (did you mean /copy?); commands: ") {
		t.Errorf("notice %q", m.note.text)
	}
}

// /load alone was "usage: /load NAME|ID|N": ollama's and a shell's users
// type the command first and expect to be asked which; it opens the
// conversations picker, as /sessions does.
func TestLoadAloneOpensThePicker(t *testing.T) {
	f := newFullFake()
	m := New(f, Options{Width: 80, Height: 24, Plain: true})
	sendText(m, "/load")
	if m.pal() == nil || len(m.pal().items) != 2 || m.pending != "" {
		t.Fatalf("no picker (pending %q):\n%s", m.pending, m.View().Content)
	}
}

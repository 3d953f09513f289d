package ui

import (
	"os"
	"strings"
	"time"

	"chat/config/settings"
	"chat/session"

	tea "charm.land/bubbletea/v2"
)

// Model is the bubbletea model. It is a handle on shared state, so copies
// made by bubbletea all see the same transcript caches.
type Model struct{ *model }

type model struct {
	b    Backend
	opts Options
	st   *styles
	info session.Info
	raw  bool

	sendTyped bool // Init sends the lines typed while the model loaded (takeTypedAhead)

	width, height int

	// The components (focus.go): each draws in the size it is given.
	tr    *transcript
	in    *inputBox
	panel panel
	focus []layer // the focus stack: opened layers, bottom to top

	busy       bool // a reply is being generated
	sawBusy    bool // the backend has reported this reply as busy at least once
	quietPolls int  // polls since Send that said neither Busy nor Done
	stopping   bool // Stop was asked for and Done has not come yet
	quitHint   bool // the quit key stopped the reply: say it quits on the idle prompt
	// endedAlone: the last reply ended by itself and no key was pressed
	// since. A quit key then was most likely pressed to stop that reply,
	// which ended a moment before (a small model writes a reply in under a
	// second): it does not quit, and says that a second press does.
	endedAlone bool
	state      string
	stats      session.Stats
	vals       settings.Values // the backend's settings, reread after every change
	order      []string

	note note // the notice lines (notice.go)

	history []string // texts sent, oldest first
	histPos int      // index in history being shown, -1 when not browsing

	keys     keyMap
	markdown bool // replies rendered as markdown
	light    bool // light theme
	autoBG   bool // the theme follows the terminal's background

	compl   completion
	cmdHelp map[string]string // the backend's commands and what they do, from its /help
	tokens  struct {          // the token count of the input, for the hint line
		text string
		n    int
	}

	editing int // index in Backend.Messages() of the message being edited, -1 if none

	pending    string        // a command the backend is running (commands.go), "" if none
	sendQueued bool          // Enter was pressed while it ran: the input is submitted when it is done
	cmdDone    chan struct{} // closed when the last command run returned

	pollGen   int // ticks of older generations are dropped
	rewrapGen int // the last resize; older rewrapMsgs are dropped

	views viewData // what the views draw (views.go)
}

// New builds the model for backend b. Run uses it; tests drive it directly
// or through teatest.
func New(b Backend, opts Options) Model {
	opts = opts.withDefaults()
	light := opts.Theme == "light"
	st := newStyles(opts.Plain, light)
	m := &model{b: b, opts: opts, st: st, state: "idle", histPos: -1, editing: -1,
		light: light, markdown: !opts.NoMarkdown}
	m.autoBG = !opts.Plain && (opts.Theme == "" || opts.Theme == "auto")
	km, keysErr := newKeyMap(opts.Keys)
	m.keys = km
	m.info = b.Info()
	m.raw = m.info.Mode == "raw"
	m.tr = newTranscript(st, m.raw, opts.Width)
	m.tr.setLook(st, m.markdown)
	m.in = newInputBox(st, m.raw, m.keys.byAction["newline"])
	m.loadHistory()
	m.vals = b.Settings()
	m.syncViews()
	m.order = cleanOrder(b.SamplerOrder())
	m.syncMessages()
	m.resize(opts.Width, opts.Height)
	if opts.Notice != "" {
		m.setNotice(opts.Notice, false)
	}
	m.takeTypedAhead(opts.typedAhead)
	if keysErr != nil {
		m.setNotice(keysErr.Error(), true)
	}
	return Model{m}
}

// Run runs the UI in the terminal's alternate screen until the user quits,
// then stops any reply still being generated.
func Run(b Backend, opts Options) error {
	if os.Getenv("NO_COLOR") != "" {
		opts.Plain = true
	}
	opts.typedAhead = typedAhead(os.Stdin)
	p := tea.NewProgram(New(b, opts))
	fm, err := p.Run()
	if m, ok := fm.(Model); ok && m.cmdDone != nil {
		// Quit while the backend ran a command: let it finish first.
		select {
		case <-m.cmdDone:
		case <-time.After(10 * time.Second):
		}
	}
	b.Stop()
	return err
}

func (m Model) Init() tea.Cmd {
	cmds := []tea.Cmd{m.tick()}
	if m.autoBG {
		cmds = append(cmds, tea.RequestBackgroundColor)
	}
	if m.sendTyped {
		cmds = append(cmds, func() tea.Msg { return sendTypedMsg{} })
	}
	return tea.Batch(cmds...)
}

// sendTypedMsg sends the lines typed while the model loaded.
type sendTypedMsg struct{}

// takeTypedAhead puts what was typed before the TUI started into the
// input: the lines ended by Enter (newlines then) are sent as one message
// when the TUI starts, a line not ended stays to be edited.
func (m *model) takeTypedAhead(s string) {
	s = cleanText(strings.ReplaceAll(s, "\r", "\n"), true)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		lines := strings.TrimSpace(s[:i])
		m.sendTyped = lines != ""
		if m.sendTyped {
			m.in.setValue(lines)
		}
		s = s[i+1:]
	}
	if !m.sendTyped && s != "" {
		m.in.setValue(s)
	}
}

func (m Model) Update(msg tea.Msg) (tea.Model, tea.Cmd) { return m, m.update(msg) }

func (m Model) View() tea.View { return m.view() }

func (m *model) update(msg tea.Msg) tea.Cmd {
	switch msg := msg.(type) {
	case tea.WindowSizeMsg:
		return m.resize(msg.Width, msg.Height)
	case rewrapMsg:
		if msg.gen == m.rewrapGen {
			m.tr.setWidth(m.layout().mainW)
		}
		return nil
	case pollMsg:
		return m.onPoll(msg)
	case sendTypedMsg:
		m.sendTyped = false
		return m.submit()
	case commandDone:
		return m.onCommandDone(msg)
	case tea.KeyPressMsg:
		return m.onKey(msg)
	case tea.MouseWheelMsg:
		m.onWheel(msg)
		return nil
	case tea.MouseMsg, tea.KeyReleaseMsg:
		return nil // clicks and drags mean nothing here; the terminal keeps selection with Shift
	case tea.PasteMsg:
		msg.Content = cleanText(msg.Content, true)
		if p, ok := m.top().(*palette); ok {
			p.setFilter(p.filter + oneLine(msg.Content))
			return nil
		}
		return m.updateInput(msg)
	case tea.BackgroundColorMsg:
		if m.autoBG {
			m.setLight(!msg.IsDark())
		}
		return nil
	}
	// Anything else (clipboard replies for Ctrl+V, ...) belongs to the input.
	return m.updateInput(msg)
}

func (m *model) updateInput(msg tea.Msg) tea.Cmd {
	before := m.in.value()
	cmd := m.in.update(msg)
	if m.in.value() != before {
		m.inputChanged()
	}
	return cmd
}

// setInput replaces the input text.
func (m *model) setInput(s string) {
	m.in.setValue(s)
	m.inputChanged()
}

// setLight switches between the light and the dark theme.
func (m *model) setLight(light bool) {
	if light == m.light && m.st.light == light {
		return
	}
	m.light = light
	m.restyle()
}

// restyle rebuilds the styles and renders everything again with them.
func (m *model) restyle() {
	m.st = newStyles(m.opts.Plain, m.light)
	m.tr.setLook(m.st, m.markdown)
	m.in.ta.SetStyles(inputStyles(m.st))
	m.in.dirty = true
	m.panel.lines = nil
	m.views.changed()
}

func (m *model) setMarkdown(on bool) {
	m.markdown = on
	m.tr.setLook(m.st, on)
	if on {
		m.setInfo("markdown on")
	} else {
		m.setInfo("markdown off: replies as plain text")
	}
}

// rewrapMsg re-wraps the transcript once a resize storm has settled.
type rewrapMsg struct{ gen int }

// rewrapDelay: while the user scrolled up, the transcript is re-wrapped
// only when no resize came for this long (every message below the view must
// be measured again at a new width; during the drag lines are cut or padded).
const rewrapDelay = 120 * time.Millisecond

// resize gives every component its size.
func (m *model) resize(w, h int) tea.Cmd {
	m.width, m.height = max(0, w), max(0, h)
	m.in.setSize(m.width, m.height)
	l := m.layout()
	m.sizeLayers()
	if m.note.text != "" {
		m.refitNote()
	}
	m.rewrapGen++
	if m.tr.following() || m.tr.width == max(1, l.mainW) {
		m.tr.setWidth(l.mainW)
		return nil
	}
	gen := m.rewrapGen
	return tea.Tick(rewrapDelay, func(time.Time) tea.Msg { return rewrapMsg{gen} })
}

// syncMessages takes the finished conversation from the backend. A backend
// that keeps its system prompt out of Messages gets it shown first.
func (m *model) syncMessages() {
	msgs := m.b.Messages()
	if m.info.System != "" && len(msgs) == 0 && m.info.Mode != "raw" {
		msgs = []session.Message{{Role: session.System, Content: m.info.System}}
	}
	m.tr.setMessages(msgs)
}

// send hands the input to the backend and starts following the reply.
func (m *model) send() tea.Cmd {
	text := sanitizeInput(m.in.text())
	if strings.HasPrefix(text, "//") {
		text = text[1:] // "//..." is text that starts with a slash
	}
	if text == "" && (!m.raw || m.in.value() != "") {
		// Blank input is not sent; in raw mode an empty one is, to let the
		// model keep going.
		return nil
	}
	if m.busy {
		m.setNotice("a reply is still being generated — Esc stops it", false)
		return nil
	}
	if err := m.b.Send(text); err != nil {
		m.setNotice(err.Error(), true)
		return nil
	}
	if text != "" {
		m.remember(text)
	}
	m.setInput("")
	return m.beginReply(text)
}

// beginReply follows a reply the backend has just started for the user
// message text ("" when the backend already lists it).
func (m *model) beginReply(text string) tea.Cmd {
	m.note = note{}
	m.pop(func(l layer) bool { _, ok := l.(*pane); return ok })
	m.busy, m.sawBusy, m.stopping, m.quietPolls = true, false, false, 0
	m.state = "generating"
	m.views.step, m.views.preview = nil, nil // the last reply's
	m.views.changed()
	m.syncMessages()
	// Messages may or may not list the new turn before the reply is done.
	if text != "" {
		if last, ok := m.tr.last(); !ok || last.Role != session.User ||
			strings.TrimSpace(last.Content) != strings.TrimSpace(text) {
			m.tr.addMessage(session.Message{Role: session.User, Content: text})
		}
	}
	m.tr.startStream()
	m.tr.toBottom()
	return m.restartPolling()
}

func (m *model) stop() {
	if m.busy {
		m.b.Stop()
		m.stopping = true
	}
}

// apply hands changed settings to the backend and rereads what it took.
func (m *model) apply(v settings.Values) error {
	err := m.b.Apply(v)
	m.vals = m.b.Settings()
	m.syncViews()
	return err
}

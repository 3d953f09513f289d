package ui

import (
	"os"
	"strings"
	"time"

	"chat/engine/sampler"
	"chat/session"

	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"
)

// Model is the bubbletea model. It is a handle on shared state, so copies
// made by bubbletea all see the same transcript caches.
type Model struct{ *model }

type model struct {
	b Backend
	// specNext indexes specCycle: the speculation the cycle_spec key set last.
	specNext int
	opts     Options
	st       *styles
	info     session.Info
	raw      bool

	width, height int

	tr      *transcript
	input   textarea.Model
	help    bool
	helpOff int // help lines scrolled past

	// Frame pieces that rarely change, kept between frames: the input is
	// redrawn only after it got a message, the panel only when what it
	// shows changed.
	inputView  string
	inputDirty bool
	panelKey   panelKey
	panel      []string

	busy       bool // a reply is being generated
	sawBusy    bool // the backend has reported this reply as busy at least once
	quietPolls int  // polls since Send that said neither Busy nor Done
	stopping   bool // Stop was asked for and Done has not come yet
	state      string
	stats      session.Stats
	params     sampler.Params
	order      []string

	notice    string
	noticeErr bool
	noticeOK  bool // an answer (a command's result), not a warning

	history []string // texts sent, oldest first
	histPos int      // index in history being shown, -1 when not browsing

	keys     keyMap
	markdown bool // replies rendered as markdown
	light    bool // light theme
	autoBG   bool // the theme follows the terminal's background

	palette *palette // Ctrl+P, or the sessions picker; nil when closed
	compl   completion
	cmdHelp map[string]string // the backend's commands and what they do, from its /help
	pane    []string          // a command's several-line answer, shown over the transcript
	paneOff int

	editing int // index in Backend.Messages() of the message being edited, -1 if none

	pending string        // a command the backend is running (commands.go), "" if none
	cmdDone chan struct{} // closed when the last command run returned

	pollGen   int // ticks of older generations are dropped
	rewrapGen int // the last resize; older rewrapMsgs are dropped
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
	km, err := newKeyMap(opts.Keys)
	m.keys = km
	if err != nil {
		m.setNotice(err.Error(), true)
	}
	m.info = b.Info()
	m.raw = m.info.Mode == "raw"
	m.tr = newTranscript(st, m.raw, opts.Width)
	m.tr.setLook(st, m.markdown)
	m.input = newInput(st, m.raw, m.keys.byAction["newline"])
	m.loadHistory()
	m.params = b.Sampler()
	m.order = cleanOrder(b.SamplerOrder())
	m.syncMessages()
	m.resize(opts.Width, opts.Height)
	return Model{m}
}

// Run runs the UI in the terminal's alternate screen until the user quits,
// then stops any reply still being generated.
func Run(b Backend, opts Options) error {
	if os.Getenv("NO_COLOR") != "" {
		opts.Plain = true
	}
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
	if m.autoBG {
		return tea.Batch(m.tick(), tea.RequestBackgroundColor)
	}
	return m.tick()
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
		if m.palette != nil {
			m.palette.setFilter(m.palette.filter + oneLine(msg.Content))
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
	var cmd tea.Cmd
	before := m.input.Value()
	m.input, cmd = m.input.Update(msg)
	m.inputDirty = true
	if m.input.Value() != before {
		m.inputChanged()
	}
	return cmd
}

// setInput replaces the input text.
func (m *model) setInput(s string) {
	m.input.SetValue(s)
	m.inputDirty = true
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
	m.input.SetStyles(inputStyles(m.st))
	m.inputDirty = true
	m.panel = nil
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

func (m *model) inputLines() string {
	if m.inputDirty || m.inputView == "" {
		m.inputView = m.input.View()
		m.inputDirty = false
	}
	return m.inputView
}

// rewrapMsg re-wraps the transcript once a resize storm has settled.
type rewrapMsg struct{ gen int }

// rewrapDelay: while the user scrolled up, the transcript is re-wrapped
// only when no resize came for this long (every message below the view must
// be measured again at a new width; during the drag lines are cut or padded).
const rewrapDelay = 120 * time.Millisecond

func (m *model) resize(w, h int) tea.Cmd {
	m.width, m.height = max(0, w), max(0, h)
	minIn, maxIn := inputBounds(m.height)
	m.input.MinHeight, m.input.MaxHeight = minIn, maxIn
	m.input.SetWidth(max(1, m.width)) // also re-fits the height
	m.inputDirty = true
	mainW := m.layout().mainW
	m.rewrapGen++
	if m.tr.following() || m.tr.width == max(1, mainW) {
		m.tr.setWidth(mainW)
		return nil
	}
	gen := m.rewrapGen
	return tea.Tick(rewrapDelay, func(time.Time) tea.Msg { return rewrapMsg{gen} })
}

func (m *model) setNotice(s string, isErr bool) {
	m.notice, m.noticeErr, m.noticeOK = oneLine(s), isErr, false
}

// setInfo shows an answer, such as a command's result.
func (m *model) setInfo(s string) {
	m.notice, m.noticeErr, m.noticeOK = oneLine(s), false, true
}

// syncMessages takes the finished conversation from the backend. The system
// prompt is shown first even when the session keeps it out of Messages.
func (m *model) syncMessages() {
	msgs := m.b.Messages()
	if m.info.System != "" && (len(msgs) == 0 || msgs[0].Role != session.System) {
		msgs = append([]session.Message{{Role: session.System, Content: m.info.System}}, msgs...)
	}
	m.tr.setMessages(msgs)
}

// send hands the input to the backend and starts following the reply.
func (m *model) send() tea.Cmd {
	text := sanitizeInput(m.input.Value())
	if strings.HasPrefix(text, "//") {
		text = text[1:] // "//..." is text that starts with a slash
	}
	if text == "" && (!m.raw || m.input.Value() != "") {
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
	m.notice, m.help, m.pane = "", false, nil
	m.busy, m.sawBusy, m.stopping, m.quietPolls = true, false, false, 0
	m.state = "generating"
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

func (m *model) setSampler(p sampler.Params) {
	m.b.SetSampler(p)
	m.params = m.b.Sampler() // what the backend accepted, after its own clamping
}

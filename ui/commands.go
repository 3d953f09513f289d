package ui

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"chat/engine/sampler"
	"chat/session"

	tea "charm.land/bubbletea/v2"
)

// Slash commands. A line that starts with "/" and a letter (or "?") is a
// command: the UI's own (below) run here, the rest go to the backend's
// Command, and a backend without one gets the basic ones (regen, new,
// clear, system, save, load, set, help) through its other optional parts.
// "//text" sends "/text". Answers and errors show in the status line; an
// answer of several lines opens a pane over the transcript (Esc closes it).

type uiCommand struct {
	name, args, help string
	argVals          []string // completions of the argument
	run              func(m *model, arg string) tea.Cmd
}

var uiCommands []uiCommand

func init() { // in init: the commands refer back to the table (completion)
	uiCommands = []uiCommand{
		{"/copy", "[code]", "copy the last reply (or its last code block) to the clipboard", []string{"code"}, func(m *model, arg string) tea.Cmd {
			if strings.EqualFold(arg, "code") {
				return m.copyCode()
			}
			return m.copyReply()
		}},
		{"/markdown", "[on|off]", "render replies as markdown (F12 toggles)", []string{"on", "off"}, func(m *model, arg string) tea.Cmd {
			switch strings.ToLower(arg) {
			case "":
				m.setMarkdown(!m.markdown)
			case "on":
				m.setMarkdown(true)
			case "off":
				m.setMarkdown(false)
			default:
				m.setNotice("usage: /markdown [on|off]", true)
			}
			return nil
		}},
		{"/theme", "auto|dark|light", "colours for a dark or light terminal (auto: ask the terminal)", []string{"auto", "dark", "light"}, func(m *model, arg string) tea.Cmd {
			return m.setTheme(strings.ToLower(arg))
		}},
		{"/edit", "", "edit your last message and resend it (Ctrl+E)", nil, func(m *model, _ string) tea.Cmd {
			m.editPrevious()
			return nil
		}},
		{"/sessions", "", "pick a saved conversation to load", nil, func(m *model, _ string) tea.Cmd {
			m.openSessions()
			return nil
		}},
		{"/keys", "", "show the keys (F1)", nil, func(m *model, _ string) tea.Cmd {
			m.help = true
			return nil
		}},
		{"/quit", "", "leave (also /exit, /bye)", nil, func(m *model, _ string) tea.Cmd {
			m.stop()
			return tea.Quit
		}},
	}
}

var uiAliases = map[string]string{"/exit": "/quit", "/bye": "/quit", "/md": "/markdown", "/copycode": "/copy code"}

func findUICommand(name string) (*uiCommand, string) {
	arg := ""
	if a, ok := uiAliases[name]; ok {
		name, arg, _ = strings.Cut(a, " ")
	}
	for i := range uiCommands {
		if uiCommands[i].name == name {
			return &uiCommands[i], arg
		}
	}
	return nil, ""
}

// fallbackCommands are offered when the backend has no Command of its own.
var fallbackCommands = []string{"/regen", "/new", "/clear", "/system", "/save", "/load", "/set", "/help"}

// isCommandLine: a slash and a letter or "?"; "//" and "/ " start text.
func isCommandLine(line string) bool {
	if len(line) < 2 || line[0] != '/' {
		return false
	}
	c := line[1]
	return c == '?' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// submit is Enter: resend an edited message, run a command or send.
func (m *model) submit() tea.Cmd {
	if m.editing >= 0 {
		return m.finishEdit()
	}
	line := strings.TrimSpace(m.input.Value())
	if isCommandLine(line) {
		line = cleanText(line, true)
		m.remember(line)
		m.setInput("")
		return m.runCommand(line)
	}
	return m.send()
}

// runCommand runs one command line.
func (m *model) runCommand(line string) tea.Cmd {
	name, arg := line, ""
	if i := strings.IndexAny(line, " \n"); i >= 0 {
		name, arg = line[:i], strings.TrimSpace(line[i+1:])
	}
	lname := strings.ToLower(name)
	m.pane, m.help = nil, false
	if c, a := findUICommand(lname); c != nil {
		if a != "" {
			arg = a
		}
		return c.run(m, arg)
	}
	if lname == "/set" {
		if key, val, _ := strings.Cut(arg, " "); normKnob(key) == "penalty_window" {
			m.showResult(m.setKnob("penalty_window", strings.TrimSpace(val)))
			return nil
		}
	}
	if c, ok := m.b.(Commander); ok {
		// The backend runs the command off the update loop: loading a
		// conversation or quantizing the weights can take seconds. Until it
		// answers, the UI leaves the backend alone (no polls, no other
		// calls) and says what it is waiting for.
		m.pending = line
		done := make(chan struct{})
		m.cmdDone = done
		return func() tea.Msg {
			defer close(done)
			handled, reply, err := c.Command(line)
			return commandDone{line: line, lname: lname, arg: arg, handled: handled, reply: reply, err: err}
		}
	}
	return m.fallbackCommand(lname, arg)
}

// commandDone is the backend's answer to a command run by runCommand.
type commandDone struct {
	line, lname, arg string
	handled          bool
	reply            string
	err              error
}

func (m *model) onCommandDone(d commandDone) tea.Cmd {
	m.pending = ""
	if !d.handled {
		return m.fallbackCommand(d.lname, d.arg)
	}
	if d.lname == "/help" || d.lname == "/?" {
		d.reply = strings.TrimRight(d.reply, "\n") + "\n" + uiCommandHelp()
	}
	if cmd := m.afterCommand(d.lname, d.reply, d.err); cmd != nil {
		return cmd // a reply started, with its own polling
	}
	return m.restartPolling()
}

// keyWhilePending handles a key while the backend runs a command: what does
// not need the backend works (typing, scrolling, help, quit), the rest waits.
func (m *model) keyWhilePending(k tea.KeyPressMsg, act string) tea.Cmd {
	body := m.layout().body
	switch act {
	case "help":
		m.help, m.helpOff = !m.help, 0
	case "stop":
		m.help, m.pane, m.palette = false, nil, nil
	case "page_up":
		m.tr.scroll(max(1, body-1), body)
	case "page_down":
		m.tr.scroll(-max(1, body-1), body)
	case "line_up":
		m.tr.scroll(lineScrollBy, body)
	case "line_down":
		m.tr.scroll(-lineScrollBy, body)
	case "top":
		m.tr.toTop(body)
	case "bottom":
		m.tr.toBottom()
	case "", "newline":
		if m.keys.findSamplerKey(k) == nil {
			return m.updateInput(k)
		}
		fallthrough
	default:
		m.setNotice("wait: "+oneLine(m.pending)+" is still running", false)
	}
	return nil
}

// afterCommand rereads what a command may have changed and shows its answer.
func (m *model) afterCommand(lname, reply string, err error) tea.Cmd {
	m.refreshInfo()
	m.syncMessages()
	m.params = m.b.Sampler()
	switch lname {
	case "/load", "/new", "/clear":
		if err == nil {
			m.loadHistory()
			m.tr.toBottom()
			m.setEditing(-1, 0)
		}
	}
	var cmd tea.Cmd
	busy := false
	if b, ok := m.b.(Buser); ok {
		busy = b.Busy()
	} else {
		busy = err == nil && (lname == "/regen" || lname == "/regenerate")
	}
	if busy && !m.busy {
		cmd = m.beginReply("")
	}
	if err != nil {
		m.setNotice(err.Error(), true)
	} else {
		m.showText(reply)
	}
	return cmd
}

// showText puts a command's answer in the status line, or in a pane when it
// has several lines.
func (m *model) showText(reply string) {
	reply = strings.TrimRight(cleanText(reply, false), "\n")
	switch {
	case reply == "":
		m.notice = ""
	case strings.Contains(reply, "\n"):
		m.pane, m.paneOff = strings.Split(reply, "\n"), 0
		m.setInfo("Esc closes · PgUp/PgDn scroll")
	default:
		m.setInfo(reply)
	}
}

func (m *model) showResult(reply string, err error) {
	if err != nil {
		m.setNotice(err.Error(), true)
		return
	}
	m.showText(reply)
}

// fallbackCommand runs the basic commands through the backend's optional
// parts when it has no Command.
func (m *model) fallbackCommand(lname, arg string) tea.Cmd {
	no := func(what string) tea.Cmd {
		m.setNotice("this backend cannot "+what, true)
		return nil
	}
	switch lname {
	case "/regen", "/regenerate":
		return m.regenerate()
	case "/new", "/clear":
		c, ok := m.b.(Clearer)
		if !ok {
			return no("start a new conversation")
		}
		if err := c.Clear(); err != nil {
			m.setNotice(err.Error(), true)
			return nil
		}
		return m.afterCommand(lname, "new conversation", nil)
	case "/system":
		s, ok := m.b.(SystemSetter)
		if !ok {
			return no("change the system prompt")
		}
		if arg == "" {
			m.showText("system prompt: " + strconv.Quote(m.info.System))
			return nil
		}
		if strings.EqualFold(arg, "clear") || strings.EqualFold(arg, "off") {
			arg = ""
		}
		s.SetSystem(arg)
		return m.afterCommand(lname, "system prompt set", nil)
	case "/save":
		s, ok := m.b.(Saver)
		if !ok {
			return no("save conversations")
		}
		return m.afterCommand(lname, "saved", s.Save(arg))
	case "/load":
		l, ok := m.b.(Loader)
		if !ok {
			return no("load conversations")
		}
		return m.afterCommand(lname, "loaded "+arg, l.Load(arg))
	case "/set":
		key, val, _ := strings.Cut(arg, " ")
		m.showResult(m.setKnob(key, strings.TrimSpace(val)))
		return nil
	case "/help", "/?":
		m.showText(uiCommandHelp())
		return nil
	}
	m.setNotice("unknown command "+lname+" — type / to list the commands", true)
	return nil
}

func uiCommandHelp() string {
	var b strings.Builder
	for i, c := range uiCommands {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%-22s %s", strings.TrimSpace(c.name+" "+c.args), c.help)
	}
	return b.String()
}

// knobs are the sampler settings /set changes here (the backend's own /set
// is used when it has one; penalty_window is always set here).
var knobNames = []string{"temperature", "top_k", "top_p", "min_p", "repeat_penalty", "frequency_penalty", "presence_penalty", "penalty_window", "seed", "greedy"}

func normKnob(k string) string {
	k = strings.ReplaceAll(strings.ToLower(k), "-", "_")
	switch k {
	case "temp":
		return "temperature"
	case "topk":
		return "top_k"
	case "topp":
		return "top_p"
	case "minp":
		return "min_p"
	}
	return k
}

func knobValue(p sampler.Params, k string) string {
	f := func(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
	switch k {
	case "temperature":
		return f(p.Temperature)
	case "top_k":
		return strconv.Itoa(p.TopK)
	case "top_p":
		return f(p.TopP)
	case "min_p":
		return f(p.MinP)
	case "repeat_penalty":
		return f(p.RepeatPenalty)
	case "frequency_penalty":
		return f(p.FrequencyPenalty)
	case "presence_penalty":
		return f(p.PresencePenalty)
	case "penalty_window":
		return strconv.Itoa(p.PenaltyWindow)
	case "seed":
		return strconv.FormatUint(p.Seed, 10)
	case "greedy":
		return onOff(p.Greedy)
	}
	return ""
}

// setKnob sets one sampler knob from text.
func (m *model) setKnob(key, val string) (string, error) {
	k := normKnob(key)
	if !slices.Contains(knobNames, k) {
		return "", fmt.Errorf("usage: /set KEY VALUE; keys: %s", strings.Join(knobNames, ", "))
	}
	p := m.b.Sampler()
	if val == "" {
		return "", fmt.Errorf("usage: /set %s VALUE (now %s)", k, knobValue(p, k))
	}
	var err error
	num := func() float64 {
		f, e := strconv.ParseFloat(val, 64)
		if e != nil {
			err = fmt.Errorf("%s must be a number, got %q", k, val)
		}
		return f
	}
	whole := func() int {
		n, e := strconv.Atoi(val)
		if e != nil || n < 0 {
			err = fmt.Errorf("%s must be a whole number ≥ 0, got %q", k, val)
		}
		return n
	}
	switch k {
	case "temperature":
		p.Temperature = num()
	case "top_k":
		p.TopK = whole()
	case "top_p":
		p.TopP = num()
	case "min_p":
		p.MinP = num()
	case "repeat_penalty":
		p.RepeatPenalty = num()
	case "frequency_penalty":
		p.FrequencyPenalty = num()
	case "presence_penalty":
		p.PresencePenalty = num()
	case "penalty_window":
		p.PenaltyWindow = whole()
	case "seed":
		s, e := strconv.ParseUint(val, 10, 64)
		if e != nil {
			err = fmt.Errorf("seed must be a whole number ≥ 0, got %q", val)
		}
		p.Seed = s
	case "greedy":
		switch strings.ToLower(val) {
		case "on", "true", "1", "yes":
			p.Greedy = true
		case "off", "false", "0", "no":
			p.Greedy = false
		default:
			err = fmt.Errorf("greedy must be on or off, got %q", val)
		}
	}
	if err == nil {
		err = p.Validate()
	}
	if err != nil {
		return "", err
	}
	m.setSampler(p)
	return k + " " + knobValue(m.params, k), nil
}

// regenerate is Ctrl+R and /regen.
func (m *model) regenerate() tea.Cmd {
	if m.busy {
		m.setNotice("a reply is still being generated — Esc stops it", false)
		return nil
	}
	if r, ok := m.b.(Regenerator); ok {
		if err := r.Regenerate(); err != nil {
			m.setNotice(err.Error(), true)
			return nil
		}
		m.setEditing(-1, 0)
		return m.beginReply("")
	}
	if _, ok := m.b.(Commander); ok {
		return m.runCommand("/regen")
	}
	m.setNotice("this backend cannot regenerate a reply", true)
	return nil
}

// setTheme is /theme.
func (m *model) setTheme(arg string) tea.Cmd {
	if m.opts.Plain {
		m.setNotice("colours are off (NO_COLOR or plain)", false)
		return nil
	}
	switch arg {
	case "dark", "light":
		m.autoBG = false
		m.setLight(arg == "light")
		m.setInfo("theme " + arg)
	case "auto", "":
		m.autoBG = true
		m.setInfo("theme follows the terminal background")
		return tea.RequestBackgroundColor
	default:
		m.setNotice("usage: /theme auto|dark|light", true)
	}
	return nil
}

// Clipboard: OSC 52 through the terminal, so it works over SSH too (the
// terminal must allow programs to set the clipboard).

func (m *model) lastOf(role session.Role) (string, bool) {
	msgs := m.b.Messages()
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == role {
			return msgs[i].Content, true
		}
	}
	return "", false
}

func (m *model) copyReply() tea.Cmd {
	text, ok := m.lastOf(session.Assistant)
	if !ok || text == "" {
		m.setNotice("no reply to copy yet", false)
		return nil
	}
	m.setInfo(fmt.Sprintf("copied the last reply (%d lines, %d characters)", strings.Count(text, "\n")+1, len([]rune(text))))
	return tea.SetClipboard(text)
}

func (m *model) copyCode() tea.Cmd {
	msgs := m.b.Messages()
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != session.Assistant {
			continue
		}
		if code, ok := lastCodeBlock(msgs[i].Content); ok {
			m.setInfo(fmt.Sprintf("copied the last code block (%d lines)", strings.Count(code, "\n")+1))
			return tea.SetClipboard(code)
		}
	}
	m.setNotice("no code block in the replies yet", false)
	return nil
}

// Editing an earlier message: Ctrl+E on an empty input takes your last
// message into the input; Ctrl+E again goes one further back; Enter resends
// it with the backend's Edit (the turns after it are dropped), Esc cancels.

func (m *model) editPrevious() {
	if m.busy {
		m.setNotice("a reply is still being generated — Esc stops it", false)
		return
	}
	msgs := m.b.Messages()
	from := len(msgs)
	if m.editing >= 0 {
		from = min(m.editing, len(msgs))
	}
	for i := from - 1; i >= 0; i-- {
		if msgs[i].Role == session.User {
			m.setEditing(i, len(msgs))
			m.setInput(msgs[i].Content)
			m.input.MoveToEnd()
			if _, ok := m.b.(Editor); ok {
				m.notice = "" // the hint line says it (view.go)
			} else {
				m.setNotice("this backend cannot edit: Enter sends it as a new message · Esc cancels", false)
			}
			return
		}
	}
	if m.editing < 0 {
		m.setNotice("no message of yours to edit yet", false)
	}
}

// setEditing marks message i of the backend's n messages as being edited
// (-1: none) and shows it in the transcript.
func (m *model) setEditing(i, n int) {
	m.editing = i
	k := -1
	if i >= 0 {
		k = i + len(m.tr.msgs) - n // the transcript may list the system prompt the backend does not
	}
	m.tr.selectEntry(k, m.layout().body)
}

func (m *model) cancelEdit() {
	m.setEditing(-1, 0)
	m.setInput("")
	m.setInfo("edit cancelled")
}

func (m *model) finishEdit() tea.Cmd {
	i := m.editing
	text := sanitizeInput(m.input.Value())
	if text == "" {
		m.cancelEdit()
		return nil
	}
	if m.busy {
		m.setNotice("a reply is still being generated — Esc stops it", false)
		return nil
	}
	e, ok := m.b.(Editor)
	if !ok {
		m.setEditing(-1, 0)
		return m.send()
	}
	if err := e.Edit(i, text); err != nil {
		m.setNotice(err.Error(), true)
		return nil
	}
	m.setEditing(-1, 0)
	m.remember(text)
	m.setInput("")
	return m.beginReply(text)
}

var errNoSessions = errors.New("this backend does not keep conversations")

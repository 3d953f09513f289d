package ui

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"chat/config/settings"
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
		{"/theme", strings.Join(settings.Themes, "|"), "colours for a dark or light terminal (auto: ask the terminal)", settings.Themes, func(m *model, arg string) tea.Cmd {
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
		{"/view", "[NAME [on|off]]", "the views: next (next-token bars), tokens (heat map), kv (block map), spark (sparklines), step (step mode); NAME toggles one, off all", viewArgs(), func(m *model, arg string) tea.Cmd {
			return m.viewCommand(arg)
		}},
		{"/keys", "", "show the keys (F1)", nil, func(m *model, _ string) tea.Cmd {
			m.openHelp()
			return nil
		}},
		{"/quit", "", "leave (also /exit, /bye)", nil, func(m *model, _ string) tea.Cmd {
			m.stop()
			return tea.Quit
		}},
	}
}

// viewArgs completes /view: the views' names and "off".
func viewArgs() []string {
	var out []string
	for _, s := range settings.Views() {
		out = append(out, s.View)
	}
	return append(out, "off")
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
	line := strings.TrimSpace(m.in.value())
	// ollama's multi-line input, in chat mode (raw mode sends text as it
	// is): """ opens it, and Enter adds a line until the text ends with """
	// (which sends what is between).
	if rest, ok := strings.CutPrefix(line, `"""`); ok && !m.raw {
		body, closed := strings.CutSuffix(rest, `"""`)
		if !closed {
			m.in.ta.InsertString("\n")
			m.in.dirty = true
			return nil
		}
		m.in.setValue(strings.TrimSpace(body))
		return m.send()
	}
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
	m.pop(func(l layer) bool { _, ok := l.(*pane); return ok })
	if lname == "/load" && arg == "" {
		m.openSessions() // which one to load: the picker, not a usage error
		return nil
	}
	if c, a := findUICommand(lname); c != nil {
		if a != "" {
			arg = a
		}
		if c.args == "" && arg != "" { // "/quit now" quit, as the session's commands refuse
			m.setNotice(fmt.Sprintf("%s takes no argument, got %q", c.name, arg), true)
			return nil
		}
		return c.run(m, arg)
	}
	if c, ok := m.b.(Commander); ok {
		return m.runBackend(line, func() (string, error) {
			handled, reply, err := c.Command(line)
			if !handled {
				return "", errNotHandled
			}
			return reply, err
		}, lname, arg)
	}
	return m.fallbackCommand(lname, arg)
}

var errNotHandled = errors.New("not a command")

// runBackend runs f, which calls the backend, off the update loop: loading a
// conversation, quantizing the weights or loading a model file can take
// seconds. Until it answers, the UI leaves the backend alone (no polls, no
// other calls) and says what it is waiting for. what names it; a command
// line also gives its name and argument (for the answer and the fallback).
func (m *model) runBackend(what string, f func() (string, error), cmd ...string) tea.Cmd {
	m.pending = what
	done := make(chan struct{})
	m.cmdDone = done
	d := commandDone{line: what}
	if len(cmd) == 2 {
		d.lname, d.arg = cmd[0], cmd[1]
	}
	return func() tea.Msg {
		defer close(done)
		d.reply, d.err = f()
		return d
	}
}

// commandDone is the backend's answer to what runBackend ran.
type commandDone struct {
	line, lname, arg string
	reply            string
	err              error
}

func (m *model) onCommandDone(d commandDone) tea.Cmd {
	m.pending = ""
	if d.err == errNotHandled {
		return m.fallbackCommand(d.lname, d.arg)
	}
	if d.lname == "/help" || d.lname == "/?" {
		d.reply = m.mergeHelp(d.reply)
	}
	queued := m.sendQueued
	m.sendQueued = false
	if cmd := m.afterCommand(d.lname, d.reply, d.err); cmd != nil {
		return cmd // a reply started, with its own polling; the input waits
	}
	if queued && m.pending == "" && !m.busy {
		// Enter was pressed while the command ran: send the input now, as
		// the lines typed while the model loads are sent when it is ready.
		if cmd := m.submit(); cmd != nil {
			return tea.Batch(cmd, m.restartPolling())
		}
	}
	return m.restartPolling()
}

// keyWhilePending handles a key while the backend runs a command: what does
// not need the backend works (typing, scrolling, help, quit), the rest waits.
func (m *model) keyWhilePending(k tea.KeyPressMsg, act string) tea.Cmd {
	body := m.layout().trRows()
	switch act {
	case "help":
		if p, ok := m.top().(*pane); ok && p.help {
			m.closeTop()
		} else {
			m.openHelp()
		}
	case "stop":
		m.closeTop()
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
		return m.updateInput(k)
	case "send":
		if strings.TrimSpace(m.in.value()) != "" {
			m.sendQueued = true
			m.setNotice("sent when "+oneLine(m.pending)+" is done", false)
			return nil
		}
		m.setNotice("wait: "+oneLine(m.pending)+" is still running", false)
	default:
		m.setNotice("wait: "+oneLine(m.pending)+" is still running", false)
	}
	return nil
}

// afterCommand rereads what a command may have changed and shows its answer.
func (m *model) afterCommand(lname, reply string, err error) tea.Cmd {
	m.refreshInfo()
	m.syncMessages()
	m.vals = m.b.Settings()
	m.syncViews()
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
		m.setNotice(m.withUICommands(err.Error()), true)
	} else {
		m.showText(reply)
	}
	return cmd
}

// withUICommands adds the UI's own commands to the backend's "unknown
// command /x; commands: /set ... /quit", which lists only the backend's
// (/copy, /markdown, /view, ... were missing from the one list a mistyped
// command shows).
func (m *model) withUICommands(msg string) string {
	if !strings.HasPrefix(msg, "unknown command ") || !strings.Contains(msg, "; commands: ") {
		return msg
	}
	head, list, _ := strings.Cut(msg, "; commands: ")
	listed := strings.Fields(list)
	var near []string
	name, _, _ := strings.Cut(strings.TrimPrefix(head, "unknown command "), " ")
	for _, c := range uiCommands {
		if !slices.Contains(listed, c.name) {
			list += " " + c.name
			if strings.HasPrefix(c.name, name) {
				near = append(near, c.name)
			}
		}
	}
	if len(near) > 0 && !strings.Contains(head, "did you mean") {
		head += " (did you mean " + strings.Join(near, " or ") + "?)"
	}
	return head + "; commands: " + list
}

// showText puts an answer in the notice lines, or in a pane when it has
// several lines.
func (m *model) showText(reply string) {
	reply = strings.TrimRight(cleanText(reply, false), "\n")
	switch {
	case reply == "":
		m.clearNote()
	case strings.Contains(reply, "\n"):
		m.clearNote()
		m.push(newPane(reply))
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
		if arg == "" {
			m.showText("system prompt: " + strconv.Quote(m.vals.System))
			return nil
		}
		if strings.EqualFold(arg, "clear") || strings.EqualFold(arg, "off") {
			arg = ""
		}
		v := m.b.Settings()
		v.System = arg
		return m.afterCommand(lname, "system prompt set", m.apply(v))
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
		m.showResult(m.setText(settings.SetArgs(arg)))
		return nil
	case "/help", "/?":
		m.showText(m.mergeHelp(""))
		return nil
	}
	m.setNotice("unknown command "+lname+" — type / to list the commands", true)
	return nil
}

// mergeHelp is the backend's /help followed by the UI's own commands; a
// UI command the backend also lists (/sessions, /quit) is listed once, as
// the UI's, since the UI runs it.
func (m *model) mergeHelp(backend string) string {
	var out []string
	for line := range strings.SplitSeq(strings.TrimRight(backend, "\n"), "\n") {
		if f := strings.Fields(line); len(f) > 0 {
			if c, _ := findUICommand(strings.ToLower(f[0])); c != nil {
				continue
			}
		}
		if line != "" {
			out = append(out, line)
		}
	}
	for _, c := range uiCommands {
		out = append(out, fmt.Sprintf("%-22s  %s", strings.TrimSpace(c.name+" "+c.args), c.help))
	}
	return strings.Join(out, "\n")
}

// setText is /set for a backend without its own: the setting's rule reads
// the value and Apply takes it.
func (m *model) setText(key, val string) (string, error) {
	s := settings.Lookup(key)
	if s == nil || s.Where&settings.Set == 0 {
		return "", settings.UnknownError(key, settings.Set)
	}
	v := m.b.Settings()
	if val == "" {
		return "", fmt.Errorf("usage: /set %s VALUE (now %s)", s.Name, s.Show(&v))
	}
	if err := s.SetText(&v, val); err != nil {
		return "", err
	}
	if err := m.apply(v); err != nil {
		return "", err
	}
	return s.Name + " " + s.Show(&m.vals), nil
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
		m.setNotice("usage: /theme "+strings.Join(settings.Themes, "|"), true)
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
	m.setInfo(fmt.Sprintf("copied the last reply (%s, %d characters)", lineCount(text), len([]rune(text))))
	return tea.SetClipboard(text)
}

func (m *model) copyCode() tea.Cmd {
	msgs := m.b.Messages()
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role != session.Assistant {
			continue
		}
		if code, ok := lastCodeBlock(msgs[i].Content); ok {
			m.setInfo(fmt.Sprintf("copied the last code block (%s)", lineCount(code)))
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
			m.in.ta.MoveToEnd()
			if _, ok := m.b.(Editor); ok {
				m.clearNote() // the hint line says it (view.go)
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
	m.tr.selectEntry(k, m.layout().trRows())
}

func (m *model) cancelEdit() {
	m.setEditing(-1, 0)
	m.setInput("")
	m.setInfo("edit cancelled")
}

func (m *model) finishEdit() tea.Cmd {
	i := m.editing
	text := sanitizeInput(m.in.text())
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

package session

import (
	"errors"
	"fmt"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"chat/config/settings"
	"chat/session/store"
	"chat/session/termtext"

	"github.com/charmbracelet/x/ansi"
)

// Slash commands, in the spirit of ollama's /set and /show and llama-cli's
// /regen: typed in the input line, answered with a short text.

// ErrQuit is returned by /quit (/exit, /bye): the UI should end the program.
var ErrQuit = errors.New("quit")

type command struct {
	name, args, help string
	run              func(s *Session, arg string) (string, error)
}

// commands are in the order /help shows them.
var commands []command

func init() {
	// Set in init because /help refers to the table.
	commands = []command{
		{"/set", "KEY VALUE", "change a setting; keys: " + strings.Join(settings.Names(settings.Set), ", "), cmdSet},
		{"/show", "", "show the model, mode, system prompt and every setting (also after ollama's /show info, parameters, ...; /show template and /show system show those)", cmdShow},
		{"/system", "[TEXT]", "set the system prompt (no text: show it; \"/system clear\" removes it)", cmdSystem},
		{"/model", "FILE", "continue the conversation with another model (.pt or .gguf)", cmdModel},
		{"/draft", "FILE|off", "speculative decoding with this draft model (same tokenizer), or off", cmdDraft},
		{"/lora", "[N|NAME|on|off]", "list the LoRA adapters, or switch one (or all) on or off", cmdLora},
		{"/kv", "save|load FILE", "write the KV cache to a file, or load one: a prompt that starts with its tokens skips their prefill", cmdKV},
		{"/template", "", "show the chat template in use and how a conversation renders", cmdTemplate},
		{"/save", "[NAME]", "save the conversation now, optionally under a name", cmdSave},
		{"/load", "[NAME|ID|N]", "load a saved conversation (N: its number in /sessions; no argument: pick one)", cmdLoad},
		{"/sessions", "", "list saved conversations, newest first", cmdSessions},
		{"/new", "", "start a new conversation (settings stay; the old one stays saved)", cmdNew},
		{"/clear", "", "same as /new", cmdNew},
		{"/regen", "", "generate the last reply again (a new seed unless it is pinned)", cmdRegen},
		{"/format", "[KIND [ARG]]", "constrain replies: json, schema FILE|JSON (a JSON Schema), regex R, grammar FILE (GBNF), or off (no argument: show it)", cmdFormat},
		{"/help", "", "list the commands", cmdHelp},
		{"/quit", "", "leave chat (also /exit, /bye)", func(*Session, string) (string, error) { return "", ErrQuit }},
	}
}

var aliases = map[string]string{"/?": "/help", "/exit": "/quit", "/bye": "/quit", "/regenerate": "/regen", "/list": "/sessions"}

// isCommand: a slash followed by a letter or "?". "//text" is text that
// starts with a slash (see Submit); "/ text" and "/1" are text too.
func isCommand(line string) bool {
	line = strings.TrimLeft(line, " \t")
	if len(line) < 2 || line[0] != '/' {
		return false
	}
	c := line[1]
	return c == '?' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// Command runs line if it is a slash command. handled is false for anything
// else, which the caller sends as a message (Submit does both). reply is
// text to show the user; after a handled command the UI should re-read
// Messages, Sampler, Info and Saved, and Busy tells whether a reply started
// (/regen).
func (s *Session) Command(line string) (handled bool, reply string, err error) {
	if !isCommand(line) {
		return false, "", nil
	}
	line = strings.TrimSpace(line)
	name, arg, _ := strings.Cut(line, " ")
	name = strings.ToLower(name)
	arg = strings.TrimSpace(arg)
	if a, ok := aliases[name]; ok {
		name = a
	}
	for _, c := range commands {
		if c.name == name {
			if s.remote != nil && (name == "/model" || name == "/draft" || name == "/kv" || name == "/template") {
				return true, "", fmt.Errorf("%s: %w", name, errRemote)
			}
			// "/new Tell me a joke" started a new conversation and dropped
			// the words. /help and /show show all whatever follows (ollama's
			// "/? set", "/show info", "/show parameters").
			if c.args == "" && arg != "" && name != "/help" && name != "/show" {
				return true, "", fmt.Errorf("%s takes no argument, got %q", name, arg)
			}
			reply, err = c.run(s, arg)
			return true, reply, err
		}
	}
	var near []string
	for _, c := range commands {
		if strings.HasPrefix(c.name, name) {
			near = append(near, c.name)
		}
	}
	msg := fmt.Sprintf("unknown command %s; commands: %s", name, strings.Join(commandNames(), " "))
	if len(near) > 0 {
		msg = fmt.Sprintf("unknown command %s (did you mean %s?); commands: %s", name, strings.Join(near, " or "), strings.Join(commandNames(), " "))
	}
	return true, "", errors.New(msg)
}

// Submit is what the input line's Enter does: a slash command runs (its
// reply is returned), anything else is sent as a message. A line starting
// with "//" is sent with one slash removed, for text that begins with "/".
func (s *Session) Submit(line string) (reply string, err error) {
	if handled, reply, err := s.Command(line); handled {
		return reply, err
	}
	if strings.HasPrefix(strings.TrimLeft(line, " \t"), "//") {
		line = strings.Replace(line, "/", "", 1)
	}
	return "", s.Send(line)
}

func commandNames() []string {
	out := make([]string, len(commands))
	for i, c := range commands {
		out[i] = c.name
	}
	return out
}

func cmdSet(s *Session, arg string) (string, error) {
	key, val := settings.SetArgs(arg)
	if key == "" {
		return "", fmt.Errorf("usage: /set KEY VALUE; keys: %s", strings.Join(settings.Names(settings.Set), ", "))
	}
	st := settings.Lookup(key)
	if st == nil {
		// ollama's /set switches, which are no settings here.
		switch key {
		case "format":
			return cmdFormat(s, val)
		case "noformat":
			return cmdFormat(s, "off")
		}
		if note := ollamaSwitches[key]; note != "" {
			return "", fmt.Errorf("/set %s is ollama's: %s", key, note)
		}
	}
	if st != nil && val == "" && st.Kind != settings.Text {
		v := s.Settings()
		return "", fmt.Errorf("usage: /set %s VALUE (now %s)", st.Name, st.Show(&v))
	}
	return s.Set(key, val)
}

// ollamaSwitches say what ollama's /set switches and parameters that are no
// settings here correspond to (/set format is /format).
var ollamaSwitches = map[string]string{
	"tfs_z":        "a sampler this app does not have",
	"num_gpu":      "this app runs on the CPU",
	"main_gpu":     "this app runs on the CPU",
	"num_thread":   "the compute threads are set when chat starts (--threads)",
	"num_keep":     "a reply that outgrows the context follows the course's window rule (raw mode) or stops at its end (chat mode); no tokens are kept pinned",
	"num_batch":    "a prompt is prefilled here without a batch size",
	"use_mmap":     "GGUF files are always memory-mapped",
	"use_mlock":    "the weights are not locked in memory",
	"numa":         "the compute threads are set when chat starts (--threads)",
	"verbose":      "the panel shows every reply's timings (Ctrl+O shows it below 90 columns)",
	"quiet":        "the panel shows every reply's timings (Ctrl+O shows it below 90 columns)",
	"wordwrap":     "replies always wrap at the window's width here",
	"nowordwrap":   "replies always wrap at the window's width here",
	"history":      "↑ and ↓ on an empty input recall earlier prompts",
	"nohistory":    "↑ and ↓ on an empty input recall earlier prompts",
	"think":        "the models this app runs have no thinking mode",
	"nothink":      "the models this app runs have no thinking mode",
	"hidethinking": "the models this app runs have no thinking mode",
	"showthinking": "the models this app runs have no thinking mode",
}

// modelSummary is /show's model line: the name, then what is known of it.
// A remote model has no weight format or parameter count here, which left
// "student (remote, ,  params, context 256)".
func modelSummary(in Info) string {
	var parts []string
	for _, p := range []string{in.Arch, in.Quant} {
		if p != "" {
			parts = append(parts, p)
		}
	}
	if n := ParamCount(in.Params); n != "" {
		parts = append(parts, n+" params")
	}
	if in.ContextLength > 0 {
		parts = append(parts, fmt.Sprintf("context %d", in.ContextLength))
	}
	if len(parts) == 0 {
		return in.Model
	}
	return in.Model + " (" + strings.Join(parts, ", ") + ")"
}

func cmdShow(s *Session, arg string) (string, error) {
	// ollama's /show template and /show system show that one thing.
	switch strings.ToLower(strings.TrimSpace(arg)) {
	case "template":
		return cmdTemplate(s, "")
	case "system":
		return cmdSystem(s, "")
	}
	var b strings.Builder
	in := s.Info()
	fmt.Fprintf(&b, "model             %s\n", modelSummary(in))
	if in.TrainContext > 0 {
		fmt.Fprintf(&b, "                  trained for %d: --ctx-size N for a longer window\n", in.TrainContext)
	}
	if d := s.DraftName(); d != "" {
		fmt.Fprintf(&b, "draft model       %s\n", d)
	}
	fmt.Fprintf(&b, "mode              %s\n", s.vals.Mode)
	sys := "(none)"
	if s.vals.System != "" {
		sys = strconv.Quote(s.vals.System)
		if s.vals.Mode == "raw" {
			sys += " (used in chat mode only)"
		}
	}
	fmt.Fprintf(&b, "system            %s\n", sys)
	s.showSettings(&b)
	format := s.Constraint()
	if format == "" {
		format = "off"
	}
	fmt.Fprintf(&b, "format            %s\n", format)
	fmt.Fprintf(&b, "order             %s\n", strings.Join(s.SamplerOrder(), " → "))
	si := s.Saved()
	switch {
	case s.opts.Store == nil:
		b.WriteString("session           not saved (no store)")
	case si.ID == "":
		b.WriteString("session           not saved yet (saved after the first reply)")
	default:
		fmt.Fprintf(&b, "session           %s", si.ID)
		if si.Name != "" {
			fmt.Fprintf(&b, " (%s)", si.Name)
		}
	}
	return b.String(), nil
}

func cmdSystem(s *Session, arg string) (string, error) {
	switch {
	case arg == "":
		if s.vals.System == "" {
			return "no system prompt; set one with /system TEXT", nil
		}
		return "system prompt: " + strconv.Quote(s.vals.System), nil
	case strings.EqualFold(arg, "clear") || strings.EqualFold(arg, "off") || strings.EqualFold(arg, "none"):
		s.SetSystem("")
		return "system prompt removed", nil
	}
	s.SetSystem(arg)
	if s.vals.Mode == "raw" {
		return "system prompt set (it is used in chat mode only; /set mode chat)", nil
	}
	return "system prompt set; it applies from the next reply", nil
}

func cmdSave(s *Session, arg string) (string, error) {
	if err := s.Save(arg); err != nil {
		return "", err
	}
	si := s.Saved()
	if si.Name != "" {
		return fmt.Sprintf("saved as %s (id %s)", si.Name, si.ID), nil
	}
	return "saved as " + si.ID, nil
}

func cmdLoad(s *Session, arg string) (string, error) {
	if arg == "" {
		return "", errors.New("usage: /load NAME|ID|N (see /sessions)")
	}
	if err := s.Load(arg); err != nil {
		if errors.Is(err, store.ErrNotFound) {
			// ollama's /load takes a model by name (/load llama3.2)
			err = fmt.Errorf("%w (see /sessions; /model FILE switches the model)", err)
			if ext := strings.ToLower(filepath.Ext(arg)); ext == ".gguf" || ext == ".pt" {
				// ollama's /load takes a model
				err = fmt.Errorf("%w; /load takes a saved conversation: /model FILE switches the model", store.ErrNotFound)
			}
		}
		return "", err
	}
	si := s.Saved()
	return fmt.Sprintf("loaded %s %q: %d messages", si.ID, si.Title, len(s.msgs)), nil
}

func cmdSessions(s *Session, _ string) (string, error) {
	list, current, err := s.Sessions()
	if err != nil {
		return "", err
	}
	if len(list) == 0 {
		return "no saved conversations yet (they are kept in " + s.opts.Store.Dir() + ")", nil
	}
	return FormatList(list, current), nil
}

func cmdNew(s *Session, _ string) (string, error) {
	if err := s.New(); err != nil {
		return "", err
	}
	return "new conversation", nil
}

func cmdRegen(s *Session, _ string) (string, error) {
	return "", s.Regenerate()
}

func cmdHelp(*Session, string) (string, error) {
	var b strings.Builder
	for i, c := range commands {
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%-22s  %s", strings.TrimSpace(c.name+" "+c.args), c.help)
	}
	b.WriteString("\n//TEXT                  send TEXT starting with one /")
	return b.String(), nil
}

// Complete returns the full input lines a partly typed command can become,
// for the command palette: command names, /set keys and values, /load
// names and ids. Anything else has no completions.
func (s *Session) Complete(prefix string) []string {
	if !strings.HasPrefix(prefix, "/") || strings.HasPrefix(prefix, "//") {
		return nil
	}
	name, rest, spaced := strings.Cut(prefix, " ")
	lname := strings.ToLower(name)
	if !spaced {
		var out []string
		for _, c := range commands {
			if strings.HasPrefix(c.name, lname) {
				out = append(out, c.name)
			}
		}
		return out
	}
	if a, ok := aliases[lname]; ok {
		lname = a
	}
	var cands []string
	head := name + " "
	switch lname {
	case "/set":
		key, val, spaced := strings.Cut(rest, " ")
		if !spaced {
			return withPrefix(head, settings.Names(settings.Set), rest)
		}
		head += key + " "
		st := settings.Lookup(key)
		if st == nil {
			return nil
		}
		switch st.Kind {
		case settings.Bool:
			cands = []string{"on", "off"}
		case settings.Choice:
			cands = st.Choices
		case settings.Seed:
			cands = []string{"random", strconv.FormatUint(s.seed, 10)}
		case settings.List:
			cands = []string{"none"}
		default:
			v := s.Settings()
			cands = []string{st.Format(&v)} // the current value, to edit
		}
		return withPrefix(head, cands, val)
	case "/draft":
		return withPrefix(head, []string{"off"}, rest)
	case "/kv":
		return withPrefix(head, []string{"save ", "load "}, rest)
	case "/load":
		if s.opts.Store == nil {
			return nil
		}
		list, err := s.opts.Store.List()
		if err != nil {
			return nil
		}
		for _, x := range list {
			if x.Name != "" {
				cands = append(cands, x.Name)
			}
		}
		for _, x := range list {
			cands = append(cands, x.ID)
		}
		return withPrefix(head, cands, rest)
	}
	return nil
}

func withPrefix(head string, cands []string, typed string) []string {
	var out []string
	for _, c := range cands {
		if strings.HasPrefix(c, typed) {
			out = append(out, head+c)
		}
	}
	return out
}

// FormatList shows saved sessions one a line, numbered as /load N takes
// them; current (an id, or "") is marked with "*". Used by /sessions and
// chat --sessions.
func FormatList(list []store.Summary, current string) string {
	var b strings.Builder
	for i, x := range list {
		mark := " "
		if x.ID == current && current != "" {
			mark = "*"
		}
		title := x.Title
		if x.Name != "" {
			title = "[" + x.Name + "] " + title
		}
		title, model := termtext.Line(title), termtext.Line(x.Model) // from the file: no escapes to the terminal
		// A column of 40 cells: a wide character (CJK, emoji) takes two, a
		// combining mark none, and a longer title is cut.
		title = ansi.Truncate(title, 40, "…")
		title += strings.Repeat(" ", 40-ansi.StringWidth(title))
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s%3d  %s  %s  %s  %s, %d messages", mark, i+1, x.ID, x.Updated.Local().Format(time.DateTime[:16]), title, model, x.Messages)
	}
	return b.String()
}

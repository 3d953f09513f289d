package session

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"chat/engine/sampler"
	"chat/engine/speculative"
	"chat/session/store"
	"chat/session/termtext"
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
		{"/set", "KEY VALUE", "change a setting; keys: " + strings.Join(knobNames(), ", "), cmdSet},
		{"/show", "", "show the model, mode, system prompt, sampler and session", cmdShow},
		{"/system", "[TEXT]", "set the system prompt (no text: show it; \"/system clear\" removes it)", cmdSystem},
		{"/save", "[NAME]", "save the conversation now, optionally under a name", cmdSave},
		{"/load", "NAME|ID|N", "load a saved conversation (N: its number in /sessions)", cmdLoad},
		{"/sessions", "", "list saved conversations, newest first", cmdSessions},
		{"/new", "", "start a new conversation (settings stay; the old one stays saved)", cmdNew},
		{"/clear", "", "same as /new", cmdNew},
		{"/regen", "", "generate the last reply again", cmdRegen},
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

// knob is one /set key.
type knob struct {
	name  string
	alias []string
	set   func(s *Session, v string) error
	show  func(s *Session) string
}

var knobs = []knob{
	{"temperature", []string{"temp"}, setSampler(func(p *sampler.Params, v string) error {
		f, err := parseFloat("temperature", v, 0, math.Inf(1))
		p.Temperature = f
		return err
	}), func(s *Session) string { return fmtFloat(s.opts.Sampler.Temperature) }},
	{"top_k", []string{"top-k", "topk"}, setSampler(func(p *sampler.Params, v string) error {
		n, err := parseInt("top_k", v, 0, math.MaxInt32)
		p.TopK = n
		return err
	}), func(s *Session) string { return offInt(s.opts.Sampler.TopK) }},
	{"top_p", []string{"top-p", "topp"}, setSampler(func(p *sampler.Params, v string) error {
		f, err := parseFloat("top_p", v, 0, 1)
		p.TopP = f
		return err
	}), func(s *Session) string { return offP(s.opts.Sampler.TopP) }},
	{"min_p", []string{"min-p", "minp"}, setSampler(func(p *sampler.Params, v string) error {
		f, err := parseFloat("min_p", v, 0, 1)
		p.MinP = f
		return err
	}), func(s *Session) string { return offP(s.opts.Sampler.MinP) }},
	{"repeat_penalty", []string{"repeat-penalty"}, setSampler(func(p *sampler.Params, v string) error {
		f, err := parseFloat("repeat_penalty", v, 0, math.Inf(1))
		p.RepeatPenalty = f
		return err
	}), func(s *Session) string {
		if r := s.opts.Sampler.RepeatPenalty; r != 0 && r != 1 {
			return fmtFloat(r)
		}
		return "off"
	}},
	{"frequency_penalty", []string{"frequency-penalty"}, setSampler(func(p *sampler.Params, v string) error {
		f, err := parseFloat("frequency_penalty", v, math.Inf(-1), math.Inf(1))
		p.FrequencyPenalty = f
		return err
	}), func(s *Session) string { return fmtFloat(s.opts.Sampler.FrequencyPenalty) }},
	{"presence_penalty", []string{"presence-penalty"}, setSampler(func(p *sampler.Params, v string) error {
		f, err := parseFloat("presence_penalty", v, math.Inf(-1), math.Inf(1))
		p.PresencePenalty = f
		return err
	}), func(s *Session) string { return fmtFloat(s.opts.Sampler.PresencePenalty) }},
	{"seed", nil, setSampler(func(p *sampler.Params, v string) error {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			return fmt.Errorf("seed must be a whole number ≥ 0, got %q", v)
		}
		p.Seed = n
		return nil
	}), func(s *Session) string { return strconv.FormatUint(s.opts.Sampler.Seed, 10) }},
	{"greedy", nil, setSampler(func(p *sampler.Params, v string) error {
		b, err := parseBool("greedy", v)
		p.Greedy = b
		return err
	}), func(s *Session) string { return onOff(s.opts.Sampler.Greedy) }},
	{"max_tokens", []string{"max-tokens", "n"}, func(s *Session, v string) error {
		n, err := parseInt("max_tokens", v, 1, maxReplyTokens)
		if err != nil {
			return err
		}
		return s.SetMaxTokens(n)
	}, func(s *Session) string { return strconv.Itoa(s.opts.MaxTokens) }},
	{"mode", nil, func(s *Session, v string) error { return s.SetMode(strings.ToLower(v)) }, func(s *Session) string { return s.mode }},
	{"quant", []string{"weights"}, func(s *Session, v string) error { return s.SetQuant(strings.ToLower(v)) },
		func(s *Session) string { return s.Quant() }},
	{"spec", []string{"speculation", "speculative"}, func(s *Session, v string) error {
		m, err := speculative.ParseMethod(strings.ToLower(v))
		if err != nil {
			return err
		}
		c := s.Speculation()
		c.Method = m
		return s.SetSpeculation(c)
	}, func(s *Session) string { return s.Speculation().Method.String() }},
	{"draft_k", []string{"draft-k", "k"}, func(s *Session, v string) error {
		n, err := parseInt("draft_k", v, 1, speculative.MaxK)
		if err != nil {
			return err
		}
		c := s.Speculation()
		c.K = n
		return s.SetSpeculation(c)
	}, func(s *Session) string { return strconv.Itoa(max(s.Speculation().K, speculative.DefaultK)) }},
}

// setSampler makes a /set handler that edits a copy of the knobs and applies
// it only when the value is good, so a typo never half-changes the sampler.
func setSampler(f func(p *sampler.Params, v string) error) func(*Session, string) error {
	return func(s *Session, v string) error {
		p := s.opts.Sampler
		if err := f(&p, v); err != nil {
			return err
		}
		if err := p.Validate(); err != nil {
			return err
		}
		s.SetSampler(p)
		return nil
	}
}

func knobNames() []string {
	out := make([]string, len(knobs))
	for i, k := range knobs {
		out[i] = k.name
	}
	return out
}

func findKnob(name string) *knob {
	name = strings.ToLower(name)
	for i := range knobs {
		if knobs[i].name == name || slices.Contains(knobs[i].alias, name) {
			return &knobs[i]
		}
	}
	return nil
}

func parseFloat(name, v string, lo, hi float64) (float64, error) {
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, fmt.Errorf("%s must be a number, got %q", name, v)
	}
	if f < lo || f > hi {
		switch {
		case math.IsInf(hi, 1):
			return 0, fmt.Errorf("%s must be ≥ %s, got %s", name, fmtFloat(lo), v)
		default:
			return 0, fmt.Errorf("%s must be between %s and %s, got %s", name, fmtFloat(lo), fmtFloat(hi), v)
		}
	}
	return f, nil
}

func parseInt(name, v string, lo, hi int) (int, error) {
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("%s must be a whole number, got %q", name, v)
	}
	if n < lo || n > hi {
		return 0, fmt.Errorf("%s must be between %d and %d, got %d", name, lo, hi, n)
	}
	return n, nil
}

func parseBool(name, v string) (bool, error) {
	switch strings.ToLower(v) {
	case "on", "true", "yes", "1":
		return true, nil
	case "off", "false", "no", "0":
		return false, nil
	}
	return false, fmt.Errorf("%s must be on or off, got %q", name, v)
}

func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

func offInt(n int) string {
	if n <= 0 {
		return "off"
	}
	return strconv.Itoa(n)
}

// offP shows a p-knob, "off" outside (0,1) as the sampler treats it.
func offP(p float64) string {
	if p <= 0 || p >= 1 {
		return "off"
	}
	return fmtFloat(p)
}

func cmdSet(s *Session, arg string) (string, error) {
	key, val, _ := strings.Cut(arg, " ")
	val = strings.TrimSpace(val)
	if key == "" {
		return "", fmt.Errorf("usage: /set KEY VALUE; keys: %s", strings.Join(knobNames(), ", "))
	}
	if strings.EqualFold(key, "system") { // ollama's spelling
		return cmdSystem(s, val)
	}
	k := findKnob(key)
	if k == nil {
		return "", fmt.Errorf("unknown setting %q; keys: %s", key, strings.Join(knobNames(), ", "))
	}
	if val == "" {
		return "", fmt.Errorf("usage: /set %s VALUE (now %s)", k.name, k.show(s))
	}
	if err := k.set(s, val); err != nil {
		return "", err
	}
	reply := k.name + " " + k.show(s)
	if s.opts.Sampler.Greedy && slices.Contains([]string{"temperature", "top_k", "top_p", "min_p", "seed"}, k.name) {
		reply += " (greedy is on, so it has no effect until /set greedy off)"
	}
	return reply, nil
}

func cmdShow(s *Session, _ string) (string, error) {
	var b strings.Builder
	in := s.Info()
	fmt.Fprintf(&b, "model       %s (%s, %s, %d params, context %d)\n", in.Model, in.Arch, in.Quant, in.Params, in.ContextLength)
	fmt.Fprintf(&b, "mode        %s\n", s.mode)
	sys := "(none)"
	if s.opts.System != "" {
		sys = strconv.Quote(s.opts.System)
		if s.mode == "raw" {
			sys += " (used in chat mode only)"
		}
	}
	fmt.Fprintf(&b, "system      %s\n", sys)
	for _, k := range knobs {
		if k.name != "mode" {
			fmt.Fprintf(&b, "%-11s %s\n", k.name, k.show(s))
		}
	}
	fmt.Fprintf(&b, "order       %s\n", strings.Join(s.SamplerOrder(), " → "))
	si := s.Saved()
	switch {
	case s.opts.Store == nil:
		b.WriteString("session     not saved (no store)")
	case si.ID == "":
		b.WriteString("session     not saved yet (saved after the first reply)")
	default:
		fmt.Fprintf(&b, "session     %s", si.ID)
		if si.Name != "" {
			fmt.Fprintf(&b, " (%s)", si.Name)
		}
	}
	return b.String(), nil
}

func cmdSystem(s *Session, arg string) (string, error) {
	switch {
	case arg == "":
		if s.opts.System == "" {
			return "no system prompt; set one with /system TEXT", nil
		}
		return "system prompt: " + strconv.Quote(s.opts.System), nil
	case strings.EqualFold(arg, "clear") || strings.EqualFold(arg, "off") || strings.EqualFold(arg, "none"):
		s.SetSystem("")
		return "system prompt removed", nil
	}
	s.SetSystem(arg)
	if s.mode == "raw" {
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
		return "", err
	}
	si := s.Saved()
	return fmt.Sprintf("loaded %s %q: %d messages", si.ID, si.Title, len(s.msgs)), nil
}

func cmdSessions(s *Session, _ string) (string, error) {
	if s.opts.Store == nil {
		return "", ErrNoStore
	}
	list, err := s.opts.Store.List()
	if err != nil {
		return "", err
	}
	if len(list) == 0 {
		return "no saved conversations yet (they are kept in " + s.opts.Store.Dir() + ")", nil
	}
	return FormatList(list, s.saved.id), nil
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
		fmt.Fprintf(&b, "%-22s %s", strings.TrimSpace(c.name+" "+c.args), c.help)
	}
	b.WriteString("\n//TEXT                 send TEXT starting with one /")
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
			cands = append(knobNames(), "system")
			return withPrefix(head, cands, rest)
		}
		head += key + " "
		switch k := findKnob(key); {
		case k == nil:
			return nil
		case k.name == "greedy":
			cands = []string{"on", "off"}
		case k.name == "mode":
			cands = []string{"chat", "raw"}
		default:
			cands = []string{k.show(s)} // the current value, to edit
			if cands[0] == "off" {
				cands[0] = "0"
			}
		}
		return withPrefix(head, cands, val)
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
		if i > 0 {
			b.WriteByte('\n')
		}
		fmt.Fprintf(&b, "%s%3d  %s  %s  %-40s  %s, %d messages", mark, i+1, x.ID, x.Updated.Local().Format(time.DateTime[:16]), title, model, x.Messages)
	}
	return b.String()
}

package ui

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"chat/config/settings"
	"chat/engine/sampler"
	"chat/session"
	"chat/session/store"
)

// fakeBackend streams a canned reply over several polls, one chunk per
// poll, with fixed stats so views are deterministic.
type fakeBackend struct {
	mu sync.Mutex

	info   session.Info
	msgs   []session.Message
	params sampler.Params
	vals   settings.Values // the settings other than the sampler's
	order  []string

	reply []string // chunks of the next reply, one per poll
	hold  bool     // stay busy after the last chunk (for snapshots mid-stream)

	lateUser   bool   // list the user's turn in Messages only once the reply is done
	finishWith string // the reason a reply that runs out of chunks ends with ("" = "eot")
	fullKV     bool   // the reply fills the context: KVUsed is KVCap-1, and a "length" finish says ContextFull
	noDone     bool   // end a reply by going idle without saying Done
	silent     bool   // handle Send without any reply (like a slash command)

	busy     bool
	pos      int
	partial  string
	stopping bool
	notices  []string

	constraint session.ConstraintStats // what Poll reports of /format

	steps     int             // step mode: Steps not taken yet
	stepCalls int             // Step calls
	toks      []session.Token // the reply's tokens so far (token view)

	sent      []string
	stopCalls int
	polls     int
	setCalls  int
	sendErr   error
}

func newFake() *fakeBackend {
	return &fakeBackend{
		info: session.Info{
			Model: "stories15M", Arch: "classic", Quant: "f32", Params: 15_200_000,
			ContextLength: 256, Mode: "chat",
		},
		params: sampler.Defaults(),
		vals:   settings.Defaults("chat"),
		order:  []string{"penalties", "temperature", "top-k", "top-p", "min-p"},
		reply: []string{
			"Once upon a time", ", there was a little", " robot named Zoë.",
			"\nIt loved 日本語 and 🍵 tea", " — and it was happy.",
		},
	}
}

func (f *fakeBackend) Info() session.Info { return f.info }

func (f *fakeBackend) Messages() []session.Message {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]session.Message(nil), f.msgs...)
}

func (f *fakeBackend) Send(text string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.sendErr != nil {
		return f.sendErr
	}
	if f.busy {
		return errors.New("busy")
	}
	f.sent = append(f.sent, text)
	if !f.lateUser {
		f.msgs = append(f.msgs, session.Message{Role: session.User, Content: text})
	}
	f.busy, f.pos, f.partial, f.stopping = !f.silent, 0, "", false
	return nil
}

func (f *fakeBackend) Stop() {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.stopCalls++
	if f.busy {
		f.stopping = true
	}
}

func (f *fakeBackend) stats() session.Stats {
	st := session.Stats{
		PromptTokens: 42, ReusedTokens: 30, GenTokens: f.pos * 3,
		PrefillTokS: 812.5, DecodeTokS: 97.3, TTFT: 48 * time.Millisecond,
		KVUsed: 42 + f.pos*3, KVCap: 256, Constraint: f.constraint,
	}
	if f.fullKV {
		st.KVUsed = st.KVCap - 1
	}
	return st
}

func (f *fakeBackend) Poll() session.Update {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.polls++
	u := session.Update{Notices: f.notices}
	f.notices = nil
	if !f.busy {
		u.Stats = f.stats()
		return u
	}
	switch {
	case f.stopping:
		f.finish(&u, "stopped")
	case f.stepping() && f.steps == 0:
		u.Busy = true // step mode: waiting for a step
		f.viewsPoll(&u, "")
	case f.pos < len(f.reply):
		u.Text = f.reply[f.pos]
		f.partial += u.Text
		f.pos++
		u.Busy = true
		f.viewsPoll(&u, u.Text)
		if f.stepping() {
			f.steps--
		}
	case f.hold:
		u.Busy = true
	default:
		reason := f.finishWith
		if reason == "" {
			reason = "eot"
		}
		f.finish(&u, reason)
	}
	u.Stats = f.stats()
	return u
}

func (f *fakeBackend) finish(u *session.Update, reason string) {
	if f.lateUser {
		f.msgs = append(f.msgs, session.Message{Role: session.User, Content: f.sent[len(f.sent)-1]})
	}
	f.msgs = append(f.msgs, session.Message{Role: session.Assistant, Content: f.partial})
	f.viewsFinish()
	f.busy, f.stopping = false, false
	if !f.noDone {
		u.Done, u.Reason, u.ContextFull = true, reason, reason == "length" && f.fullKV
	}
}

func (f *fakeBackend) Sampler() sampler.Params {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.params
}

func (f *fakeBackend) SetSampler(p sampler.Params) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setCalls++
	f.params = p
}

func (f *fakeBackend) SamplerOrder() []string { return f.order }

func (f *fakeBackend) Settings() settings.Values {
	f.mu.Lock()
	defer f.mu.Unlock()
	v := f.vals
	v.Sampler, v.Quant, v.Mode, v.System = f.params, f.info.Quant, f.info.Mode, f.info.System
	return v
}

// Apply takes the settings as they are; a weight format shows in Info.
func (f *fakeBackend) Apply(v settings.Values) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.setCalls++
	f.params, f.vals = v.Sampler, v
	f.info.Quant, f.info.Mode, f.info.System = v.Quant, v.Mode, v.System
	return nil
}

// drained reports whether every chunk of the reply has been polled.
func (f *fakeBackend) drained() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.pos == len(f.reply)
}

func (f *fakeBackend) snapshot() (sent []string, stops, sets int, p sampler.Params) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.sent...), f.stopCalls, f.setCalls, f.params
}

// withHistory gives the fake n finished turns.
func (f *fakeBackend) withHistory(n int) *fakeBackend {
	for i := range n {
		f.msgs = append(f.msgs,
			session.Message{Role: session.User, Content: fmt.Sprintf("Question %d: tell me something about the number %d, please.", i, i)},
			session.Message{Role: session.Assistant, Content: fmt.Sprintf("Answer %d. The number %d is a fine number; it comes after %d and before %d.\nThat is all I know about it.", i, i, i-1, i+1)},
		)
	}
	return f
}

// fullFake adds every optional part a backend may have (backend.go), the
// way session.Session has them, and records the calls.
type fullFake struct {
	*fakeBackend
	help     string // its /help, "" for a short default
	commands []string
	edits    []string
	regens   int
	saved    []string
	loaded   []string
	system   string
	history  []string
	status   string
}

func newFullFake() *fullFake { return &fullFake{fakeBackend: newFake()} }

var fakeCommands = []string{"/set", "/show", "/system", "/save", "/load", "/sessions", "/new", "/clear", "/regen", "/help", "/quit"}

func (f *fullFake) Command(line string) (bool, string, error) {
	if !isCommandLine(line) {
		return false, "", nil
	}
	f.commands = append(f.commands, line)
	name, arg, _ := strings.Cut(line, " ")
	switch name {
	case "/set":
		k, v, _ := strings.Cut(arg, " ")
		if k != "temperature" {
			return true, "", fmt.Errorf("unknown setting %q", k)
		}
		t, err := strconv.ParseFloat(v, 64)
		if err != nil {
			return true, "", err
		}
		p := f.Sampler()
		p.Temperature = t
		f.SetSampler(p)
		return true, "temperature " + v, nil
	case "/help":
		if f.help != "" {
			return true, f.help, nil
		}
		return true, "/set KEY VALUE   change a setting\n/show            show the settings", nil
	case "/sessions":
		return true, session.FormatList(fakeSessions, fakeSessions[0].ID), nil
	case "/load":
		return true, "loaded " + arg, f.Load(arg)
	case "/regen":
		return true, "", f.Regenerate()
	case "/new", "/clear":
		return true, "new conversation", f.Clear()
	case "/save":
		return true, "saved", f.Save(arg)
	}
	return true, "", errors.New("unknown command " + name + "; commands: /set /show /sessions /help /quit") // as the session says it
}

func (f *fullFake) Complete(prefix string) []string {
	var out []string
	if prefix == "/set " {
		return []string{"/set temperature", "/set top_k", "/set seed"}
	}
	for _, c := range fakeCommands {
		if strings.HasPrefix(c, prefix) {
			out = append(out, c)
		}
	}
	return out
}

func (f *fullFake) Regenerate() error {
	f.mu.Lock()
	n := len(f.msgs)
	if n < 2 || f.msgs[n-1].Role != session.Assistant {
		f.mu.Unlock()
		return errors.New("no reply to regenerate yet")
	}
	f.regens++
	f.msgs = f.msgs[:n-1]
	f.busy, f.pos, f.partial = true, 0, ""
	f.mu.Unlock()
	return nil
}

func (f *fullFake) Edit(i int, text string) error {
	f.mu.Lock()
	if i < 0 || i >= len(f.msgs) || f.msgs[i].Role != session.User {
		f.mu.Unlock()
		return fmt.Errorf("no message %d of yours", i)
	}
	f.edits = append(f.edits, fmt.Sprintf("%d:%s", i, text))
	f.msgs = f.msgs[:i]
	f.mu.Unlock()
	return f.Send(text)
}

func (f *fullFake) Clear() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.msgs = nil
	return nil
}

func (f *fullFake) SetSystem(text string) { f.system = text }
func (f *fullFake) History() []string     { return f.history }
func (f *fullFake) Save(name string) error {
	f.saved = append(f.saved, name)
	return nil
}

func (f *fullFake) Load(ref string) error {
	f.loaded = append(f.loaded, ref)
	f.mu.Lock()
	defer f.mu.Unlock()
	f.msgs = []session.Message{{Role: session.User, Content: "loaded " + ref}, {Role: session.Assistant, Content: "from the store"}}
	return nil
}

// fakeSessions are what the fake's /sessions lists, the first current.
var fakeSessions = []store.Summary{
	{ID: "20261129-100000-1a2b", Name: "notes", Title: "Robots", Model: "TinyLlama-1.1B-Chat-v1.0.Q4_K_M.gguf", Messages: 4,
		Updated: time.Date(2026, 11, 29, 10, 0, 0, 0, time.Local)},
	{ID: "20261128-090000-3c4d", Title: "Tea and the history of tea in China", Model: "stories15M.pt", Messages: 12,
		Updated: time.Date(2026, 11, 28, 9, 0, 0, 0, time.Local)},
}

func (f *fullFake) Sessions() ([]store.Summary, string, error) {
	return fakeSessions, fakeSessions[0].ID, nil
}

func (f *fullFake) Busy() bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.busy
}

func (f *fullFake) Status() string { return f.status }

// CountTokens counts words.
func (f *fullFake) CountTokens(text string) int { return len(strings.Fields(text)) }

func (f *fullFake) withHistory(n int) *fullFake {
	f.fakeBackend.withHistory(n)
	return f
}

package session

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"chat/config/settings"
	"chat/engine"
	"chat/engine/sampler"
	"chat/models/quote"
	"chat/session/store"
)

// persist is the saved-session side of a Session: which file it is, and
// the prompt history read from the other sessions.
type persist struct {
	id, name string    // id is "" until the first save
	created  time.Time // of the first save
	identity string    // model identity, computed once
	failed   bool      // the last autosave failed (told once, not after every reply)
	err      error     // why the last save failed, nil after a good one

	history []string // user prompts of other saved sessions, oldest first
	histOK  bool     // history was read for the current id
}

// ErrNoStore is returned by Save, Load and Resume when the session was made
// without a store.
var ErrNoStore = errors.New("sessions are not being saved (no session store)")

// SavedInfo identifies the saved session a Session writes to.
type SavedInfo struct {
	ID    string // "" until the conversation is first saved
	Name  string // given with /save NAME, or ""
	Title string // from the first user message
	Dir   string // the session directory, "" without a store
	Err   error  // why the last save failed (headless exits non-zero on it), nil after a good one
}

// Saved tells which saved session this is.
func (s *Session) Saved() SavedInfo {
	si := SavedInfo{ID: s.saved.id, Name: s.saved.name, Title: s.title(), Err: s.saved.err}
	if s.opts.Store != nil {
		si.Dir = s.opts.Store.Dir()
	}
	return si
}

// Sessions lists the saved conversations, newest first, and the id of the
// one this is ("" before its first save), for a picker to lay out.
func (s *Session) Sessions() (list []store.Summary, current string, err error) {
	if s.opts.Store == nil {
		return nil, "", ErrNoStore
	}
	list, err = s.opts.Store.List()
	return list, s.saved.id, err
}

func (s *Session) title() string {
	for _, m := range s.msgs {
		if m.Role == User {
			if t := store.Title(m.Content); t != "" {
				return t
			}
		}
	}
	return ""
}

// record is the conversation in the store's format.
func (s *Session) record() *store.Record {
	now := time.Now()
	if s.saved.id == "" {
		s.saved.id = store.NewID(now)
		s.saved.created = now
	}
	v := s.Settings()
	r := &store.Record{ID: s.saved.id, Name: s.saved.name, Title: s.title(), Created: s.saved.created, Updated: now,
		Model: store.Model{Name: s.Info().Model, Path: s.opts.ModelPath, Identity: s.identity()},
		Mode:  v.Mode, System: v.System, MaxTokens: v.MaxTokens, Sampler: toStore(v.Sampler), Settings: map[string]string{}}
	for _, st := range settings.All() {
		if st.Persist {
			r.Settings[st.Name] = st.Format(&v)
		}
	}
	for _, m := range s.msgs {
		r.Messages = append(r.Messages, store.Message{Role: string(m.Role), Content: m.Content, Time: m.Time})
	}
	return r
}

// identity is the model's identity, computed on first use: hashing a model
// file is not free, and sessions that are never saved never need it.
func (s *Session) identity() string {
	if s.saved.identity == "" {
		s.saved.identity = s.opts.ModelIdentity
		if s.saved.identity == "" && s.opts.ModelPath != "" {
			s.saved.identity, _ = store.Identity(s.opts.ModelPath) // "" if unreadable: the name still says which model
		}
	}
	return s.saved.identity
}

// autosave writes the conversation after a finished reply. A failure is told
// as a notice (once until a save succeeds again): losing the autosave must
// not lose the chat on screen.
func (s *Session) autosave() {
	if s.opts.Store == nil || len(s.msgs) == 0 {
		return
	}
	err := s.opts.Store.Save(s.record())
	if err != nil && !s.saved.failed {
		s.notices = append(s.notices, "autosave failed: "+err.Error())
	}
	s.saved.failed, s.saved.err = err != nil, err
}

// Save writes the conversation now; a non-empty name names it (for /load
// NAME). Names are unique: a name another session has is refused.
func (s *Session) Save(name string) error {
	if s.opts.Store == nil {
		return ErrNoStore
	}
	if len(s.msgs) == 0 {
		return errors.New("nothing to save yet: the conversation is empty")
	}
	if name != "" {
		if err := store.ValidName(name); err != nil {
			return err
		}
		owner, err := s.opts.Store.NameOwner(name)
		if err != nil {
			return err
		}
		if owner != "" && owner != s.saved.id {
			return fmt.Errorf("the name %q is taken by session %s; choose another (or /load %s)", name, owner, name)
		}
	}
	old := s.saved.name
	if name != "" {
		s.saved.name = name
	}
	if err := s.opts.Store.Save(s.record()); err != nil {
		s.saved.name = old
		return err
	}
	s.saved.failed, s.saved.err = false, nil
	return nil
}

// Load replaces the conversation with a saved one, given by id, name,
// number in the list (1 = newest) or id prefix; the settings it kept
// (system prompt, mode, reply budget, sampler, weight format, speculation)
// come with it.
func (s *Session) Load(ref string) error {
	if s.opts.Store == nil {
		return ErrNoStore
	}
	if s.reply != nil {
		return ErrBusy
	}
	id, err := s.opts.Store.Resolve(ref)
	if err != nil {
		return err
	}
	r, err := s.opts.Store.Load(id)
	if err != nil {
		return err
	}
	s.restore(r)
	return nil
}

// Resume loads the most recently updated saved session.
func (s *Session) Resume() error {
	if s.opts.Store == nil {
		return ErrNoStore
	}
	if s.reply != nil {
		return ErrBusy
	}
	r, err := s.opts.Store.Latest()
	if err != nil {
		return err
	}
	s.restore(r)
	return nil
}

func (s *Session) restore(r *store.Record) {
	msgs := make([]Message, 0, len(r.Messages))
	for _, m := range r.Messages {
		msgs = append(msgs, Message{Role: Role(m.Role), Content: m.Content, Time: m.Time})
	}
	s.msgs, s.ctxStart, s.last = msgs, 0, engine.Result{}
	cur := s.Info().Model
	differs := r.Model.Name != cur
	if a, b := r.Model.Identity, s.identity(); a != "" && b != "" {
		differs = a != b
	}
	s.restoring = true
	defer func() { s.restoring = false }()
	if r.Settings != nil {
		s.restoreSettings(r.Settings, differs)
	} else { // a file from before the settings map
		s.vals.System = r.System
		if r.Mode == "chat" || r.Mode == "raw" {
			s.vals.Mode = r.Mode
		}
		if r.MaxTokens > 0 {
			s.vals.MaxTokens = r.MaxTokens
		}
		if p := fromStore(r.Sampler); p.Validate() == nil {
			s.vals.Sampler, s.vals.RandomSeed = p, false
			s.setEngineSampler()
		} else {
			s.notices = append(s.notices, "the saved sampler settings are invalid; keeping the current ones")
		}
	}
	ident := s.saved.identity
	s.saved = persist{id: r.ID, name: r.Name, created: r.Created, identity: ident}
	if r.Created.IsZero() {
		s.saved.created = time.Now()
	}
	if differs {
		s.notices = append(s.notices, fmt.Sprintf("this conversation was held with %s; it continues with %s", quote.Cut(r.Model.Name, quote.Max), cur))
	}
}

// restoreSettings applies the settings a saved session kept, one at a
// time, so that one that cannot be restored (a draft model not loaded now)
// is told about and the others still are. On another model the weight
// format is not one: it was that model's (a GGUF file's q4_k_m, say).
func (s *Session) restoreSettings(saved map[string]string, otherModel bool) {
	system, hasSystem := saved["system"]
	for _, st := range settings.All() {
		text, ok := saved[st.Name]
		if !ok || !st.Persist || st.Name == "system" || (otherModel && st.Name == "quant") {
			continue
		}
		v := s.Settings()
		err := st.SetFormatted(&v, text)
		if err == nil {
			err = s.Apply(v)
		}
		if err != nil {
			s.notices = append(s.notices, fmt.Sprintf("the saved %s %s is not restored: %v", st.Name, quote.Cut(text, quote.Max), err))
		}
	}
	if hasSystem {
		s.vals.System = system // its place in the conversation is in the messages
	}
}

// New starts an empty conversation with the same model and settings (system
// prompt, mode, sampler, reply budget). The previous one stays saved; the
// next autosave starts a new file.
func (s *Session) New() error {
	if s.reply != nil {
		return ErrBusy
	}
	s.msgs, s.ctxStart, s.last = nil, 0, engine.Result{}
	s.saved = persist{identity: s.saved.identity}
	return nil
}

// Clear is New: the transcript empties, settings stay, nothing saved is lost.
func (s *Session) Clear() error { return s.New() }

// Regenerate drops the last reply and generates it again from the same
// prompt (a message whose reply was stopped before its first token gets
// one). The engine reuses the KV of the whole prompt, so only the reply is
// computed; with the same seed and knobs the reply is the same.
func (s *Session) Regenerate() error {
	if s.reply != nil {
		return ErrBusy
	}
	n := len(s.msgs)
	for n > 0 && s.msgs[n-1].Role == System {
		n-- // a system prompt set after the reply applies to the new one
	}
	u := n - 2 // the user message the last reply answers
	switch {
	case n > 0 && s.msgs[n-1].Role == User:
		u = n - 1 // a reply stopped before its first token left none: ask again
	case n < 2 || s.msgs[n-1].Role != Assistant || s.msgs[n-2].Role != User:
		return errors.New("no reply to regenerate yet")
	}
	user := s.msgs[u]
	return s.resend(u, user.Content, user.Time)
}

// Edit replaces the user message at index i of Messages() (which counts the
// system prompt first when there is one), drops everything after it and
// sends it again.
func (s *Session) Edit(i int, text string) error {
	if s.reply != nil {
		return ErrBusy
	}
	shown := s.Messages()
	switch {
	case i < 0 || i >= len(shown):
		return fmt.Errorf("no message %d (there are %d)", i, len(shown))
	case shown[i].Role == System:
		return errors.New("that is the system prompt: change it with /system")
	case shown[i].Role != User:
		return fmt.Errorf("message %d is a reply; only your own messages can be edited", i)
	}
	// Messages leaves out system messages in raw mode: find message i in msgs.
	j, k := 0, -1
	for ; j < len(s.msgs); j++ {
		if s.msgs[j].Role != System || s.vals.Mode == "chat" {
			k++
		}
		if k == i {
			break
		}
	}
	return s.resend(j, text, time.Time{})
}

// resend cuts the conversation before message j and sends text as a new
// user message; on failure the conversation is as before.
func (s *Session) resend(j int, text string, at time.Time) error {
	old, oldStart := s.msgs, s.ctxStart
	s.msgs = s.msgs[:j:j] // a new array on append: old stays intact for the undo
	for _, m := range old[j:] {
		if m.Role == System { // the system prompt changes after j still hold
			s.msgs = append(s.msgs, m)
		}
	}
	s.ctxStart = min(s.ctxStart, j)
	if err := s.Send(text); err != nil {
		s.msgs, s.ctxStart = old, oldStart
		return err
	}
	if !at.IsZero() {
		s.msgs[len(s.msgs)-1].Time = at
	}
	return nil
}

// History is the user's earlier prompts for up-arrow recall, oldest first:
// those of recent saved sessions, then this conversation's, without
// immediate repeats.
func (s *Session) History() []string {
	if s.opts.Store != nil && !s.saved.histOK {
		s.saved.history, _ = s.opts.Store.Prompts(s.saved.id, historyMax) // unreadable history is no history
		s.saved.histOK = true
	}
	out := make([]string, 0, len(s.saved.history)+len(s.msgs)/2)
	add := func(p string) {
		if strings.TrimSpace(p) != "" && (len(out) == 0 || out[len(out)-1] != p) {
			out = append(out, p)
		}
	}
	for _, p := range s.saved.history {
		add(p)
	}
	for _, m := range s.msgs {
		if m.Role == User {
			add(m.Content)
		}
	}
	return out
}

// historyMax bounds the prompts read from saved sessions.
const historyMax = 1000

func toStore(p sampler.Params) store.Sampler {
	return store.Sampler{Greedy: p.Greedy, Temperature: p.Temperature, TopK: p.TopK, TopP: p.TopP, MinP: p.MinP,
		RepeatPenalty: p.RepeatPenalty, FrequencyPenalty: p.FrequencyPenalty, PresencePenalty: p.PresencePenalty,
		PenaltyWindow: p.PenaltyWindow, Seed: p.Seed}
}

func fromStore(p store.Sampler) sampler.Params {
	return sampler.Params{Greedy: p.Greedy, Temperature: p.Temperature, TopK: p.TopK, TopP: p.TopP, MinP: p.MinP,
		RepeatPenalty: p.RepeatPenalty, FrequencyPenalty: p.FrequencyPenalty, PresencePenalty: p.PresencePenalty,
		PenaltyWindow: p.PenaltyWindow, Seed: p.Seed}
}

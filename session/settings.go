package session

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"chat/config/settings"
	"chat/engine/speculative"
)

// The settings (config/settings) of a session. The UI reads them with
// Settings and changes them with Apply (or /set, which is Set); both go
// through Apply, which switches what changed: the sampler from the next
// token, the weights and the speculation from the next reply.

// Settings are the current settings; Quant is the model's weight format and
// Spec the speculation of the next reply.
func (s *Session) Settings() settings.Values {
	v := s.vals
	v.Stop = slices.Clone(v.Stop)
	v.Quant = s.Quant()
	return v
}

// Apply makes v the settings. It switches only what differs from Settings;
// on an error the settings before the failing one are applied and the rest
// are not. Settings given only at start (the context size, the KV pool,
// threads) cannot change here.
func (s *Session) Apply(v settings.Values) error {
	cur := s.Settings()
	defer func() {
		// A saved conversation keeps its settings as they are now, not
		// only as they were at its last reply.
		if s.reply == nil && !s.restoring && len(s.msgs) > 0 && s.persistedChanged(cur) {
			s.autosave()
		}
	}()
	if err := v.Sampler.Validate(); err != nil {
		return err
	}
	for _, x := range []struct {
		name    string
		changed bool
	}{
		{"ctx_size", v.Context != cur.Context}, {"threads", v.Threads != cur.Threads}, {"kv_mem", v.KVMem != cur.KVMem},
		{"no_prefix_cache", v.NoPrefixCache != cur.NoPrefixCache},
	} {
		if x.changed {
			return fmt.Errorf("%s is set when chat starts (%s)", x.name, settings.Lookup(x.name).Dashed())
		}
	}
	if v.Mode != cur.Mode {
		if err := s.SetMode(v.Mode); err != nil {
			return err
		}
	}
	if v.MaxTokens != cur.MaxTokens {
		if err := s.SetMaxTokens(v.MaxTokens); err != nil {
			return err
		}
	}
	if v.System != cur.System {
		s.SetSystem(v.System)
	}
	s.vals.Stop, s.vals.IgnoreEOS, s.vals.Theme = slices.Clone(v.Stop), v.IgnoreEOS, v.Theme
	if v.ViewNext != cur.ViewNext || v.ViewTokens != cur.ViewTokens || v.ViewKV != cur.ViewKV || v.ViewSpark != cur.ViewSpark || v.Step != cur.Step {
		if v.Step && !cur.Step && s.remote != nil {
			return fmt.Errorf("step mode: %w", errRemote)
		}
		if v.ViewTokens != cur.ViewTokens {
			s.views.whole = false // the token view shows a reply it saw whole: the next one
		}
		s.vals.ViewNext, s.vals.ViewTokens, s.vals.ViewKV, s.vals.ViewSpark, s.vals.Step = v.ViewNext, v.ViewTokens, v.ViewKV, v.ViewSpark, v.Step
		s.setReplyViews()
	}
	if v.Sampler != cur.Sampler || v.RandomSeed != cur.RandomSeed {
		s.vals.Sampler, s.vals.RandomSeed = v.Sampler, v.RandomSeed
		s.setEngineSampler()
	}
	s.vals.Calib = v.Calib
	if v.KVQuantK != cur.KVQuantK || v.KVQuantV != cur.KVQuantV {
		if err := s.SetKVQuant(v.KVQuantK, v.KVQuantV); err != nil {
			return err
		}
	}
	if v.Quant != "" && v.Quant != cur.Quant {
		if err := s.SetQuant(v.Quant); err != nil {
			return err
		}
	}
	if v.Spec != cur.Spec || v.DraftK != cur.DraftK || v.SpecAdapt != cur.SpecAdapt {
		s.vals.SpecAdapt = v.SpecAdapt
		if err := s.setSpec(v.Spec, v.DraftK); err != nil {
			return err
		}
	}
	return nil
}

// persistedChanged reports whether a setting a session keeps differs from
// old.
func (s *Session) persistedChanged(old settings.Values) bool {
	now := s.Settings()
	for _, st := range settings.All() {
		if st.Persist && st.Format(&old) != st.Format(&now) {
			return true
		}
	}
	return false
}

// Set is /set NAME VALUE: the value is read by the setting's own rule (the
// one the flags and the config file use) and applied. It returns what the
// setting is now.
func (s *Session) Set(name, text string) (string, error) {
	st := settings.Lookup(name)
	if st == nil || st.Where&settings.Set == 0 {
		if st != nil {
			return "", fmt.Errorf("%s is set when chat starts (%s)", st.Name, st.Dashed())
		}
		return "", settings.UnknownError(name, settings.Set)
	}
	if st.Name == "system" {
		return cmdSystem(s, text)
	}
	v := s.Settings()
	if err := st.SetText(&v, text); err != nil {
		return "", err
	}
	if err := s.Apply(v); err != nil {
		return "", err
	}
	v = s.Settings()
	reply := st.Name + " " + st.Show(&v)
	if v.Sampler.Greedy && st.Live && slices.Contains([]string{"temperature", "top_k", "top_p", "min_p", "seed"}, st.Name) {
		reply += " (greedy is on, so it has no effect until /set greedy off)"
	}
	if st.Name == "stop" && len(v.Stop) > 0 {
		reply = "stop at " + st.Show(&v)
	}
	return reply, nil
}

// MaxTokens is the reply budget.
func (s *Session) MaxTokens() int { return s.vals.MaxTokens }

// SetMaxTokens sets the reply budget of the next reply.
func (s *Session) SetMaxTokens(n int) error {
	st := settings.Lookup("max_tokens")
	if _, err := st.Parse(fmt.Sprint(n)); err != nil {
		return err
	}
	s.vals.MaxTokens = n
	return nil
}

// SetMode switches between "chat" and "raw" for the next reply.
func (s *Session) SetMode(mode string) error {
	if _, err := settings.Lookup("mode").Parse(mode); err != nil || mode == "" {
		return fmt.Errorf("unknown mode %q (want chat or raw)", mode)
	}
	if s.reply != nil {
		return ErrBusy
	}
	s.vals.Mode = mode
	return nil
}

// SetSystem sets the system prompt (used in chat mode) for the next reply.
// In a conversation that has begun, the change is kept as a system message
// at this point, so the transcript shows where it took effect.
func (s *Session) SetSystem(text string) {
	if text == s.vals.System {
		return
	}
	s.vals.System = text
	if len(s.msgs) > 0 && s.vals.Mode == "chat" {
		s.msgs = append(s.msgs, Message{Role: System, Content: text})
	}
	if s.reply == nil {
		s.autosave()
	}
}

// setSpec sets the speculation of the next reply: method (off, draft,
// ngram, lookup) with k guesses per round.
func (s *Session) setSpec(method string, k int) error {
	m, err := speculative.ParseMethod(method)
	if err != nil {
		return err
	}
	if s.remote != nil {
		if m != speculative.Off {
			return errRemote
		}
		s.vals.Spec, s.vals.DraftK = method, k
		return nil
	}
	if k < 1 || k > speculative.MaxK {
		return fmt.Errorf("draft_k must be between 1 and %d, got %d", speculative.MaxK, k)
	}
	c := speculative.Config{Method: m, K: k, Adapt: s.vals.SpecAdapt}
	if m == speculative.Draft {
		if s.draft == nil {
			return errors.New("no draft model: /draft FILE loads one (or start with --draft FILE)")
		}
		c.Draft = s.draft
	}
	if err := s.eng.SetSpeculation(c); err != nil {
		return err
	}
	s.vals.Spec, s.vals.DraftK = method, k
	return nil
}

// Speculation is the current speculative decoding setting.
func (s *Session) Speculation() speculative.Config {
	if s.remote != nil {
		return speculative.Config{}
	}
	return s.eng.Speculation()
}

// setEngineSampler gives the running reply and the engine the knobs (a
// server takes them with the next request).
func (s *Session) setEngineSampler() {
	if s.eng != nil {
		s.eng.SetSampler(s.samplerParams())
	}
}

// SetSpeculation turns speculative decoding off or to a draft model, n-gram
// or prompt lookup, from the next reply on. Switching to Draft without a
// draft model reuses the one given before.
func (s *Session) SetSpeculation(c speculative.Config) error {
	if c.Draft != nil {
		s.draft = c.Draft
	}
	return s.setSpec(c.Method.String(), c.Guesses())
}

// showSettings lists the settings /set takes, with their values, for /show.
func (s *Session) showSettings(b *strings.Builder) {
	v := s.Settings()
	for _, st := range settings.All() {
		if st.Where&settings.Set == 0 || st.Name == "system" || st.Name == "mode" {
			continue
		}
		val := st.Show(&v)
		if st.Name == "seed" && v.RandomSeed && s.seed != 0 {
			val += fmt.Sprintf(" (the last reply's: %d)", s.seed)
		}
		fmt.Fprintf(b, "%-17s %s\n", st.Name, val)
	}
}

// Package session owns the conversation: its turns, the system prompt, the
// chat template, the context budget and the settings (config/settings). It
// renders the conversation to token ids and asks the engine for a reply; the
// UI talks only to a Session.
package session

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync/atomic"
	"time"

	"chat/config/settings"
	"chat/engine"
	"chat/engine/constrain"
	"chat/engine/sampler"
	"chat/models"
	"chat/models/lora"
	"chat/models/nn"
	"chat/models/plan"
	"chat/session/store"
)

// Options configure a Session.
type Options struct {
	// Settings are the knobs to start with (settings.Defaults for the
	// others). Mode "" picks chat for post-trained models, raw otherwise;
	// MaxTokens 0 takes the mode's default.
	Settings settings.Values
	// Draft is the loaded draft model for speculation "draft", and
	// DraftPath its file (for /show).
	Draft     models.Model
	DraftPath string
	// OnText, if set, receives reply text as it is generated, from the engine
	// goroutine (headless printing).
	OnText func(string)
	// Store, if set, receives the conversation after every finished reply
	// and backs Save, Load, Resume and History (persist.go).
	Store *store.Store
	// ModelPath and ModelIdentity say in saved sessions which model was used:
	// "" for the embedded model; the identity is computed from the path when
	// empty (store.Identity).
	ModelPath, ModelIdentity string
	// Open loads a model file ("" is the embedded model): the float weights
	// again when switching back from a quantized format, and /model and
	// /draft. Nil: those switches are refused.
	Open func(path string) (models.Model, error)
	// Constraint limits the replies (constraint.go); zero: free replies.
	Constraint constrain.Spec
	// Adapters are LoRA adapters applied to the model at start, without
	// merging; /lora switches them (lora.go).
	Adapters []*lora.Adapter
	// Probe measures the machine in the background (models/plan) when no
	// probe is cached, for the decode bound in Stats (bound.go).
	Probe bool
	// Warm runs one prompt-sized pass in the background at start
	// (engine.WarmTokens of nn.MaxChunk), so that the first reply does not
	// pay for the runner's first allocations while the user is typing it
	// (the TUI; a headless reply would only wait for it).
	Warm bool
	// OnStep, if set, gets the engine's record of every step of every
	// reply, from the engine goroutine (--trace).
	OnStep func(*engine.StepRecord)
}

// Session is one conversation with one model. Its methods are meant to be
// called from a single goroutine (the UI's, or main's in headless mode).
type Session struct {
	model models.Model
	eng   *engine.Engine
	tmpl  Template
	opts  Options
	vals  settings.Values // Quant and Spec are read from the model and the engine
	// fileQuant is the weight format of the model file as it was loaded:
	// only a float file's weights take another format (SetQuant).
	fileQuant string
	draft     models.Model // the draft model speculation "draft" uses, nil if none
	// loraBase is the model without the adapters, which are applied to it
	// in order when on (lora.go).
	loraBase models.Model
	adapters []adapter
	// machine is the probed machine for Stats.DecodeBound, nil until known.
	machine atomic.Pointer[plan.Machine]

	// msgs are the turns as the user sees them, with the system prompt as a
	// System message where it was set (first, or where it changed).
	msgs     []Message
	ctxStart int // msgs before this index no longer fit the context; they stay on screen
	// reprefill is set by a weight switch until the next reply's prefill
	// is done.
	reprefill bool
	remote    *remoteBackend // chat --remote: replies come from a server (remote.go); nil: from eng
	reply     reply
	seed      uint64 // the seed of the running or last reply
	last      engine.Result
	lastIDs   []int // prompt ids of the last request
	notices   []string
	saved     persist    // the saved-session side (persist.go)
	restoring bool       // a saved session's settings are being applied: no autosave
	cons      constraint // constrained replies (constraint.go)
	views     viewState  // the views (views.go)
}

// DefaultMode is the mode a model opens in: chat for a checkpoint whose
// payload names a post-training stage (course-format §1.1) or a GGUF file
// that carries a chat template; raw continuation otherwise.
func DefaultMode(m models.Model) string {
	if m.Info().ChatTuned() {
		return "chat"
	}
	if g, ok := m.(ggufModel); ok && g.GGUF().Has("tokenizer.chat_template") {
		return "chat"
	}
	return "raw"
}

// New starts an engine on m.
func New(m models.Model, opts Options) (*Session, error) {
	v := opts.Settings
	if v.Mode == "" {
		v.Mode = DefaultMode(m)
	}
	if v.Mode != "chat" && v.Mode != "raw" {
		return nil, fmt.Errorf("session: unknown mode %q (want chat or raw)", v.Mode)
	}
	if v.MaxTokens <= 0 {
		v.MaxTokens = settings.Lookup("max_tokens").Default(v.Mode).(int)
	}
	if v.Spec == "" {
		v.Spec = "off"
	}
	if v.DraftK <= 0 {
		v.DraftK = settings.Lookup("draft_k").Default("").(int)
	}
	if err := v.Sampler.Validate(); err != nil {
		return nil, err
	}
	if v.Sampler.PenaltyWindow <= 0 {
		v.Sampler.PenaltyWindow = settings.Lookup("penalty_window").Default("").(int)
	}
	want := v
	v.Quant, v.Spec = "", "off" // applied below, through the same switches /set uses
	s := &Session{model: m, opts: opts, vals: v, draft: opts.Draft, fileQuant: m.Info().Quant}
	m, err := s.initLora(m)
	if err != nil {
		return nil, err
	}
	s.model = m
	s.eng = engine.NewWithOptions(m, engineOptions(v))
	if err := s.eng.Err(); err != nil {
		s.eng.Close()
		return nil, err // before the banner and the TUI, not at the first message
	}
	s.tmpl = TemplateFor(m)
	s.eng.SetSampler(s.samplerParams())
	if err := s.Apply(want); err != nil {
		s.eng.Close()
		return nil, err
	}
	if err := s.SetConstraint(opts.Constraint); err != nil {
		s.eng.Close()
		return nil, fmt.Errorf("%s: %w", opts.Constraint.Flag(), err) // which of the command line's files
	}
	s.notices, s.reprefill = nil, false // nothing to re-prefill yet
	s.startProbe()
	if opts.Warm {
		go s.eng.WarmTokens(nn.MaxChunk) // fails harmlessly (ErrBusy) if a reply has started
	}
	if err := s.tmpl.Err(); err != nil {
		s.notices = append(s.notices, "the model's chat template failed ("+err.Error()+"); using the built-in "+s.tmpl.Name()+" format")
	}
	return s, nil
}

// engineOptions are the engine's part of the settings.
func engineOptions(v settings.Values) engine.Options {
	return engine.Options{KVMem: int64(v.KVMem) << 20, NoPrefixCache: v.NoPrefixCache,
		KVQuantK: v.KVQuantK, KVQuantV: v.KVQuantV, Context: v.Context}
}

// Close stops the engine. A reply still running is stopped first and kept,
// with the text it has so far, and saved like any finished turn.
func (s *Session) Close() {
	if s.reply != nil {
		s.reply.Stop()
		s.finish(s.reply.Wait())
	}
	if s.eng != nil {
		s.eng.Close()
	}
}

// Info implements the UI's view of the model and mode.
func (s *Session) Info() Info {
	if b := s.remote; b != nil {
		return Info{Model: b.model, Arch: "remote", ContextLength: b.context, Mode: s.vals.Mode, System: s.vals.System}
	}
	mi := s.model.Info()
	in := Info{Model: mi.Name, Arch: mi.Arch, Quant: mi.Quant, Params: mi.Params,
		ContextLength: s.eng.Window(), Mode: s.vals.Mode, System: s.vals.System, Draft: s.DraftName()}
	if t := mi.MaxContext(); t > in.ContextLength {
		in.TrainContext = t
	}
	return in
}

// Messages returns the finished turns, with the system prompt where it was
// set (chat mode) and the turns the model no longer sees marked Dropped.
func (s *Session) Messages() []Message {
	chat := s.vals.Mode == "chat"
	if len(s.msgs) == 0 {
		if s.vals.System != "" && chat {
			return []Message{{Role: System, Content: s.vals.System}}
		}
		return nil
	}
	out := make([]Message, 0, len(s.msgs))
	for i, m := range s.msgs {
		if m.Role == System && !chat {
			continue
		}
		m.Dropped = i < s.ctxStart && m.Role != System
		out = append(out, m)
	}
	return out
}

// Sampler returns the current knobs.
func (s *Session) Sampler() sampler.Params { return s.vals.Sampler }

// SetSampler changes the knobs; a running reply uses them from its next
// token. Invalid knobs are refused (Validate) and change nothing.
func (s *Session) SetSampler(p sampler.Params) {
	v := s.Settings()
	v.Sampler = p
	s.Apply(v)
}

// samplerParams are the knobs for the engine: with a random seed, the seed
// the running (or next) reply was given.
func (s *Session) samplerParams() sampler.Params {
	p := s.vals.Sampler
	if s.vals.RandomSeed {
		p.Seed = s.seed
	}
	return p
}

// LastSeed is the seed of the running or last reply: with seed pinned to
// it, the reply comes out the same again.
func (s *Session) LastSeed() uint64 { return s.seed }

// SamplerOrder is the processor order the sampler applies.
func (s *Session) SamplerOrder() []string { return sampler.Order() }

// Busy reports whether a reply is being generated.
func (s *Session) Busy() bool { return s.reply != nil }

// ErrBusy is returned by Send while a reply is being generated.
var ErrBusy = errors.New("a reply is still being generated (Esc or Ctrl+C stops it)")

// Send adds a user message and starts the reply.
func (s *Session) Send(text string) error {
	if s.reply != nil {
		return ErrBusy
	}
	if strings.TrimSpace(text) == "" && s.vals.Mode == "chat" {
		return errors.New("empty message")
	}
	n := len(s.msgs)
	if n == 0 && s.vals.System != "" && s.vals.Mode == "chat" {
		s.msgs = append(s.msgs, Message{Role: System, Content: s.vals.System})
	}
	s.msgs = append(s.msgs, Message{Role: User, Content: text, Time: time.Now()})
	undo := func() { s.msgs = s.msgs[:n] }
	s.seed = s.vals.Sampler.Seed
	if s.vals.RandomSeed {
		s.seed = rand.Uint64()
	}
	if s.remote != nil {
		r, err := s.startRemote()
		if err != nil {
			undo()
			return err
		}
		s.lastIDs, s.reply = nil, r
		return nil
	}
	prompt, budget, err := s.prompt()
	if err != nil {
		undo()
		return err
	}
	req := engine.Request{Prompt: prompt, MaxTokens: budget, Sampler: s.samplerParams(), OnText: s.opts.OnText,
		StopIDs: s.stopIDs(), Stop: s.vals.Stop, Constraint: s.requestConstraint(),
		Logprobs: s.vals.TopLogprobs > 0, TopLogprobs: s.vals.TopLogprobs,
		Observe: s.observe(), Step: s.vals.Step, OnStep: s.opts.OnStep}
	s.beginViews(prompt)
	r, err := s.eng.Start(req)
	if err != nil {
		undo()
		return err
	}
	s.lastIDs = prompt
	s.reply = r
	return nil
}

// stopIDs end a reply: the template's end of turn in chat mode; in raw mode
// a GGUF model's end-of-generation tokens (as llama.cpp stops), and none
// for course checkpoints (the course's generate runs to its budget). With
// ignore_eos none, in both modes, as chat serve and vLLM take it.
func (s *Session) stopIDs() []int {
	switch {
	case s.vals.IgnoreEOS:
		return nil
	case s.vals.Mode == "chat":
		return s.tmpl.Stops()
	}
	return RawStops(s.model)
}

// prompt renders the conversation and the reply budget. In chat mode it drops
// the oldest turns until the prompt leaves room for a reply (the course never
// needs to: it sends one turn); in raw mode the whole text is the prompt and
// the engine's window rule handles overflow, as the course's generate does.
func (s *Session) prompt() ([]int, int, error) {
	ctx := s.eng.Window()
	tok := s.model.Tokenizer()
	if s.vals.Mode == "raw" {
		var b strings.Builder
		for _, m := range s.msgs {
			if m.Role != System {
				b.WriteString(m.Content)
			}
		}
		ids := RawIDs(tok, b.String())
		if len(ids) == 0 {
			return nil, 0, errors.New("empty prompt: the model needs at least one token to continue")
		}
		return ids, s.vals.MaxTokens, nil
	}
	reserve := min(s.vals.MaxTokens, ctx/4)
	dropped := s.ctxStart
	for {
		msgs := turns(s.msgs[dropped:])
		if s.vals.System != "" {
			msgs = append([]Message{{Role: System, Content: s.vals.System}}, msgs...)
		}
		ids := s.tmpl.Render(msgs, true)
		left := len(turns(s.msgs[dropped:]))
		if len(ids)+reserve <= ctx || (len(ids) < ctx && left == 1) {
			if n := len(turns(s.msgs[s.ctxStart:dropped])); n > 0 {
				s.ctxStart = dropped
				s.notices = append(s.notices, fmt.Sprintf("the model no longer sees the %d oldest messages: they do not fit its %d-token context", n, ctx))
			}
			return ids, min(s.vals.MaxTokens, ctx-len(ids)), nil
		}
		if left <= 1 {
			return nil, 0, fmt.Errorf("the message is %d tokens with the template; the model's context is %d tokens: shorten it", len(ids), ctx)
		}
		dropped++
		for dropped < len(s.msgs) && s.msgs[dropped].Role == System {
			dropped++
		}
	}
}

// RawIDs are the ids of a text to continue (raw mode): encoded as ordinary
// text, after BOS when the model takes one; an empty text without a BOS
// starts where a new text starts in the training data, after the
// end-of-text separator.
func RawIDs(tok models.Tokenizer, text string) []int {
	ids := tok.Encode(text)
	start := tok.BOS()
	if start < 0 && len(ids) == 0 {
		start = tok.EOT()
	}
	if start >= 0 {
		ids = append([]int{start}, ids...)
	}
	return ids
}

// turns are the user and assistant messages of msgs (the system prompt
// events left out).
func turns(msgs []Message) []Message {
	out := make([]Message, 0, len(msgs))
	for _, m := range msgs {
		if m.Role != System {
			out = append(out, m)
		}
	}
	return out
}

// CountTokens is how many tokens text is as a message (the count shown while
// typing). Long texts are not counted (-1): the UI calls this on every edit.
func (s *Session) CountTokens(text string) int {
	if len(text) > maxCountBytes || s.remote != nil {
		return -1
	}
	return len(s.model.Tokenizer().Encode(text))
}

const maxCountBytes = 64 << 10

// Stop ends the reply being generated; what was generated so far is kept.
func (s *Session) Stop() {
	if s.reply != nil {
		s.reply.Stop()
	}
}

// Poll drains what happened since the last call. When the reply has
// finished, its text becomes an assistant message.
func (s *Session) Poll() Update {
	u := Update{Notices: s.notices}
	s.notices = nil
	if s.reply == nil {
		u.Stats = s.stats(s.last.Stats)
		u.Step, u.Blocks = s.views.step, s.blockMap()
		return u
	}
	d := s.reply.Poll()
	if d.Stats.PrefillTokS > 0 || d.Stats.GenTokens > 0 {
		// The re-prefill after a weight switch is done: the reply's own
		// state (generating, stepping) is what the UI should show now.
		s.reprefill = false
	}
	u.Text = d.Text
	u.Stats = s.stats(d.Stats)
	u.Busy = !d.Done
	if s.remote == nil {
		s.viewsOf(d, &u)
		u.Blocks = s.blockMap()
	}
	if d.Done {
		s.finish(d.Result)
		u.Done, u.Reason, u.Err, u.ContextFull = true, d.Result.Reason, d.Result.Err, d.Result.ContextFull()
		u.Stats = s.stats(d.Result.Stats)
		u.Notices = append(u.Notices, s.notices...) // the autosave's
		s.notices = nil
	}
	return u
}

// Notices drains the notices Poll would give (headless: nothing polls).
func (s *Session) Notices() []string {
	n := s.notices
	s.notices = nil
	return n
}

// Wait blocks until the running reply is done and returns it (headless).
func (s *Session) Wait() engine.Result {
	if s.reply == nil {
		return s.last
	}
	res := s.reply.Wait()
	s.finish(res)
	return res
}

// LastPrompt is the prompt ids of the last request.
func (s *Session) LastPrompt() []int { return s.lastIDs }

// finish ends the reply: its text becomes an assistant message, but for a
// reply stopped before its first token, which leaves the user's message
// unanswered (as ollama drops a cancelled reply) rather than an empty turn
// in the next prompt and the saved session.
func (s *Session) finish(res engine.Result) {
	s.reply = nil
	s.reprefill = false
	s.last = res
	if res.Reason != engine.ReasonStopped || res.Text != "" {
		s.msgs = append(s.msgs, Message{Role: Assistant, Content: res.Text, Time: time.Now()})
	}
	if res.Stats.WindowCuts > 0 {
		s.notices = append(s.notices, s.windowNote())
	}
	s.finishViews(res)
	s.autosave()
}

// windowNote says that a raw text outgrew the context and what the model
// went on from, as the engine keeps it (Engine.WindowKeep).
func (s *Session) windowNote() string {
	w, keep := s.eng.Window(), s.eng.WindowKeep()
	rule := fmt.Sprintf("it keeps the latest %d and goes on from them each time the context fills", keep)
	if s.model.Info().Window == models.WindowSlide {
		rule = fmt.Sprintf("the latest %d, the window sliding one token at a time", keep)
	}
	return fmt.Sprintf("the text outgrew the %d-token context: the model sees only its latest tokens (the course's window rule: %s)", w, rule)
}

// prefillRateMin is the fewest prefilled tokens a prefill speed is quoted
// for: below it the time is mostly overhead and the rate means nothing.
const prefillRateMin = 8

func (s *Session) stats(e engine.Stats) Stats {
	st := Stats{PromptTokens: e.PromptTokens, ReusedTokens: e.ReusedTokens, GenTokens: e.GenTokens,
		PrefillTokS: e.PrefillTokS, DecodeTokS: e.DecodeTokS, TTFT: e.TTFT, KVUsed: e.KVUsed, KVCap: e.KVCap,
		Quant: s.Quant(), Seed: s.seed}
	if s.remote != nil {
		st.Server = s.remote.server()
	}
	if e.PromptTokens-e.ReusedTokens < prefillRateMin {
		st.PrefillTokS = 0
	}
	st.KV = KVStats{FormatK: e.KVFormatK, FormatV: e.KVFormatV,
		Blocks: e.PoolBlocks, Used: e.PoolUsed, Seq: e.SeqBlocks, Cached: e.TreeBlocks, BlockSize: e.BlockSize,
		Bytes: int64(e.PoolBlocks) * e.BlockBytes, Evictions: e.Evictions, HitRate: e.HitRate, TotalReused: e.TotalReusedTokens, TotalPrompt: e.TotalPromptTokens}
	if e.PromptTokens > 0 {
		st.KV.LastReuse = float64(e.ReusedTokens) / float64(e.PromptTokens)
	}
	st.Spec = specStats(e)
	s.constraintStats(e, &st)
	st.DecodeBound = s.decodeBound(e)
	return st
}

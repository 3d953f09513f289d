// Package session owns the conversation: its turns, the system prompt, the
// chat template and the context budget. It renders the conversation to token
// ids and asks the engine for a reply; the UI talks only to a Session.
package session

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"chat/engine"
	"chat/engine/constrain"
	"chat/engine/sampler"
	"chat/engine/speculative"
	"chat/models"
	"chat/session/store"
)

// Options configure a Session.
type Options struct {
	Mode      string // "chat" or "raw"; "" picks chat for post-trained checkpoints, raw otherwise
	System    string // system prompt (chat mode)
	MaxTokens int    // reply budget; 0 means 256
	Sampler   sampler.Params
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
	// Reload opens the float weights again, for switching back from a
	// quantized format (the float copies are dropped to free memory).
	Reload func() (models.Model, error)
	// Quant is the weight format to start in ("" or "f32": as loaded).
	Quant string
	// Speculation is the speculative decoding to start with.
	Speculation speculative.Config
	// Engine sizes the KV block pool and turns the prefix cache off.
	Engine engine.Options
	// Constraint limits the replies (constraint.go); zero: free replies.
	Constraint constrain.Spec
}

// Session is one conversation with one model. Its methods are meant to be
// called from a single goroutine (the UI's, or main's in headless mode).
type Session struct {
	model    models.Model
	eng      *engine.Engine
	tmpl     Template
	opts     Options
	mode     string
	msgs     []Message
	ctxStart int // msgs before this index no longer fit the context; they stay on screen
	// reprefill is set by a weight switch until the next reply finishes.
	reprefill bool
	reply     *engine.Reply
	replyBuf  strings.Builder
	last      engine.Result
	lastIDs   []int // prompt ids of the last request
	notices   []string
	saved     persist    // the saved-session side (persist.go)
	cons      constraint // constrained replies (constraint.go)
}

// DefaultMode is the mode a model opens in: chat for a checkpoint whose
// payload names a post-training stage (course-format §1.1) or a GGUF file
// that carries a chat template; raw continuation otherwise.
func DefaultMode(m models.Model) string {
	if st := m.Info().Stage; st != "" && st != "pretrain" {
		return "chat"
	}
	if g, ok := m.(ggufModel); ok && g.GGUF().Has("tokenizer.chat_template") {
		return "chat"
	}
	return "raw"
}

// New starts an engine on m.
func New(m models.Model, opts Options) (*Session, error) {
	info := m.Info()
	mode := opts.Mode
	if mode == "" {
		mode = DefaultMode(m)
	}
	if mode != "chat" && mode != "raw" {
		return nil, fmt.Errorf("session: unknown mode %q (want chat or raw)", mode)
	}
	if opts.MaxTokens <= 0 {
		opts.MaxTokens = 256
	}
	s := &Session{model: m, eng: engine.NewWithOptions(m, opts.Engine), opts: opts, mode: mode}
	s.tmpl = templateFor(m)
	if err := s.tmpl.Err(); err != nil {
		s.notices = append(s.notices, "the model's chat template failed ("+err.Error()+"); using the built-in "+s.tmpl.Name()+" format")
	}
	s.eng.SetSampler(opts.Sampler)
	if opts.Quant != "" && opts.Quant != info.Quant {
		if err := s.SetQuant(opts.Quant); err != nil {
			s.eng.Close()
			return nil, err
		}
	}
	if opts.Speculation.Method != speculative.Off {
		if err := s.SetSpeculation(opts.Speculation); err != nil {
			s.eng.Close()
			return nil, err
		}
	}
	if err := s.SetConstraint(opts.Constraint); err != nil {
		s.eng.Close()
		return nil, err
	}
	return s, nil
}

// Close stops the engine.
func (s *Session) Close() {
	if s.reply != nil {
		s.reply.Stop()
		s.reply.Wait()
	}
	s.eng.Close()
}

// Info implements the UI's view of the model and mode.
func (s *Session) Info() Info {
	mi := s.model.Info()
	return Info{Model: mi.Name, Arch: mi.Arch, Quant: mi.Quant, Params: mi.Params,
		ContextLength: mi.ContextLength, Mode: s.mode, System: s.opts.System}
}

// Messages returns the finished turns.
func (s *Session) Messages() []Message {
	out := make([]Message, 0, len(s.msgs)+1)
	if s.opts.System != "" && s.mode == "chat" {
		out = append(out, Message{Role: System, Content: s.opts.System})
	}
	return append(out, s.msgs...)
}

// Sampler returns the current knobs.
func (s *Session) Sampler() sampler.Params { return s.opts.Sampler }

// SetSampler changes the knobs; a running reply uses them from its next token.
func (s *Session) SetSampler(p sampler.Params) {
	s.opts.Sampler = p
	s.eng.SetSampler(p)
}

// SamplerOrder is the processor order the sampler applies.
func (s *Session) SamplerOrder() []string { return sampler.Order() }

// Busy reports whether a reply is being generated.
func (s *Session) Busy() bool { return s.reply != nil }

// ErrBusy is returned by Send while a reply is being generated.
var ErrBusy = errors.New("a reply is still being generated (Esc stops it)")

// Send adds a user message and starts the reply.
func (s *Session) Send(text string) error {
	if s.reply != nil {
		return ErrBusy
	}
	if strings.TrimSpace(text) == "" && s.mode == "chat" {
		return errors.New("empty message")
	}
	s.msgs = append(s.msgs, Message{Role: User, Content: text, Time: time.Now()})
	prompt, budget, err := s.prompt()
	if err != nil {
		s.msgs = s.msgs[:len(s.msgs)-1]
		return err
	}
	req := engine.Request{Prompt: prompt, MaxTokens: budget, Sampler: s.opts.Sampler, OnText: s.opts.OnText,
		Constraint: s.requestConstraint()}
	if s.mode == "chat" {
		req.StopIDs = s.tmpl.Stops()
	}
	r, err := s.eng.Start(req)
	if err != nil {
		s.msgs = s.msgs[:len(s.msgs)-1]
		return err
	}
	s.lastIDs = prompt
	s.reply = r
	s.replyBuf.Reset()
	return nil
}

// prompt renders the conversation and the reply budget. In chat mode it drops
// the oldest turns until the prompt leaves room for a reply (the course never
// needs to: it sends one turn); in raw mode the whole text is the prompt and
// the engine's window rule handles overflow, as the course's generate does.
func (s *Session) prompt() ([]int, int, error) {
	ctx := s.model.Info().ContextLength
	tok := s.model.Tokenizer()
	if s.mode == "raw" {
		var b strings.Builder
		for _, m := range s.msgs {
			b.WriteString(m.Content)
		}
		ids := tok.Encode(b.String())
		if bos := tok.BOS(); bos >= 0 {
			ids = append([]int{bos}, ids...)
		}
		if len(ids) == 0 {
			return nil, 0, errors.New("empty prompt: the model needs at least one token to continue")
		}
		return ids, s.opts.MaxTokens, nil
	}
	reserve := min(s.opts.MaxTokens, ctx/4)
	dropped := s.ctxStart
	for {
		msgs := s.msgs[dropped:]
		if s.opts.System != "" {
			msgs = append([]Message{{Role: System, Content: s.opts.System}}, msgs...)
		}
		ids := s.tmpl.Render(msgs, true)
		if len(ids)+reserve <= ctx || (len(ids) < ctx && len(s.msgs)-dropped == 1) {
			if n := dropped - s.ctxStart; n > 0 {
				s.ctxStart = dropped
				s.notices = append(s.notices, fmt.Sprintf("the model no longer sees the %d oldest messages: they do not fit its %d-token context", n, ctx))
			}
			return ids, min(s.opts.MaxTokens, ctx-len(ids)), nil
		}
		if len(s.msgs)-dropped <= 1 {
			return nil, 0, fmt.Errorf("the message is %d tokens with the template; the model's context is %d tokens: shorten it", len(ids), ctx)
		}
		dropped++
	}
}

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
		return u
	}
	d := s.reply.Poll()
	u.Text = d.Text
	s.replyBuf.WriteString(d.Text)
	u.Stats = s.stats(d.Stats)
	u.Busy = !d.Done
	if d.Done {
		s.finish(d.Result)
		u.Done, u.Reason, u.Err = true, d.Result.Reason, d.Result.Err
		u.Stats = s.stats(d.Result.Stats)
	}
	return u
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

func (s *Session) finish(res engine.Result) {
	s.reply = nil
	s.reprefill = false
	s.last = res
	s.msgs = append(s.msgs, Message{Role: Assistant, Content: res.Text, Time: time.Now()})
	s.autosave()
}

func (s *Session) stats(e engine.Stats) Stats {
	st := Stats{PromptTokens: e.PromptTokens, ReusedTokens: e.ReusedTokens, GenTokens: e.GenTokens,
		PrefillTokS: e.PrefillTokS, DecodeTokS: e.DecodeTokS, TTFT: e.TTFT, KVUsed: e.KVUsed, KVCap: e.KVCap,
		Quant: s.model.Info().Quant}
	st.KV = KVStats{FormatK: e.KVFormatK, FormatV: e.KVFormatV,
		Blocks: e.PoolBlocks, Used: e.PoolUsed, Seq: e.SeqBlocks, Cached: e.TreeBlocks, BlockSize: e.BlockSize,
		Evictions: e.Evictions, HitRate: e.HitRate, TotalReused: e.TotalReusedTokens, TotalPrompt: e.TotalPromptTokens}
	if e.PromptTokens > 0 {
		st.KV.LastReuse = float64(e.ReusedTokens) / float64(e.PromptTokens)
	}
	sp := e.Spec
	st.Spec = SpecStats{Method: sp.Method.String(), K: sp.K, Acceptance: sp.AcceptanceRate(),
		MeanAccepted: sp.MeanAccepted(), TokensPerPass: sp.TokensPerPass()}
	if sp.Method != speculative.Off {
		for i := 0; i < sp.K && i < len(sp.PosProposed); i++ {
			st.Spec.PerPosition[i] = sp.PosRate(i)
		}
	}
	s.constraintStats(e, &st)
	return st
}

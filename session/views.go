package session

import (
	"strings"

	"chat/engine"
	"chat/engine/sampler"
	"chat/models"
)

// The views of the TUI (config/settings: next_token, token_view, kv_map,
// sparklines) and step mode. The session asks the engine to record only
// what a view that is on shows (engine/observe.go), turns the records into
// what the UI draws (token texts instead of ids) and keeps, with each reply
// made while the token view was on, its tokens and the tokens of its
// prompt's turn. Sparklines need nothing beyond Stats.

// Token is one token of a message in the token view. Text is the token's
// bytes as the tokenizer gives them (not sanitised: the UI draws them
// through termtext).
type Token struct {
	Text    string
	Prob    float64 // a reply's: the probability it was drawn with (after the sampler chain)
	Drafted bool    // a reply's: a drafter's guess the target accepted
	Prompt  bool    // a prompt token (of the turn that asked for the reply)
	Cached  bool    // a prompt token whose KV came from the prefix cache
}

// Candidate is one token of a step: its probability under the model
// (before the sampler chain) and after the chain.
type Candidate struct {
	ID            int
	Text          string // the token's bytes (not sanitised)
	Before, After float64
}

// Stage is one processor the sampler applied and the ids it left.
type Stage struct {
	Name string
	Left int
}

// StepView is one decision, for the next-token view: a token, or the
// first token of a speculative round.
type StepView struct {
	Token   int       // the reply's token number (1-based)
	Preview bool      // step mode: the next token, not drawn yet (Drawn.ID is -1)
	Drawn   Candidate // the token taken
	// Before are the likeliest tokens under the model, After the likeliest
	// the sampler could draw, most likely first; each with both figures.
	Before, After               []Candidate
	EntropyBefore, EntropyAfter float64 // bits
	Vocab                       int
	Stages                      []Stage // the processors applied, in order, with the ids each left
	Params                      sampler.Params
	// A speculative round: the guesses and how many were accepted.
	Round    bool
	Guesses  []string
	Accepted int
	// The reply's KV blocks after the step.
	SeqBlocks, SharedBlocks, NewBlocks, PoolUsed, PoolBlocks int
}

// BlockState is what one block of the KV pool holds (the KV block map).
type BlockState = engine.BlockState

// The block states.
const (
	BlockFree    = engine.BlockFree
	BlockOwn     = engine.BlockOwn
	BlockShared  = engine.BlockShared
	BlockCached  = engine.BlockCached
	BlockEvicted = engine.BlockEvicted
)

// viewState is the session's side of the views.
type viewState struct {
	step, preview *StepView    // the latest record and preview of the reply
	replyTokens   []Token      // the running reply's tokens (token view)
	whole         bool         // the token view has been on since the reply began
	turnStart     int          // index in the running request's prompt where its turn starts
	blocks        []BlockState // the last block map (reused)
}

// observe is what the engine records for the views that are on.
func (s *Session) observe() engine.Observe {
	var o engine.Observe
	if s.vals.ViewTokens {
		o |= engine.ObserveTokens
	}
	if s.vals.ViewNext || s.vals.Step {
		o |= engine.ObserveSteps
	}
	return o
}

// Tokenizer is the model's tokenizer (nil with --remote).
func (s *Session) Tokenizer() models.Tokenizer {
	if s.remote != nil || s.model == nil {
		return nil
	}
	return s.model.Tokenizer()
}

// Step lets a reply in step mode make one token (or speculative round).
func (s *Session) Step() {
	if r, ok := s.reply.(*engine.Reply); ok {
		r.Step()
	}
}

// setReplyViews hands the views that are on to the running reply.
func (s *Session) setReplyViews() {
	if r, ok := s.reply.(*engine.Reply); ok {
		r.SetObserve(s.observe())
		r.SetStepping(s.vals.Step)
	}
}

// viewsOf fills u's view parts from a reply's delta.
func (s *Session) viewsOf(d engine.Delta, u *Update) {
	tok := s.model.Tokenizer()
	text := func(id int) string { return string(tok.TokenBytes(id)) }
	for _, m := range d.Marks {
		if !s.views.whole {
			break // a reply is shown as tokens only when they are all there
		}
		t := Token{Text: text(m.ID), Prob: m.Prob, Drafted: m.Drafted}
		s.views.replyTokens = append(s.views.replyTokens, t)
		u.Tokens = append(u.Tokens, t)
	}
	if d.Step != nil {
		s.views.step = s.stepView(d.Step, text)
	}
	if d.Preview != nil {
		s.views.preview = s.stepView(d.Preview, text)
	}
	u.Step, u.Preview = s.views.step, s.views.preview
	if u.Preview != nil && u.Step != nil && u.Step.Token >= u.Preview.Token {
		u.Preview = nil // a step made since
	}
}

// stepView turns an engine record into the view's terms.
func (s *Session) stepView(rec *engine.StepRecord, text func(int) string) *StepView {
	cand := func(c engine.Candidate) Candidate {
		if c.ID < 0 {
			return Candidate{ID: -1}
		}
		return Candidate{ID: c.ID, Text: text(c.ID), Before: c.Before, After: c.After}
	}
	v := &StepView{Token: rec.Token, Preview: rec.Preview, Drawn: cand(rec.Drawn),
		EntropyBefore: rec.EntropyBefore, EntropyAfter: rec.EntropyAfter, Vocab: rec.Stages.Vocab, Params: rec.Params,
		Round: rec.Round, Accepted: rec.Accepted,
		SeqBlocks: rec.SeqBlocks, SharedBlocks: rec.SharedBlocks, NewBlocks: rec.NewBlocks, PoolUsed: rec.PoolUsed, PoolBlocks: rec.PoolBlocks}
	for _, c := range rec.Before[:rec.NBefore] {
		v.Before = append(v.Before, cand(c))
	}
	for _, c := range rec.After[:rec.NAfter] {
		v.After = append(v.After, cand(c))
	}
	for i, st := range sampler.Stages() {
		if rec.Stages.Applied[i] {
			v.Stages = append(v.Stages, Stage{Name: st.Name, Left: rec.Stages.Left[i]})
		}
	}
	for _, id := range rec.Guesses[:rec.NGuesses] {
		v.Guesses = append(v.Guesses, text(id))
	}
	return v
}

// blockMap is the pool's map for the conversation, when the KV view is on.
func (s *Session) blockMap() []BlockState {
	if !s.vals.ViewKV || s.eng == nil || s.remote != nil {
		return nil
	}
	r, _ := s.reply.(*engine.Reply)
	s.views.blocks = s.eng.BlockMap(r, s.views.blocks)
	return s.views.blocks
}

// beginViews starts the views' record of a reply to prompt.
func (s *Session) beginViews(prompt []int) {
	s.views.step, s.views.preview, s.views.replyTokens = nil, nil, nil
	s.views.turnStart = 0
	s.views.whole = s.vals.ViewTokens
	if s.vals.ViewTokens {
		s.views.turnStart = s.turnStart(prompt)
	}
}

// finishViews gives the finished reply (the last message, unless a reply
// stopped before its first token left none) its tokens and the user message
// before it the tokens of its turn, those served from the prefix cache
// marked.
func (s *Session) finishViews(res engine.Result) {
	toks := s.views.replyTokens
	s.views.replyTokens = nil
	if toks == nil || !s.views.whole || len(s.msgs) == 0 {
		return
	}
	last := len(s.msgs)
	if s.msgs[last-1].Role == Assistant {
		// A stop string cuts the text inside a token: keep the tokens the
		// text holds.
		n, keep := 0, 0
		for keep < len(toks) && n < len(res.Text) {
			n += len(toks[keep].Text)
			keep++
		}
		last--
		s.msgs[last].Tokens = toks[:keep]
	}
	for i := last - 1; i >= 0; i-- {
		if s.msgs[i].Role == User {
			s.msgs[i].Tokens = s.promptTokens(s.lastIDs, s.views.turnStart, res.Stats.ReusedTokens)
			break
		}
	}
}

// promptTokens are the tokens of prompt from start on.
func (s *Session) promptTokens(prompt []int, start, reused int) []Token {
	if start >= len(prompt) {
		return nil
	}
	tok := s.model.Tokenizer()
	out := make([]Token, 0, len(prompt)-start)
	for i, id := range prompt[start:] {
		out = append(out, Token{Text: string(tok.TokenBytes(id)), Prompt: true, Cached: start+i < reused})
	}
	return out
}

// turnStart is where the last turn starts in prompt: the ids before it are
// those of the conversation without the last user message (rendered the
// same way), which a template that renders turns one after another shares
// with prompt.
func (s *Session) turnStart(prompt []int) int {
	var before []int
	if s.vals.Mode == "raw" {
		var b strings.Builder
		for _, m := range s.msgs[:max(0, len(s.msgs)-1)] {
			if m.Role != System {
				b.WriteString(m.Content)
			}
		}
		before = RawIDs(s.model.Tokenizer(), b.String())
	} else {
		msgs := turns(s.msgs[s.ctxStart:])
		if len(msgs) > 0 {
			msgs = msgs[:len(msgs)-1]
		}
		if s.vals.System != "" {
			msgs = append([]Message{{Role: System, Content: s.vals.System}}, msgs...)
		}
		if len(msgs) == 0 {
			return 0
		}
		before = s.tmpl.Render(msgs, false)
	}
	n := 0
	for n < len(before) && n < len(prompt) && before[n] == prompt[n] {
		n++
	}
	return n
}

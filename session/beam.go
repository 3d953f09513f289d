package session

import (
	"chat/engine"
)

// BeamReply is a beam search's hypotheses, best first, with their texts.
type BeamReply struct {
	engine.BeamResult
	Texts []string
}

// Beam answers text with a beam search of width beams instead of sampling
// (headless --beam): the prompt, budget and stop ids are the ones Send
// would use. The message and the best hypothesis join the conversation.
func (s *Session) Beam(text string, width int, lengthPenalty float64) (BeamReply, error) {
	if s.reply != nil {
		return BeamReply{}, ErrBusy
	}
	n := len(s.msgs)
	if n == 0 && s.vals.System != "" && s.vals.Mode == "chat" {
		s.msgs = append(s.msgs, Message{Role: System, Content: s.vals.System})
	}
	s.msgs = append(s.msgs, Message{Role: User, Content: text})
	prompt, budget, err := s.prompt()
	if err != nil {
		s.msgs = s.msgs[:n]
		return BeamReply{}, err
	}
	res, err := s.eng.Beam(engine.BeamRequest{Prompt: prompt, MaxTokens: budget, Width: width,
		LengthPenalty: lengthPenalty, StopIDs: s.stopIDs()})
	if err != nil {
		s.msgs = s.msgs[:n]
		return BeamReply{}, err
	}
	s.lastIDs = prompt
	out := BeamReply{BeamResult: res}
	for _, h := range res.Hypotheses {
		out.Texts = append(out.Texts, s.model.Tokenizer().Decode(h.IDs))
	}
	if len(out.Texts) > 0 {
		s.msgs = append(s.msgs, Message{Role: Assistant, Content: out.Texts[0]})
	}
	return out, nil
}

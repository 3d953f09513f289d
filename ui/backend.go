package ui

import (
	"chat/engine/sampler"
	"chat/session"
)

// Backend is what the UI drives. The session package implements it; the UI
// never sees tensors, the engine or the models.
type Backend interface {
	Info() session.Info          // model name, arch, quant, params, context length, mode ("chat"/"raw"), system prompt
	Messages() []session.Message // the conversation so far (finished turns; not the reply being streamed)
	Send(text string) error      // start a reply to a new user message (in raw mode: a continuation of the text)
	Stop()                       // stop the reply being generated (no-op if idle)
	Poll() session.Update        // non-blocking: what happened since the last poll
	Sampler() sampler.Params
	SetSampler(p sampler.Params) // takes effect on the next token
	SamplerOrder() []string      // the processor order actually applied, for the panel and help
}

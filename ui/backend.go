package ui

import (
	"chat/config/settings"
	"chat/session"
	"chat/session/store"
)

// Backend is what the UI drives. The session package implements it; the UI
// never sees tensors, the engine or the models.
type Backend interface {
	Info() session.Info          // model name, arch, quant, params, context, mode ("chat"/"raw"), system prompt, draft model
	Messages() []session.Message // the conversation so far (finished turns; not the reply being streamed)
	Send(text string) error      // start a reply to a new user message (in raw mode: a continuation of the text)
	Stop()                       // stop the reply being generated (no-op if idle)
	Poll() session.Update        // non-blocking: what happened since the last poll
	// Settings and Apply are every knob (config/settings): the hot keys, the
	// toggles and the palette change a copy and Apply it. Sampler knobs act
	// from the next token; a new weight format or speculation from the next
	// reply (Apply may then take a while: the UI calls it off its loop).
	Settings() settings.Values
	Apply(v settings.Values) error
	SamplerOrder() []string // the processor order actually applied, for the panel and help
}

// Optional parts of a backend. The UI checks for each with a type assertion
// and offers what the backend has; *session.Session implements all of them.

// Commander runs slash commands ("/set temperature 0.7", "/save notes").
// handled is false for text that is not a command. reply is shown to the
// user: in the notice lines, or in a pane over the transcript when long.
type Commander interface {
	Command(line string) (handled bool, reply string, err error)
}

// Completer completes a partly typed command line to whole lines.
type Completer interface {
	Complete(prefix string) []string
}

// Regenerator drops the last reply and starts generating it again.
type Regenerator interface{ Regenerate() error }

// Editor replaces user message i of Messages(), drops the turns after it
// and sends it again.
type Editor interface {
	Edit(i int, text string) error
}

// Clearer starts an empty conversation with the same settings.
type Clearer interface{ Clear() error }

// Historian gives earlier prompts (saved sessions too) for ↑ recall, oldest first.
type Historian interface{ History() []string }

// Saver and Loader keep conversations.
type Saver interface{ Save(name string) error }
type Loader interface{ Load(ref string) error }

// Lister lists the saved conversations, newest first, and the id of the
// current one ("" for none), for the sessions picker to lay out.
type Lister interface {
	Sessions() (list []store.Summary, current string, err error)
}

// Buser tells whether a reply is being generated (a command such as /regen
// can start one).
type Buser interface{ Busy() bool }

// StatusReporter tells what the backend is doing when that is not a reply,
// such as "re-prefilling 812 tokens"; "" when nothing.
type StatusReporter interface{ Status() string }

// TokenCounter counts the tokens a message would take (shown while typing);
// -1 when it does not count (a very long text).
type TokenCounter interface{ CountTokens(text string) int }

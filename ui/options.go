package ui

import "time"

// Options configure the UI. The zero value is usable.
type Options struct {
	// Width and Height are the size assumed until the terminal reports its
	// own (tests and the first frame); 0 means 80x24.
	Width, Height int

	// Plain drops every colour and text attribute (NO_COLOR, dumb terminals,
	// readable golden files). Run also turns it on when NO_COLOR is set.
	Plain bool

	// NoMouse leaves the mouse to the terminal so text can be selected with
	// it; the wheel then no longer scrolls the transcript.
	NoMouse bool

	// Theme is "auto" (or ""): light or dark from the terminal's background
	// colour, asked at start; "dark" or "light" force one. Plain wins.
	Theme string

	// Keys replaces the keys of actions (action → keystrokes, as
	// config.Keys); nil keeps the defaults. settings.KeyActions lists the actions.
	Keys map[string][]string

	// NoMarkdown shows replies as plain wrapped text instead of rendered
	// markdown (F12 or /markdown toggles it while running).
	NoMarkdown bool

	// BusyPoll and IdlePoll are the backend poll intervals while a reply is
	// being generated and while idle; 0 means 33ms (30 Hz) and 250ms.
	BusyPoll, IdlePoll time.Duration

	// Notice is shown in the notice lines at start (flags that were
	// ignored, say).
	Notice string

	typedAhead string // typed before the TUI took the terminal (Run reads it)
}

func (o Options) withDefaults() Options {
	if o.Width <= 0 {
		o.Width = 80
	}
	if o.Height <= 0 {
		o.Height = 24
	}
	if o.BusyPoll <= 0 {
		o.BusyPoll = 33 * time.Millisecond
	}
	if o.IdlePoll <= 0 {
		o.IdlePoll = 250 * time.Millisecond
	}
	return o
}

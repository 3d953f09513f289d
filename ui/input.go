package ui

import (
	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"
)

// newInput builds the multi-line input: Enter is taken by the UI (send), so
// the newline moves to Alt+Enter / Ctrl+J / Shift+Enter; PgUp/PgDn and
// Ctrl+Home/End scroll the transcript instead of the input.
func newInput(st *styles, raw bool, newline []string) textarea.Model {
	in := textarea.New()
	in.ShowLineNumbers = false
	in.SetVirtualCursor(false) // the terminal's cursor: nothing blinks in the content
	in.SetPromptFunc(2, func(p textarea.PromptInfo) string {
		if p.LineNumber == 0 {
			return "› "
		}
		return "  "
	})
	in.Placeholder = placeholder(raw)
	in.DynamicHeight = true
	in.MaxContentHeight = 10000 // not MaxHeight: that would cap the lines one can type
	in.CharLimit = 0
	in.MaxWidth = 0

	km := textarea.DefaultKeyMap()
	if len(newline) == 0 {
		km.InsertNewline = key.NewBinding(key.WithDisabled())
	} else {
		km.InsertNewline = key.NewBinding(key.WithKeys(newline...))
	}
	// Ctrl+P, Ctrl+E and Ctrl+Home/End are the UI's (palette, edit, scroll).
	km.LinePrevious = key.NewBinding(key.WithKeys("up"))
	km.LineNext = key.NewBinding(key.WithKeys("down"))
	km.PageUp = key.NewBinding(key.WithDisabled())
	km.PageDown = key.NewBinding(key.WithDisabled())
	km.InputBegin = key.NewBinding(key.WithKeys("alt+<"))
	km.InputEnd = key.NewBinding(key.WithKeys("alt+>"))
	in.KeyMap = km

	in.SetStyles(inputStyles(st))
	in.Focus()
	return in
}

func inputStyles(st *styles) textarea.Styles {
	var s textarea.Styles
	if !st.plain {
		s.Focused.Prompt = st.user.style
		s.Focused.Placeholder = st.dim.style
		s.Blurred = s.Focused
	}
	s.Cursor = textarea.CursorStyle{Shape: tea.CursorBar, Blink: true}
	return s
}

// inputBounds gives the input's minimum and maximum height for a terminal
// of h rows: three lines when there is room, one on tiny screens.
func inputBounds(h int) (lo, hi int) {
	switch {
	case h >= 20:
		lo = 3
	case h >= 12:
		lo = 2
	default:
		lo = 1
	}
	return lo, max(lo, min(10, h/3))
}

func placeholder(raw bool) string {
	if raw {
		return "Text to continue (or none) · Enter sends · F1 keys"
	}
	return "Say something · Enter sends · F1 keys"
}

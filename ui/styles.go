package ui

import "charm.land/lipgloss/v2"

// styles holds every look the UI uses. Colours are the 16 ANSI ones so the
// UI follows the terminal's palette on light and dark backgrounds alike.
type styles struct {
	plain bool

	header    lipgloss.Style
	user      lipgloss.Style
	assistant lipgloss.Style
	system    lipgloss.Style
	dim       lipgloss.Style
	title     lipgloss.Style
	key       lipgloss.Style
	warn      lipgloss.Style
	err       lipgloss.Style
	busy      lipgloss.Style
	barFull   lipgloss.Style
	barEmpty  lipgloss.Style
}

func newStyles(plain bool) *styles {
	s := &styles{plain: plain}
	if plain {
		return s
	}
	s.header = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("6"))
	s.user = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("6"))
	s.assistant = lipgloss.NewStyle()
	s.system = lipgloss.NewStyle().Faint(true).Italic(true)
	s.dim = lipgloss.NewStyle().Faint(true)
	s.title = lipgloss.NewStyle().Bold(true)
	s.key = lipgloss.NewStyle().Foreground(lipgloss.Color("5"))
	s.warn = lipgloss.NewStyle().Foreground(lipgloss.Color("3"))
	s.err = lipgloss.NewStyle().Bold(true).Foreground(lipgloss.Color("1"))
	s.busy = lipgloss.NewStyle().Foreground(lipgloss.Color("2"))
	s.barFull = lipgloss.NewStyle().Foreground(lipgloss.Color("2"))
	s.barEmpty = lipgloss.NewStyle().Faint(true)
	return s
}

// r renders text in st unless the UI is plain. Empty text stays empty so
// no stray escape codes end up on blank lines.
func (s *styles) r(st lipgloss.Style, text string) string {
	if s.plain || text == "" {
		return text
	}
	return st.Render(text)
}

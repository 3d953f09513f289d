package ui

import (
	"strings"

	"charm.land/lipgloss/v2"
)

// styles holds every look the UI uses. Colours are the 16 ANSI ones so the
// UI follows the terminal's palette on light and dark backgrounds alike.
type styles struct {
	plain bool
	light bool // a light terminal background (glamour's light style)

	header    look
	user      look
	assistant look
	system    look
	dim       look
	title     look
	key       look
	warn      look
	err       look
	busy      look
	barFull   look
	barEmpty  look
	code      look // fenced code in replies
	sel       look // the chosen row of a popup or the palette

	// The views (views.go): the token view's heat map by probability
	// bucket (heatBuckets), the same on an accepted draft guess, a prompt
	// token served from the prefix cache; the KV map's block states.
	heat      [len(heatBuckets) + 1]look
	heatDraft [len(heatBuckets) + 1]look
	cached    look
	block     [5]look // by session.BlockState
}

// look is a style and the escape sequences that open and close it. Every
// styled piece of the UI is one line without width or padding, so painting
// is two string joins; running the lipgloss renderer per piece was most of
// a frame's cost.
type look struct {
	style     lipgloss.Style
	pre, post string
}

const sentinel = "\uE000" // a private-use rune no style touches

func newLook(st lipgloss.Style) look {
	pre, post, _ := strings.Cut(st.Render(sentinel), sentinel)
	return look{st, pre, post}
}

func newStyles(plain, light bool) *styles {
	s := &styles{plain: plain, light: light}
	if plain {
		return s
	}
	c := lipgloss.Color
	n := lipgloss.NewStyle
	accent := c("6") // cyan reads well on dark backgrounds, blue on light ones
	if light {
		accent = c("4")
	}
	s.header = newLook(n().Bold(true).Foreground(accent))
	s.user = newLook(n().Bold(true).Foreground(accent))
	s.assistant = newLook(n())
	s.system = newLook(n().Faint(true).Italic(true))
	s.dim = newLook(n().Faint(true))
	s.title = newLook(n().Bold(true))
	s.key = newLook(n().Foreground(c("5")))
	s.warn = newLook(n().Foreground(c("3")))
	s.err = newLook(n().Bold(true).Foreground(c("1")))
	s.busy = newLook(n().Foreground(c("2")))
	s.barFull = newLook(n().Foreground(c("2")))
	s.barEmpty = newLook(n().Faint(true))
	if light {
		s.code = newLook(n().Foreground(c("5")))
	} else {
		s.code = newLook(n().Foreground(c("3")))
	}
	s.sel = newLook(n().Reverse(true))
	heat := []string{"2", "6", "3", "5", "1"} // green, cyan, yellow, magenta, red: likely to unlikely
	for i, col := range heat {
		s.heat[i] = newLook(n().Foreground(c(col)))
		s.heatDraft[i] = newLook(n().Foreground(c(col)).Background(c("4")).Bold(true))
	}
	s.cached = newLook(n().Bold(true).Foreground(accent).Underline(true)) // a user's prompt token
	for i, col := range []string{"", "2", "6", "3", "1"} {                // free, own, shared, cached, evicted
		if col == "" {
			s.block[i] = newLook(n().Faint(true))
			continue
		}
		s.block[i] = newLook(n().Foreground(c(col)))
	}
	return s
}

// r paints text with l unless the UI is plain. Empty text stays empty so
// no stray escape codes end up on blank lines.
func (s *styles) r(l look, text string) string {
	if s.plain || text == "" {
		return text
	}
	return l.pre + text + l.post
}

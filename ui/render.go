package ui

import (
	"strings"

	"chat/session"

	"github.com/charmbracelet/x/ansi"
)

// Every transcript line is produced here, wrapped to the transcript width
// once and then cached (see transcript.go): the terminal never re-wraps.

// marker is what starts the first line of a message and indent the rest.
// (Raw mode has no messages on screen, only one text: see rawdoc.go.)
func (s *styles) marker(role session.Role) (first, rest string) {
	switch role {
	case session.User:
		return "› ", "  "
	case session.System:
		return "# ", "  "
	default:
		return "  ", "  "
	}
}

func (s *styles) roleStyle(role session.Role) func(string) string {
	switch role {
	case session.User:
		return func(t string) string { return s.r(s.user, t) }
	case session.System:
		return func(t string) string { return s.r(s.system, t) }
	default:
		return func(t string) string { return s.r(s.assistant, t) }
	}
}

// renderText wraps text (already sanitised, may hold several paragraphs) to
// width cells and appends the styled lines to dst. first says whether the
// first produced line is the first line of the message (it gets the marker).
func (s *styles) renderText(dst []string, role session.Role, text string, width int, first bool) []string {
	mFirst, mRest := s.marker(role)
	return s.renderMarked(dst, mFirst, mRest, s.roleStyle(role), text, width, first)
}

// renderMarked is renderText with the markers and the paint given.
func (s *styles) renderMarked(dst []string, mFirst, mRest string, paint func(string) string, text string, width int, first bool) []string {
	pw := ansi.StringWidth(mRest)
	cw := max(1, width-pw)
	for p := range strings.SplitSeq(text, "\n") {
		wrapped := p
		if ansi.StringWidth(p) > cw {
			wrapped = ansi.Wrap(p, cw, "")
		}
		for l := range strings.SplitSeq(wrapped, "\n") {
			prefix := mRest
			if first {
				prefix, first = mFirst, false
			}
			dst = append(dst, paint(padTo(prefix+l, pw+ansi.StringWidth(l), width)))
		}
	}
	return dst
}

// padTo makes line (sw cells wide) exactly w cells: cut if wider (a 2-cell
// rune in a 1-cell column, a marker wider than a tiny terminal), padded with
// spaces if narrower. Transcript lines leave the renderer this way so a
// frame does not have to measure them again.
func padTo(line string, sw, w int) string {
	if sw > w {
		line = ansi.Truncate(line, w, "")
		sw = ansi.StringWidth(line)
	}
	if sw < w {
		line += strings.Repeat(" ", w-sw)
	}
	return line
}

// renderMessage renders one finished message.
func (s *styles) renderMessage(m session.Message, width int) []string {
	text := strings.TrimRight(sanitizeDisplay(m.Content), "\n")
	return s.renderText(nil, m.Role, text, width, true)
}

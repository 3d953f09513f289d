package ui

import (
	"strings"

	"chat/session/termtext"
)

// cleanText makes text safe to send to the model or to draw: valid UTF-8,
// "\n" line ends, no escape sequences, no control characters other than
// newline (and tab when keepTab), and no bidi overrides that could make the
// screen lie about what was typed (the app's one sanitiser, termtext).
func cleanText(s string, keepTab bool) string { return termtext.Clean(s, keepTab) }

// sanitizeInput is what the user's text goes through before Send: cleaned
// and without leading/trailing blank lines or trailing spaces. An all-blank
// input becomes "" and is not sent.
func sanitizeInput(s string) string {
	s = cleanText(s, true)
	s = strings.TrimRight(s, " \t\n")
	// Leading blank lines are noise; leading spaces on the first line may be
	// deliberate (code), so only whole blank lines are cut.
	for {
		i := strings.IndexByte(s, '\n')
		if i < 0 || strings.TrimSpace(s[:i]) != "" {
			break
		}
		s = s[i+1:]
	}
	if strings.TrimSpace(s) == "" {
		return ""
	}
	return s
}

// sanitizeDisplay prepares model or user text for the transcript: tabs
// become spaces (their width depends on the terminal) and nothing can move
// the cursor or change colours.
func sanitizeDisplay(s string) string {
	return cleanText(s, false)
}

// oneLine is cleanText for things shown on a single row (names, notices,
// errors): line breaks become spaces.
func oneLine(s string) string { return termtext.Line(s) }

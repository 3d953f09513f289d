package ui

// Prompt history: Up on an empty input recalls what was sent before, as in
// a shell; Up/Down keep browsing while the recalled text is left unedited.
// Once it is edited, or the input holds new text, Up and Down move the
// cursor as usual.

const maxHistory = 200

func (m *model) remember(text string) {
	if n := len(m.history); n > 0 && m.history[n-1] == text {
		m.histPos = -1
		return
	}
	m.history = append(m.history, text)
	if len(m.history) > maxHistory {
		m.history = m.history[len(m.history)-maxHistory:]
	}
	m.histPos = -1
}

// browseHistory handles Up (dir -1) and Down (dir +1); it reports false when
// the key should go to the input instead.
func (m *model) browseHistory(dir int) bool {
	v := m.in.value()
	browsing := m.histPos >= 0 && m.histPos < len(m.history) && v == m.history[m.histPos]
	if !browsing && (v != "" || dir > 0) {
		return false
	}
	if !browsing {
		m.histPos = len(m.history)
	}
	next := m.histPos + dir
	switch {
	case next < 0 || len(m.history) == 0:
		return browsing // at the oldest: stay
	case next >= len(m.history):
		m.histPos = -1
		m.setInput("")
	default:
		m.histPos = next
		m.setInput(m.history[next])
	}
	return true
}

// loadHistory takes the backend's prompt history (saved sessions too), when
// it keeps one; what was typed here is added as it is sent.
func (m *model) loadHistory() {
	h, ok := m.b.(Historian)
	if !ok {
		return
	}
	hist := h.History()
	if len(hist) > maxHistory {
		hist = hist[len(hist)-maxHistory:]
	}
	m.history = append(m.history[:0], hist...)
	m.histPos = -1
}

package ui

import (
	"strings"
	"time"

	"chat/session"

	tea "charm.land/bubbletea/v2"
)

// The backend is polled on a tick — fast while a reply streams, slowly when
// idle — so a slow terminal never slows generation (Program.Send would
// block the producer) and all text that arrived between two frames is drawn
// once.

type pollMsg struct{ gen int }

func (m *model) tick() tea.Cmd {
	d := m.opts.IdlePoll
	if m.busy {
		d = m.opts.BusyPoll
	}
	gen := m.pollGen
	return tea.Tick(d, func(time.Time) tea.Msg { return pollMsg{gen} })
}

// restartPolling drops the pending (slow) tick and starts a new chain.
func (m *model) restartPolling() tea.Cmd {
	m.pollGen++
	return m.tick()
}

func (m *model) onPoll(msg pollMsg) tea.Cmd {
	if msg.gen != m.pollGen {
		return nil
	}
	m.apply(m.b.Poll())
	return m.tick()
}

func (m *model) apply(u session.Update) {
	if u.Text != "" {
		m.tr.appendStream(u.Text)
	}
	m.stats = u.Stats
	if len(u.Notices) > 0 {
		m.setNotice(strings.Join(u.Notices, " · "), false)
	}
	if u.Busy {
		m.sawBusy = true
		if !m.busy {
			m.busy, m.state = true, "generating"
			m.tr.startStream()
		}
	}
	// A backend that goes idle without saying Done still ends the reply.
	if u.Done || (m.busy && m.sawBusy && !u.Busy) {
		m.finish(u)
	}
	m.params = m.b.Sampler()
}

func (m *model) finish(u session.Update) {
	m.busy, m.sawBusy, m.stopping = false, false, false
	switch u.Reason {
	case "stopped":
		m.state = "stopped"
	case "error":
		m.state = "error"
	default:
		m.state = "idle"
	}
	if u.Reason == "length" {
		m.setNotice("the reply reached the length limit", false)
	}
	if u.Err != nil {
		m.setNotice(u.Err.Error(), true)
	} else if u.Reason == "error" {
		m.setNotice("the reply failed", true)
	}
	m.tr.endStream()
	m.syncMessages()
}

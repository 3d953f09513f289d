package ui

import (
	"fmt"
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

// maxQuietPolls is how many polls after Send may report neither Busy nor
// Done before the UI stops waiting for a reply.
const maxQuietPolls = 15

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
	if m.pending != "" {
		return m.tick() // the backend is busy with a command
	}
	m.onUpdate(m.b.Poll())
	return m.tick()
}

func (m *model) onUpdate(u session.Update) {
	if u.Text != "" {
		m.tr.appendStream(u.Text)
	}
	m.stats = u.Stats
	m.takeViews(u)
	if len(u.Notices) > 0 {
		m.addNotice(strings.Join(u.Notices, " · "), false)
	}
	if u.Busy {
		m.sawBusy, m.quietPolls = true, 0
		if !m.busy {
			m.busy, m.state = true, "generating"
			m.tr.startStream()
		}
	} else if m.busy && !m.sawBusy {
		m.quietPolls++
	}
	// A backend that goes idle without saying Done, or that never starts a
	// reply at all (a command it handled itself), still ends the reply.
	if u.Done || (m.busy && !u.Busy && (m.sawBusy || m.quietPolls >= maxQuietPolls)) {
		m.finish(u)
	}
	m.vals = m.b.Settings()
	m.syncViews()
}

func (m *model) finish(u session.Update) {
	m.busy, m.sawBusy, m.stopping, m.quietPolls = false, false, false, 0
	switch u.Reason {
	case "stopped":
		m.state = "stopped"
	case "error":
		m.state = "error"
	default:
		m.state = "idle"
	}
	if u.Reason == "length" && !m.raw {
		// In raw mode every continuation ends this way; in chat it means
		// the answer was cut off: by max_tokens, or by the end of the
		// context.
		if u.ContextFull {
			m.addNotice(fmt.Sprintf("the reply filled the %d-token context; the next turn drops the oldest messages to fit", u.Stats.KVCap), false)
		} else {
			m.addNotice(fmt.Sprintf("the reply reached max_tokens (%d); /set max_tokens N allows longer ones", m.b.Settings().MaxTokens), false)
		}
	}
	if u.Reason == "stopped" {
		msg := "stopped; the text so far is kept"
		if u.Stats.GenTokens == 0 {
			msg = "stopped before the first token"
		}
		if m.quitHint {
			msg += " · " + m.keys.first("quit") + " again quits"
		}
		m.setInfo(msg)
	}
	m.endedAlone = u.Reason != "stopped" && !m.quitHint
	m.quitHint = false
	if u.Err != nil {
		m.addNotice(u.Err.Error(), true)
	} else if u.Reason == "error" {
		m.addNotice("the reply failed", true)
	}
	m.tr.endStream()
	m.refreshInfo()
	m.syncMessages()
}

// refreshInfo rereads what a finished turn may have changed (a command can
// load another model or switch to raw mode).
func (m *model) refreshInfo() {
	m.info = m.b.Info()
	m.order = cleanOrder(m.b.SamplerOrder())
	if raw := m.info.Mode == "raw"; raw != m.raw {
		m.raw = raw
		m.tr.setRaw(raw)
		m.tr.setLook(m.st, m.markdown) // markdown is for chat replies only
		m.in.setRaw(raw)
	}
}

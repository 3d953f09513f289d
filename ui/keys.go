package ui

import (
	"fmt"

	"chat/config/settings"

	tea "charm.land/bubbletea/v2"
)

// Key choice: the sampler hot keys are F2–F10, which every terminal sends
// and which never type text, with Alt+letter as the same key where F-keys
// are taken (F10 opens the menu in some terminals, laptops hide them): the
// letter names the knob, lower case lowers it and upper case raises it.
// Ctrl+letter keys stay with the input's editing keys, and no Alt+letter
// used here is one of the input's (Alt+b/f/d/c/l/u). The keys and what they
// change are declared with the settings (config/settings).

const (
	keyHelpAlt   = "?"
	wheelLines   = 3
	lineScrollBy = 1
)

// onKey routes a key press: Ctrl+C first (it stops a reply, clears the
// input, and quits on an empty idle prompt), then the backend's running
// command, then the focus stack top down, then the root.
func (m *model) onKey(k tea.KeyPressMsg) tea.Cmd {
	act := m.keys.action(k)
	if act == "quit" {
		if m.busy {
			m.stop()
			m.quitHint = true
			m.setNotice("stopping the reply (the text so far is kept) · "+m.keys.first("quit")+" again on an idle prompt quits", false)
			return nil
		}
		if m.editing >= 0 {
			m.cancelEdit()
			return nil
		}
		if m.in.value() != "" {
			// As in a shell or ollama's prompt: Ctrl+C throws away the line
			// being typed, not the whole chat.
			m.setInput("")
			m.setInfo("input cleared · " + m.keys.first("quit") + " again quits")
			return nil
		}
		if m.endedAlone {
			m.endedAlone = false
			m.setInfo("the reply had already ended · " + m.keys.first("quit") + " again quits")
			return nil
		}
		return tea.Quit
	}
	m.endedAlone = false
	if m.pending != "" {
		return m.keyWhilePending(k, act)
	}
	if cmd, ok := m.keyToLayers(k, act); ok {
		return cmd
	}
	return m.rootKey(k, act)
}

// rootKey is a key no layer took.
func (m *model) rootKey(k tea.KeyPressMsg, act string) tea.Cmd {
	body := m.layout().trRows()
	page := max(1, body-1)
	switch act {
	case "eof":
		if m.in.value() == "" && !m.busy {
			return tea.Quit
		}
	case "suspend":
		// As a shell's job control expects of a terminal program (ollama's
		// and llama-cli's prompts too): bubbletea gives the terminal back,
		// stops the process, and repaints on fg.
		return tea.Suspend
	case "help":
		m.openHelp()
		return nil
	case "stop":
		switch {
		case m.vals.Step:
			m.leaveStepMode()
		case m.busy:
			m.stop()
		case m.editing >= 0:
			m.cancelEdit()
		default:
			m.clearNote()
		}
		return nil
	case "palette":
		m.openPalette()
		return nil
	case "panel":
		m.togglePanel()
		return nil
	case "complete":
		return m.completeKey()
	case "regenerate":
		return m.regenerate()
	case "copy_reply":
		return m.copyReply()
	case "copy_code":
		return m.copyCode()
	case "toggle_markdown":
		m.setMarkdown(!m.markdown)
		return nil
	case "edit_last":
		if m.in.value() == "" || m.editing >= 0 {
			m.editPrevious()
			return nil
		}
	case "page_up":
		m.tr.scroll(page, body)
		return nil
	case "page_down":
		m.tr.scroll(-page, body)
		return nil
	case "line_up":
		m.tr.scroll(lineScrollBy, body)
		return nil
	case "line_down":
		m.tr.scroll(-lineScrollBy, body)
		return nil
	case "top":
		m.tr.toTop(body)
		return nil
	case "bottom":
		m.tr.toBottom()
		return nil
	case "send":
		return m.submit()
	}
	if s, _ := settings.KeyOf(act); s != nil {
		return m.hotKey(act)
	}
	if k.String() == keyHelpAlt && m.in.value() == "" {
		m.openHelp()
		return nil
	}
	ks := k.Keystroke()
	if (ks == "up" && m.browseHistory(-1)) || (ks == "down" && m.browseHistory(+1)) {
		return nil // recalled a sent message (history.go); otherwise the input moves the cursor
	}
	return m.updateInput(k)
}

// hotKey applies a setting's hot key. Sampler knobs change at once (from
// the next token); a weight format or speculation switch runs off the loop,
// like a command, since it can take a while.
func (m *model) hotKey(act string) tea.Cmd {
	s, hk := settings.KeyOf(act)
	if s.Name == "step" {
		return m.stepKey()
	}
	return m.applySetting(s, func(v *settings.Values) {
		if s.Name == "quant" { // the key toggles float32 ↔ int8
			if m.info.Quant == "int8" {
				v.Quant = "f32"
			} else {
				v.Quant = "int8"
			}
			return
		}
		settings.StepKey(v, hk.Action)
		if s.Name == "spec" && v.Spec == "draft" && m.info.Draft == "" {
			// Without a draft model the cycle stuck at lookup, each press
			// refused: it goes on to off.
			v.Spec = "off"
		}
	})
}

// applySetting changes one setting in a copy of the backend's settings and
// applies it, confirming the new value. Only a live knob may change while a
// reply runs.
func (m *model) applySetting(s *settings.Setting, change func(v *settings.Values)) tea.Cmd {
	if m.busy && !s.Live {
		m.setNotice(fmt.Sprintf("%s switches between replies: stop this one first (Esc)", s.Name), false)
		return nil
	}
	v := m.b.Settings()
	change(&v)
	if s.Live {
		if err := m.apply(v); err != nil {
			m.setNotice(err.Error(), true)
			return nil
		}
		m.confirm(s)
		return nil
	}
	// Off the loop: the backend is left alone until it answers (commands.go).
	label := fmt.Sprintf("%s %s", s.Name, s.Show(&v))
	return m.runBackend(label, func() (string, error) {
		if err := m.b.Apply(v); err != nil {
			return "", err
		}
		nv := m.b.Settings()
		return confirmText(s, &nv), nil
	})
}

// confirm says what a setting is now.
func (m *model) confirm(s *settings.Setting) { m.setInfo(confirmText(s, &m.vals)) }

func confirmText(s *settings.Setting, v *settings.Values) string {
	switch s.Name {
	case "quant":
		return "weights " + v.Quant + " from the next reply (the conversation is prefilled again)"
	case "token_view":
		if v.ViewTokens {
			return "token view on: replies made from now on are shown as their tokens"
		}
	case "spec":
		if v.Spec == "off" {
			return "speculative decoding off"
		}
		return fmt.Sprintf("speculative decoding %s (k=%d) from the next reply", v.Spec, v.DraftK)
	}
	return s.Name + " " + s.Show(v)
}

func (m *model) onWheel(w tea.MouseWheelMsg) {
	body := m.layout().trRows()
	switch w.Mouse().Button {
	case tea.MouseWheelUp:
		m.tr.scroll(wheelLines, body)
	case tea.MouseWheelDown:
		m.tr.scroll(-wheelLines, body)
	}
}

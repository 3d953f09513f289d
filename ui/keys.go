package ui

import (
	"math"

	"chat/engine/sampler"

	tea "charm.land/bubbletea/v2"
)

// Key choice: the sampler hot keys are F2–F10, which every terminal sends
// and which never type text, with Alt+letter as the same key where F-keys
// are taken (F10 opens the menu in some terminals, laptops hide them): the
// letter names the knob, lower case lowers it and upper case raises it.
// Ctrl+letter keys stay with the input's editing keys, and no Alt+letter
// used here is one of the input's (Alt+b/f/d/c/l/u).

// samplerKey is one hot key that changes the sampler; it takes effect on the
// next token because the backend applies SetSampler between tokens.
type samplerKey struct {
	action string // in the key map (keymap.go)
	letter rune   // with Alt, kept from the first key scheme (Alt+t / Alt+T)
	upper  bool   // the letter is upper case (Alt+Shift)
	help   string
	apply  func(sampler.Params) sampler.Params
}

var samplerKeys = []samplerKey{
	{"temperature_down", 't', false, "temperature −0.1", func(p sampler.Params) sampler.Params { p.Temperature = stepTemp(p.Temperature, -1); return p }},
	{"temperature_up", 't', true, "temperature +0.1", func(p sampler.Params) sampler.Params { p.Temperature = stepTemp(p.Temperature, +1); return p }},
	{"top_p_down", 'p', false, "top-p −0.05", func(p sampler.Params) sampler.Params { p.TopP = stepTopP(p.TopP, -1); return p }},
	{"top_p_up", 'p', true, "top-p +0.05", func(p sampler.Params) sampler.Params { p.TopP = stepTopP(p.TopP, +1); return p }},
	{"min_p_down", 'm', false, "min-p down", func(p sampler.Params) sampler.Params { p.MinP = stepLadder(p.MinP, minPLadder, -1); return p }},
	{"min_p_up", 'm', true, "min-p up", func(p sampler.Params) sampler.Params { p.MinP = stepLadder(p.MinP, minPLadder, +1); return p }},
	{"top_k_down", 'k', false, "top-k down", func(p sampler.Params) sampler.Params { p.TopK = stepTopK(p.TopK, -1); return p }},
	{"top_k_up", 'k', true, "top-k up", func(p sampler.Params) sampler.Params { p.TopK = stepTopK(p.TopK, +1); return p }},
	{"greedy", 'g', false, "greedy on/off", func(p sampler.Params) sampler.Params { p.Greedy = !p.Greedy; return p }},
}

// findSamplerKey finds the sampler key for a key press: by the key map, or
// by the Alt+letter of an action whose keys were not remapped.
func (km keyMap) findSamplerKey(k tea.KeyPressMsg) *samplerKey {
	act := km.action(k.Keystroke())
	letter, upper, isAlt := altLetter(k)
	for i := range samplerKeys {
		sk := &samplerKeys[i]
		if act == sk.action || (act == "" && isAlt && !km.custom[sk.action] && letter == sk.letter && upper == sk.upper) {
			return sk
		}
	}
	return nil
}

// altLetter reads Alt+letter and Alt+Shift+letter however the terminal
// encodes them: "ESC T" arrives as alt+shift+t, the kitty protocol may say
// alt+T or alt+shift+T.
func altLetter(k tea.KeyPressMsg) (letter rune, upper, ok bool) {
	if !k.Mod.Contains(tea.ModAlt) || k.Mod.Contains(tea.ModCtrl) {
		return 0, false, false
	}
	c := k.Code
	if c >= 'A' && c <= 'Z' {
		return c + ('a' - 'A'), true, true
	}
	if c < 'a' || c > 'z' {
		return 0, false, false
	}
	return c, k.Mod.Contains(tea.ModShift) || (k.ShiftedCode >= 'A' && k.ShiftedCode <= 'Z'), true
}

const maxTemperature = 2.0

func stepTemp(t float64, dir int) float64 {
	t = math.Round(t*10)/10 + float64(dir)*0.1
	return math.Round(min(maxTemperature, max(0, t))*100) / 100
}

// Top-p "off" (anything outside (0,1)) counts as 1, so stepping down from
// off gives 0.95.
func stepTopP(p float64, dir int) float64 {
	if p <= 0 || p >= 1 {
		p = 1
	}
	p = math.Round((p+float64(dir)*0.05)*100) / 100
	return min(1, max(0.05, p))
}

var minPLadder = []float64{0, 0.01, 0.02, 0.05, 0.1, 0.2, 0.3, 0.5}

// stepLadder moves v to the next rung of an ascending ladder in direction dir.
func stepLadder(v float64, ladder []float64, dir int) float64 {
	if math.IsNaN(v) || v < 0 || v >= 1 {
		v = 0
	}
	if dir > 0 {
		for _, r := range ladder {
			if r > v+1e-9 {
				return r
			}
		}
		return ladder[len(ladder)-1]
	}
	for i := len(ladder) - 1; i >= 0; i-- {
		if ladder[i] < v-1e-9 {
			return ladder[i]
		}
	}
	return ladder[0]
}

// topKLadder ends in "off" (0), which is larger than any k.
var topKLadder = []int{1, 2, 3, 5, 10, 20, 40, 50, 100, 200, 500, 0}

func stepTopK(k, dir int) int {
	rank := func(k int) int { // position of k in the ladder, between rungs if not on one
		if k <= 0 {
			return 2 * (len(topKLadder) - 1)
		}
		for i, r := range topKLadder[:len(topKLadder)-1] {
			if k == r {
				return 2 * i
			}
			if k < r {
				return 2*i - 1
			}
		}
		return 2*(len(topKLadder)-1) - 1
	}
	r := rank(k)
	var i int
	if dir > 0 {
		i = r/2 + 1
	} else {
		i = (r+1)/2 - 1
	}
	i = min(len(topKLadder)-1, max(0, i))
	return topKLadder[i]
}

const (
	keyHelpAlt   = "?"
	wheelLines   = 3
	lineScrollBy = 1
)

func (m *model) onKey(k tea.KeyPressMsg) tea.Cmd {
	ks := k.Keystroke()
	act := m.keys.action(ks)
	if act == "quit" {
		m.stop()
		return tea.Quit
	}
	if m.pending != "" {
		return m.keyWhilePending(k, act)
	}
	if m.palette != nil {
		return m.paletteKey(k, act)
	}
	if cmd, ok := m.popupKey(k, act); ok {
		return cmd
	}
	body := m.layout().body
	page := max(1, body-1)
	if m.pane != nil && (act == "page_up" || act == "page_down") {
		m.scrollPane(act == "page_up", page)
		return nil
	}
	if m.help && (act == "page_up" || act == "page_down") {
		if act == "page_up" {
			m.helpOff = max(0, m.helpOff-page)
		} else {
			m.helpOff += page
		}
		return nil
	}
	switch act {
	case "help":
		m.help, m.helpOff = !m.help, 0
		m.pane = nil
		return nil
	case "stop":
		switch {
		case m.help:
			m.help = false
		case m.pane != nil:
			m.pane = nil
		case m.busy:
			m.stop()
		case m.editing >= 0:
			m.cancelEdit()
		default:
			m.notice = ""
		}
		return nil
	case "palette":
		m.openPalette()
		return nil
	case "regenerate":
		return m.regenerate()
	case "copy_reply":
		return m.copyReply()
	case "copy_code":
		return m.copyCode()
	case "toggle_markdown":
		m.setMarkdown(!m.markdown)
		return nil
	case "toggle_int8":
		if _, ok := m.b.(Commander); !ok || m.busy {
			return nil
		}
		if m.b.Info().Quant == "int8" {
			return m.runCommand("/set quant f32")
		}
		return m.runCommand("/set quant int8")
	case "cycle_spec":
		if _, ok := m.b.(Commander); !ok || m.busy {
			return nil
		}
		m.specNext = (m.specNext + 1) % len(specCycle)
		return m.runCommand("/set spec " + specCycle[m.specNext])
	case "edit_last":
		if m.input.Value() == "" || m.editing >= 0 {
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
	if k.String() == keyHelpAlt && m.input.Value() == "" {
		m.help = !m.help
		return nil
	}
	if sk := m.keys.findSamplerKey(k); sk != nil {
		m.setSampler(sk.apply(m.b.Sampler()))
		return nil
	}
	if (ks == "up" && m.browseHistory(-1)) || (ks == "down" && m.browseHistory(+1)) {
		return nil // recalled a sent message (history.go); otherwise the input moves the cursor
	}
	return m.updateInput(k)
}

func (m *model) onWheel(w tea.MouseWheelMsg) {
	body := m.layout().body
	switch w.Mouse().Button {
	case tea.MouseWheelUp:
		m.tr.scroll(wheelLines, body)
	case tea.MouseWheelDown:
		m.tr.scroll(-wheelLines, body)
	}
}

// specCycle is the order cycle_spec steps through speculative decoding; a
// step that fails (no draft model) is passed by on the next press.
var specCycle = []string{"off", "ngram", "lookup", "draft"}

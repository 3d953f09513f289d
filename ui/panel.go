package ui

import (
	"fmt"
	"strings"

	"chat/engine/sampler"
	"chat/session"

	"github.com/charmbracelet/x/ansi"
)

const (
	panelWidth    = 30 // columns of the side panel, separator excluded
	panelMinWidth = 90 // terminal width from which the side panel is shown
)

// state is what the panel calls the generation state.
func (m *model) stateText() string {
	switch {
	case m.stopping:
		return "stopping"
	case m.busy && m.stats.GenTokens == 0:
		return "prefill"
	case m.busy:
		return "generating"
	default:
		return m.state // idle, stopped, error, or the finish reason
	}
}

func (m *model) styledState() string {
	s := m.stateText()
	switch s {
	case "generating", "prefill", "stopping":
		return m.st.r(m.st.busy, s)
	case "error":
		return m.st.r(m.st.err, s)
	case "stopped", "length":
		return m.st.r(m.st.warn, s)
	}
	return s
}

// panelKey is everything the panel shows; the panel is redrawn only when it
// changes, which while idle or typing is never.
type panelKey struct {
	params     sampler.Params
	stats      session.Stats
	state      string
	w, h       int
	orderCount int
}

func (m *model) cachedPanel(w, h int) []string {
	k := panelKey{m.params, m.stats, m.stateText(), w, h, len(m.order)}
	if m.panel == nil || k != m.panelKey {
		ls := m.panelLines(w, h)
		m.panel = make([]string, h)
		for i := range m.panel {
			s := ""
			if i < len(ls) {
				s = ls[i]
			}
			m.panel[i] = fit(s, w)
		}
		m.panelKey = k
	}
	return m.panel
}

// panelLines renders the side panel: sampler knobs with their keys, then the
// cache and speed counters, then the state.
func (m *model) panelLines(w, h int) []string {
	if w <= 0 || h <= 0 {
		return nil
	}
	st := m.st
	p := m.params
	row := func(name, val, keys string) string {
		return " " + fit(name, 11) + " " + fit(val, 7) + " " + st.r(st.key, keys)
	}
	stat := func(name, val string) string {
		return " " + fit(name, 10) + " " + val
	}
	title := func(s string) string { return " " + st.r(st.title, s) }
	ls := []string{
		title("Sampler"),
		row("temperature", fmt.Sprintf("%.2f", p.Temperature), "F2/F3"),
		row("top-p", formatProb(p.TopP), "F4/F5"),
		row("min-p", formatProb(p.MinP), "F6/F7"),
		row("top-k", formatTopK(p.TopK), "F8/F9"),
		row("greedy", onOff(p.Greedy), "F10"),
		row("seed", fmt.Sprint(p.Seed), ""),
	}
	if len(m.order) > 0 {
		order := ansi.Wrap("order: "+strings.Join(m.order, " → "), w-2, "")
		for l := range strings.SplitSeq(order, "\n") {
			ls = append(ls, " "+st.r(st.dim, l))
		}
	}
	s := m.stats
	ls = append(ls, "", title("Context"))
	ls = append(ls, " "+m.kvBar(w-2))
	ls = append(ls,
		stat("prompt", fmt.Sprintf("%d tok", s.PromptTokens)),
		stat("reused", fmt.Sprintf("%d tok", s.ReusedTokens)),
		"", title("Speed"),
		stat("TTFT", formatDur(s.TTFT)),
		stat("prefill", formatRate(s.PrefillTokS)+" tok/s"),
		stat("decode", formatRate(s.DecodeTokS)+" tok/s"),
		stat("generated", fmt.Sprintf("%d tok", s.GenTokens)),
		"",
		stat("state", m.styledState()),
	)
	if len(ls) > h {
		ls = ls[:h]
	}
	return ls
}

// kvBar draws "KV ████░░░░ 123/2048" in w cells.
func (m *model) kvBar(w int) string {
	used, capa := m.stats.KVUsed, m.stats.KVCap
	// Used is padded to the width of the capacity so the bar does not
	// jump as the numbers grow.
	nums := fmt.Sprintf(" %*d/%d", len(fmt.Sprint(capa)), used, capa)
	if capa <= 0 {
		nums = " —"
	}
	barW := w - 3 - len(nums)
	if barW < 4 {
		return "KV" + nums
	}
	fill := 0
	if capa > 0 {
		fill = min(barW, max(0, (used*barW+capa-1)/capa))
	}
	full := m.st.barFull
	if capa > 0 && used*10 >= capa*9 {
		full = m.st.warn // nearly full: old turns will be dropped soon
	}
	return "KV " + m.st.r(full, strings.Repeat("█", fill)) +
		m.st.r(m.st.barEmpty, strings.Repeat("░", barW-fill)) + nums
}

// statusLine is the one-line panel for terminals too narrow for the side
// panel; the most useful items come first so truncation keeps them.
func (m *model) statusLine() string {
	p := m.params
	s := m.stats
	var knobs string
	if p.Greedy {
		knobs = "greedy"
	} else {
		knobs = fmt.Sprintf("T=%.2f p=%s m=%s k=%s", p.Temperature, formatProb(p.TopP), formatProb(p.MinP), formatTopK(p.TopK))
	}
	parts := []string{m.styledState(), knobs}
	if s.DecodeTokS > 0 {
		parts = append(parts, formatRate(s.DecodeTokS)+" tok/s")
	}
	if s.KVCap > 0 {
		parts = append(parts, fmt.Sprintf("KV %d/%d", s.KVUsed, s.KVCap))
	}
	if s.TTFT > 0 {
		parts = append(parts, "TTFT "+formatDur(s.TTFT))
	}
	if s.PrefillTokS > 0 {
		parts = append(parts, "prefill "+formatRate(s.PrefillTokS)+" tok/s")
	}
	if s.PromptTokens > 0 {
		parts = append(parts, fmt.Sprintf("prompt %d (%d reused)", s.PromptTokens, s.ReusedTokens))
	}
	return strings.Join(parts, " · ")
}

func cleanOrder(order []string) []string {
	out := make([]string, len(order))
	for i, s := range order {
		out[i] = oneLine(s)
	}
	return out
}

package ui

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

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
	case m.pending != "":
		return "running " + strings.Fields(m.pending)[0]
	case m.backendStatus() != "":
		return m.backendStatus()
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
	case m.backendStatus():
		return m.st.r(m.st.busy, s)
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
	keys       string // the first temperature key, standing for the key map
	w, h       int
	orderCount int
}

func (m *model) cachedPanel(w, h int) []string {
	k := panelKey{m.params, m.stats, m.stateText(), m.keys.first("temperature_down"), w, h, len(m.order)}
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
	keys := m.keyPair
	ls := []string{
		stat("state", m.styledState()),
		"",
		title("Sampler"),
		row("temperature", fmt.Sprintf("%.2f", p.Temperature), keys("temperature_down", "temperature_up")),
		row("top-p", formatProb(p.TopP), keys("top_p_down", "top_p_up")),
		row("min-p", formatProb(p.MinP), keys("min_p_down", "min_p_up")),
		row("top-k", formatTopK(p.TopK), keys("top_k_down", "top_k_up")),
		row("greedy", onOff(p.Greedy), keys("greedy", "")),
		row("repeat pen", formatPenalty(p.RepeatPenalty, 1), ""),
		row("freq/pres", formatPenalty(p.FrequencyPenalty, 0)+"/"+formatPenalty(p.PresencePenalty, 0), ""),
		row("pen window", formatWindow(p.PenaltyWindow), ""),
		row("seed", fmt.Sprint(p.Seed), ""),
	}
	if c := m.stats.Constraint; c.Spec != "" {
		ls = append(ls,
			stat("format", fit(oneLine(c.Spec), w-12)),
			stat("mask", fmt.Sprintf("%d ids · %s", c.Allowed, formatMaskTime(c.MaskTime))))
	}
	if len(m.order) > 0 {
		order := ansi.Wrap("applied: "+strings.Join(appliedOrder(m.order, p, m.stats.Constraint.Spec != ""), " → "), w-2, "")
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
	)
	if kv := s.KV; kv.Blocks > 0 {
		ls = append(ls,
			stat("KV pool", fmt.Sprintf("%d/%d blk", kv.Used, kv.Blocks)),
			stat("KV k/v", kvFormats(kv.FormatK, kv.FormatV)),
			stat("cache hit", fmt.Sprintf("%.0f%% (%d evicted)", 100*kv.HitRate, kv.Evictions)))
	}
	ls = append(ls,
		"", title("Speed"),
		stat("TTFT", formatDur(s.TTFT)),
		stat("prefill", formatRate(s.PrefillTokS)+" tok/s"),
		stat("decode", formatRate(s.DecodeTokS)+" tok/s"),
		stat("generated", fmt.Sprintf("%d tok", s.GenTokens)),
	)
	if sp := s.Spec; sp.Method != "" && sp.Method != "off" {
		ls = append(ls,
			stat("spec", fmt.Sprintf("%s k=%d", oneLine(sp.Method), sp.K)),
			stat("accepted", fmt.Sprintf("%.0f%% · %.1f/pass", 100*sp.Acceptance, sp.TokensPerPass)),
			stat("mean run", fmt.Sprintf("%.2f tok", sp.MeanAccepted)))
		if sp.K > 0 {
			pos := make([]string, 0, sp.K)
			for i := 0; i < sp.K && i < len(sp.PerPosition); i++ {
				pos = append(pos, fmt.Sprintf("%.0f", 100*sp.PerPosition[i]))
			}
			ls = append(ls, stat("by guess", strings.Join(pos, " ")+"%"))
		}
	}
	for i := len(ls) - 1; i >= 0 && len(ls) > h; i-- { // tight: drop the spacing first, from the bottom
		if ls[i] == "" {
			ls = slices.Delete(ls, i, i+1)
		}
	}
	if len(ls) > h {
		ls = ls[:h]
	}
	return ls
}

// keyPair names the keys of a down/up pair of actions: "F2/3", "Alt+2/Alt+3".
func (m *model) keyPair(down, up string) string {
	a, b := m.keys.first(down), m.keys.first(up)
	if up == "" {
		return a
	}
	if a == "" || b == "" {
		return a + b
	}
	if strings.HasPrefix(a, "F") && strings.HasPrefix(b, "F") {
		return a + "/" + strings.TrimPrefix(b, "F")
	}
	return a + "/" + b
}

// backendStatus is what a StatusReporter backend says it is doing.
func (m *model) backendStatus() string {
	if s, ok := m.b.(StatusReporter); ok && m.pending == "" {
		return oneLine(s.Status())
	}
	return ""
}

// formatPenalty shows a penalty, "off" at its neutral value.
func formatPenalty(v, neutral float64) string {
	if v == neutral || (neutral == 1 && v == 0) {
		return "off"
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

func formatWindow(n int) string {
	if n <= 0 {
		return "64"
	}
	return fmt.Sprint(n)
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
	if pen := penaltyText(p); pen != "" {
		knobs += " " + pen
	}
	parts := []string{m.styledState(), knobs}
	if s.DecodeTokS > 0 {
		parts = append(parts, formatRate(s.DecodeTokS)+" tok/s")
	}
	if sp := s.Spec; sp.Method != "" && sp.Method != "off" {
		parts = append(parts, fmt.Sprintf("spec %s %.0f%%", oneLine(sp.Method), 100*sp.Acceptance))
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

// appliedOrder is the backend's processor order without the processors the
// knobs switch off (greedy ends the chain at the argmax; the mask is on
// while replies are constrained). Names it does not know are kept.
func appliedOrder(order []string, p sampler.Params, constrained bool) []string {
	var out []string
	for _, name := range order {
		on := true
		switch name {
		case "mask":
			on = constrained
		case "penalties":
			on = (p.RepeatPenalty != 0 && p.RepeatPenalty != 1) || p.FrequencyPenalty != 0 || p.PresencePenalty != 0
		case "greedy":
			if p.Greedy {
				return append(out, "greedy (argmax)")
			}
			on = false
		case "temperature":
			on = p.Temperature != 1
		case "top-k":
			on = p.TopK > 0
		case "top-p":
			on = p.TopP > 0 && p.TopP < 1
		case "min-p":
			on = p.MinP > 0 && p.MinP < 1
		}
		if on {
			out = append(out, name)
		}
	}
	return out
}

// formatMaskTime is a mask's mean cost per token, in µs below 1 ms.
func formatMaskTime(d time.Duration) string {
	if d > 0 && d < time.Millisecond {
		return fmt.Sprintf("%.1f µs", float64(d.Nanoseconds())/1000)
	}
	return formatDur(d)
}

// penaltyText lists the penalties that are on, for the status line.
func penaltyText(p sampler.Params) string {
	var out []string
	if v := formatPenalty(p.RepeatPenalty, 1); v != "off" {
		out = append(out, "rep="+v)
	}
	if v := formatPenalty(p.FrequencyPenalty, 0); v != "off" {
		out = append(out, "freq="+v)
	}
	if v := formatPenalty(p.PresencePenalty, 0); v != "off" {
		out = append(out, "pres="+v)
	}
	return strings.Join(out, " ")
}

func cleanOrder(order []string) []string {
	out := make([]string, len(order))
	for i, s := range order {
		out[i] = oneLine(s)
	}
	return out
}

// kvFormats names how the cache stores keys and values ("f32/f32" when the
// engine does not say).
func kvFormats(k, v string) string {
	if k == "" {
		k = "f32"
	}
	if v == "" {
		v = "f32"
	}
	return k + "/" + v
}

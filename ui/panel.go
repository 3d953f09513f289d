package ui

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"chat/config/settings"
	"chat/engine/sampler"
	"chat/session"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

const (
	panelWidth    = 30 // columns of the side panel, its edge excluded
	panelMinWidth = 90 // terminal width from which the side panel is shown
	edgeWidth     = 2  // columns of panelEdge
)

// panelEdge is drawn at the left of the panel, beside or over the
// transcript: a blank column so text never touches the separator, then the
// separator.
func (m *model) panelEdge() string { return " " + m.st.r(m.st.dim, "│") }

// state is what the panel calls the generation state.
func (m *model) stateText() string {
	switch {
	case m.pending != "":
		return "running " + strings.Fields(m.pending)[0]
	case m.backendStatus() != "":
		return m.backendStatus()
	case m.stopping:
		return "stopping"
	case m.busy && m.vals.Step:
		return "stepping"
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
	case "generating", "prefill", "stopping", "stepping":
		return m.st.r(m.st.busy, s)
	case "error":
		return m.st.r(m.st.err, s)
	case "stopped", "length":
		return m.st.r(m.st.warn, s)
	}
	return s
}

// panel is the side panel: the state, every setting with a label in the
// settings table (with its hot keys), the speculation set for the next
// reply, then the cache and speed counters of the last reply. It is drawn
// at the right of the transcript from 90 columns, and below that as an
// overlay (Ctrl+O). It is redrawn only when what it shows changed.
type panel struct {
	key   panelKey
	lines []string
}

// panelKey is everything the panel shows.
type panelKey struct {
	params     sampler.Params
	random     bool
	maxTokens  int
	spec       string
	draftK     int
	draft      string
	stats      session.Stats
	state      string
	keys       string // the first temperature key, standing for the key map
	w, h       int
	orderCount int
	light      bool
	views      string
}

func (m *model) cachedPanel(w, h int) []string {
	v := m.vals
	k := panelKey{v.Sampler, v.RandomSeed, v.MaxTokens, v.Spec, v.DraftK, m.info.Draft, m.stats, m.stateText(),
		m.keys.first("temperature_down"), w, h, len(m.order), m.st.light, m.viewNames()}
	p := &m.panel
	if p.lines == nil || k != p.key {
		ls := m.panelLines(w, h)
		p.lines = make([]string, h)
		for i := range p.lines {
			s := ""
			if i < len(ls) {
				s = ls[i]
			}
			p.lines[i] = fit(s, w)
		}
		p.key = k
	}
	return p.lines
}

// panelLines renders the side panel.
func (m *model) panelLines(w, h int) []string {
	if w <= 0 || h <= 0 {
		return nil
	}
	st := m.st
	v := m.vals
	row := func(name, val, keys string) string {
		return " " + fit(name, 11) + " " + fit(val, 7) + " " + st.r(st.key, keys)
	}
	stat := func(name, val string) string { return " " + fit(name, statIndent-2) + " " + val }
	title := func(s string) string { return " " + st.r(st.title, s) }
	ls := []string{stat("state", m.styledState())}
	if on := m.viewNames(); on != "" {
		ls = append(ls, stat("views", on))
	}
	ls = append(ls, "", title("Sampler"))
	def := settings.Defaults(v.Mode)
	for _, s := range settings.All() {
		if s.Label == "" || !s.Always && !s.Active(&v, &def) {
			continue
		}
		if by := s.ReplacedBy(&v); by != "" {
			// Its stage does not run (llama.cpp's mirostat skips it too).
			ls = append(ls, " "+st.r(st.dim, fit(s.Label, 11)+" — ("+by+")"))
			continue
		}
		keys := ""
		switch len(s.Keys) {
		case 1:
			keys = m.keys.first(s.Keys[0].Action)
		case 2:
			keys = m.keys.pair(s.Keys[0].Action, s.Keys[1].Action)
		}
		ls = append(ls, row(s.Label, s.Show(&v), keys))
	}
	if c := m.stats.Constraint; c.Spec != "" {
		mask := fmt.Sprintf("%d ids · %s", c.Allowed, formatMaskTime(c.MaskTime))
		if c.Remote {
			mask = st.r(st.dim, "on the server")
		}
		ls = append(ls, stat("format", fit(oneLine(c.Spec), w-statIndent)), stat("mask", mask))
	}
	if len(m.order) > 0 {
		order := ansi.Wrap("applied: "+strings.Join(appliedOrder(m.order, v.Sampler, m.stats.Constraint.Spec != ""), " → "), w-2, "")
		for l := range strings.SplitSeq(order, "\n") {
			ls = append(ls, " "+st.r(st.dim, l))
		}
	}
	s := m.stats
	if s.Server.Kind != "" {
		ls = append(ls, m.serverLines(w, title, stat)...)
	} else {
		ls = append(ls, "", title("Context"))
		ls = append(ls, " "+m.kvBar(w-2))
		ls = append(ls,
			stat("prompt", fmt.Sprintf("%d tok", s.PromptTokens)),
			stat("reused", fmt.Sprintf("%d tok", s.ReusedTokens)),
		)
	}
	if kv := s.KV; kv.Blocks > 0 {
		// Blocks in use of all, and the whole pool's memory (used or not)
		// on the same row, so the rows below stay in view on 30 lines.
		pool := fmt.Sprintf("%d/%d blk", kv.Used, kv.Blocks)
		if kv.Bytes > 0 {
			pool = fmt.Sprintf("%d/%d · %s", kv.Used, kv.Blocks, poolBytes(kv.Bytes))
		}
		ls = append(ls, stat("KV pool", pool))
		if f := kvFormats(kv.FormatK, kv.FormatV); f != "f32/f32" {
			ls = append(ls, stat("KV k/v", f))
		}
		ls = append(ls, stat("cache hit", fmt.Sprintf("%.0f%% (%d evicted)", 100*kv.HitRate, kv.Evictions)))
	}
	ls = append(ls,
		"", title("Speed"),
		stat("TTFT", formatDur(s.TTFT)),
		stat("prefill", prefillText(s)),
		stat("decode", formatRate(s.DecodeTokS)+" tok/s"),
	)
	if s.DecodeBound > 0 {
		ls = append(ls, stat("bound", boundText(s)))
	}
	ls = append(ls, stat("generated", fmt.Sprintf("%d tok", s.GenTokens)))
	ls = append(ls, m.specLines(stat)...)
	// A value too long for the panel ("bound 0.27 ms/tok · measured 1.3 ms")
	// goes on under itself while there are rows to spare, from the top; the
	// rest are cut with … (by the caller's fit). When tight, the spacing
	// goes first, from the bottom, then the last lines.
	wrapped := make([][]string, len(ls))
	rows := len(ls)
	for i, l := range ls {
		if ansi.StringWidth(l) > w { // only a stat's value can be wider
			wrapped[i] = wrapStat(l, w)
			rows += len(wrapped[i]) - 1
		}
	}
	for i := len(ls) - 1; i >= 0 && rows > h; i-- {
		if ls[i] == "" {
			ls, wrapped = slices.Delete(ls, i, i+1), slices.Delete(wrapped, i, i+1)
			rows--
		}
	}
	out := make([]string, 0, h)
	spare := h - len(ls)
	for i, l := range ls {
		if n := len(wrapped[i]) - 1; n > 0 && n <= spare {
			out = append(out, wrapped[i]...)
			spare -= n
		} else {
			out = append(out, l)
			if n > 0 {
				spare = 0 // the ones below are cut too, not wrapped out of turn
			}
		}
	}
	return out[:min(len(out), h)]
}

// statIndent is the column a stat's value starts at: " name       value".
const statIndent = 12

// wrapStat wraps a stat line's value to w cells, under itself.
func wrapStat(l string, w int) []string {
	head, val := ansi.Truncate(l, statIndent, ""), ansi.TruncateLeft(l, statIndent, "")
	out := strings.Split(ansi.Wrap(val, max(1, w-statIndent), ""), "\n")
	out[0] = head + out[0]
	for i := 1; i < len(out); i++ {
		out[i] = strings.Repeat(" ", statIndent) + out[i]
	}
	return out
}

// specLines are the speculation set for the next reply and, when the last
// reply ran it, how it went.
func (m *model) specLines(stat func(name, val string) string) []string {
	v, sp := m.vals, m.stats.Spec
	if (v.Spec == "" || v.Spec == "off") && (sp.Method == "" || sp.Method == "off") {
		return nil
	}
	set := "off"
	if v.Spec != "" && v.Spec != "off" {
		set = fmt.Sprintf("%s k=%d", oneLine(v.Spec), v.DraftK)
		if v.Spec == "draft" && m.info.Draft != "" {
			set = fmt.Sprintf("%s k=%d", oneLine(m.info.Draft), v.DraftK)
		}
	}
	ls := []string{stat("spec", set)}
	if sp.Method == "" || sp.Method == "off" || sp.Method != v.Spec || sp.K != v.DraftK {
		if v.Spec != "off" && v.Spec != "" {
			ls = append(ls, stat("accepted", m.st.r(m.st.dim, "after next reply")))
		}
		return ls
	}
	ls = append(ls,
		stat("accepted", fmt.Sprintf("%.0f%% · %.1f/pass", 100*sp.Acceptance, sp.TokensPerPass)),
		stat("mean run", fmt.Sprintf("%.2f tok", sp.MeanAccepted)))
	if sp.K > 0 {
		pos := make([]string, 0, sp.K)
		for i := 0; i < sp.K && i < len(sp.PerPosition); i++ {
			pos = append(pos, fmt.Sprintf("%.0f", 100*sp.PerPosition[i]))
		}
		ls = append(ls, stat("by guess", strings.Join(pos, " ")+"%"))
	}
	// Last: on a short terminal the panel is cut at the bottom.
	if sp.Note != "" {
		ls = append(ls, stat("adapt", oneLine(sp.Note)))
	} else if sp.KNow > 0 && sp.KNow != sp.K {
		ls = append(ls, stat("adapt", fmt.Sprintf("k=%d now", sp.KNow)))
	}
	return ls
}

// boundText is the decode bound per token and the measured time per token
// beside it: "decode bound X ms/token · measured Y".
func boundText(s session.Stats) string {
	ms := func(d float64) string { return strconv.FormatFloat(d, 'g', 3, 64) + " ms" }
	out := ms(s.DecodeBound.Seconds()*1e3) + "/tok"
	if s.DecodeTokS > 0 {
		out += " · measured " + ms(1e3/s.DecodeTokS)
	}
	return out
}

// serverLines are the panel's server section (chat --remote): what the
// server's /metrics and usage block report, and, plainly, what they do not.
func (m *model) serverLines(w int, title func(string) string, stat func(name, val string) string) []string {
	sv, s := m.stats.Server, m.stats
	pct := func(v float64) string {
		if v < 0 {
			return m.st.r(m.st.dim, "not reported")
		}
		return fmt.Sprintf("%.0f%%", 100*v)
	}
	num := func(v float64) string {
		if v < 0 {
			return "?"
		}
		return fmt.Sprintf("%.0f", v)
	}
	ls := []string{"", title("Server"), stat("server", oneLine(sv.Kind))}
	if sv.Metrics != "" {
		ls = append(ls, stat("metrics", m.st.r(m.st.dim, oneLine(sv.Metrics))))
	} else {
		ls = append(ls, stat("requests", num(sv.Running)+" run · "+num(sv.Waiting)+" wait"),
			stat("KV cache", pct(sv.KVUsage)), stat("prefix hit", pct(sv.PrefixHitRate)))
		if sv.Preemptions >= 0 {
			ls = append(ls, stat("preempted", num(sv.Preemptions)))
		}
		if sv.SpecAcceptance > 0 { // 0: nothing drafted yet
			ls = append(ls, stat("spec acc.", pct(sv.SpecAcceptance)))
		}
	}
	reused := fmt.Sprintf("%d tok", s.ReusedTokens)
	if strings.Contains(sv.Missing, "reused prompt tokens") {
		reused = m.st.r(m.st.dim, "not reported")
	}
	ls = append(ls, stat("prompt", fmt.Sprintf("%d tok", s.PromptTokens)), stat("reused", reused))
	if sv.Missing != "" {
		for l := range strings.SplitSeq(ansi.Wrap("not reported: "+oneLine(sv.Missing), w-2, ""), "\n") {
			ls = append(ls, " "+m.st.r(m.st.dim, l))
		}
	}
	return ls
}

// prefillText is the prefill speed, or how many tokens were prefilled when
// they were too few to quote a rate.
func prefillText(s session.Stats) string {
	if s.PrefillTokS > 0 {
		return formatRate(s.PrefillTokS) + " tok/s"
	}
	if n := s.PromptTokens - s.ReusedTokens; n > 0 && s.PromptTokens > 0 {
		return fmt.Sprintf("%d tok", n)
	}
	return "—"
}

// panelOverlay is the panel drawn over the right of the transcript on a
// terminal too narrow for it to sit beside (Ctrl+O opens and closes it).
type panelOverlay struct{ w, h int }

func (p *panelOverlay) place() placement { return placeRight }
func (p *panelOverlay) setSize(w, h int) { p.w, p.h = w, h }
func (p *panelOverlay) lines(m *model) []string {
	if p.w <= edgeWidth+1 {
		return nil
	}
	edge := m.panelEdge()
	var in []string
	if p.w >= 2*(edgeWidth+panelWidth) && p.h > 0 {
		left, right := m.panelColumns(p.h)
		if right != nil {
			out := make([]string, p.h)
			for i := range out {
				out[i] = edge + fit(left[i], panelWidth) + edge + fit(right[i], panelWidth) // one width: placed at the right
			}
			return out
		}
		in = left
	} else {
		in = m.cachedPanel(min(p.w, edgeWidth+panelWidth)-edgeWidth, p.h)
	}
	out := make([]string, len(in))
	for i, l := range in {
		out[i] = edge + l
	}
	return out
}

// panelColumns lays the panel out in h rows, for a terminal wide enough for
// two columns: in one (right is nil) when it fits, else split into two at
// the section break that balances them best (one column of 24 rows cut the
// last counters, "decode" and "generated", at 80x24). The one render at 2h
// serves both: where the panel fits, its first h rows are what a render at
// h gives, so a frame does not render it twice.
func (m *model) panelColumns(h int) (left, right []string) {
	all := m.cachedPanel(panelWidth, 2*h) // a blank line, then a title: the sections
	n := len(all)
	blank := func(i int) bool { return strings.TrimSpace(all[i]) == "" } // fit pads every line
	for n > 0 && blank(n-1) {
		n--
	}
	if n <= h {
		return all[:h], nil
	}
	all = all[:n]
	off := func(i int) int { return max(2*i-n, n-2*i) } // from the middle
	cut := -1
	for i := range all {
		if blank(i) && i <= h && n-i-1 <= h && (cut < 0 || off(i) < off(cut)) {
			cut = i
		}
	}
	if cut < 0 {
		left, right = all[:h], all[h:]
	} else {
		left, right = all[:cut], all[cut+1:]
	}
	left = append(left[:len(left):len(left)], make([]string, h-len(left))...)
	right = append(right[:len(right):len(right)], make([]string, max(0, h-len(right)))...)
	return left, right[:h]
}
func (p *panelOverlay) hint(m *model) string {
	return m.st.r(m.st.dim, m.keys.first("panel")+" or Esc closes the panel")
}
func (p *panelOverlay) key(m *model, k tea.KeyPressMsg, act string) (tea.Cmd, bool) {
	if act == "stop" || act == "panel" {
		m.pop(func(l layer) bool { return l == p })
		return nil, true
	}
	return nil, false
}

// togglePanel is Ctrl+O: the panel as an overlay when it does not fit beside
// the transcript.
func (m *model) togglePanel() {
	if _, open := find[*panelOverlay](m); open {
		m.pop(func(l layer) bool { _, ok := l.(*panelOverlay); return ok })
		return
	}
	if m.layout().panel {
		m.setInfo("the panel is on the right; Ctrl+O shows it over the transcript below 90 columns")
		return
	}
	m.push(&panelOverlay{})
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
// panel; the most useful items come first so truncation keeps them, and
// the panel key shows the rest.
func (m *model) statusLine() string {
	p := m.vals.Sampler
	s := m.stats
	var knobs string
	switch {
	case p.Greedy:
		knobs = "greedy"
	case p.MirostatOn(): // in place of top-p, min-p and top-k
		knobs = fmt.Sprintf("T=%.2f mirostat %d", p.Temperature, p.Mirostat)
	default:
		knobs = fmt.Sprintf("T=%.2f p=%s m=%s k=%s", p.Temperature, formatProb(p.TopP), formatProb(p.MinP), formatTopK(p.TopK))
	}
	if pen := penaltyText(p); pen != "" {
		knobs += " " + pen
	}
	parts := []string{m.styledState(), knobs}
	if k := m.keys.first("panel"); k != "" {
		parts = []string{m.styledState(), m.st.r(m.st.key, k) + " panel", knobs}
	}
	if s.DecodeTokS > 0 {
		parts = append(parts, formatRate(s.DecodeTokS)+" tok/s")
	}
	if sp := s.Spec; sp.Method != "" && sp.Method != "off" {
		parts = append(parts, fmt.Sprintf("spec %s %.0f%%", oneLine(sp.Method), 100*sp.Acceptance))
	}
	if s.KVCap > 0 {
		parts = append(parts, fmt.Sprintf("KV %d/%d", s.KVUsed, s.KVCap))
	}
	if sv := s.Server; sv.Kind != "" && sv.KVUsage >= 0 {
		parts = append(parts, fmt.Sprintf("%s KV %.0f%%", oneLine(sv.Kind), 100*sv.KVUsage))
	}
	if s.TTFT > 0 {
		parts = append(parts, "TTFT "+formatDur(s.TTFT))
	}
	if s.PrefillTokS > 0 {
		parts = append(parts, "prefill "+formatRate(s.PrefillTokS)+" tok/s")
	}
	parts = append(parts, fmt.Sprintf("max %d tok", m.vals.MaxTokens))
	if s.PromptTokens > 0 {
		parts = append(parts, fmt.Sprintf("prompt %d (%d reused)", s.PromptTokens, s.ReusedTokens))
	}
	return strings.Join(parts, " · ")
}

// appliedOrder is the backend's processor order without the processors the
// knobs switch off, by the sampler's own rule (Params.Runs); the mask is
// on while replies are constrained, and greedy is named as the argmax that
// ends the chain. Names the sampler does not know are kept.
func appliedOrder(order []string, p sampler.Params, constrained bool) []string {
	var out []string
	stages := sampler.Order()
	for _, name := range order {
		switch i := slices.Index(stages, name); {
		case i == sampler.StageGreedy && p.Greedy:
			out = append(out, "greedy (argmax)")
		case i < 0 || p.Runs(i) || i == sampler.StageMask && constrained:
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

// poolBytes is the KV pool's memory for the panel: "268 MB", "1.07 GB".
func poolBytes(n int64) string {
	if n >= 1e9 {
		return fmt.Sprintf("%.3g GB", float64(n)/1e9)
	}
	return fmt.Sprintf("%.0f MB", math.Max(float64(n)/1e6, 1))
}

package ui

import (
	"fmt"
	"strings"
	"time"

	"chat/config/settings"
	"chat/session"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// The views (config/settings declares them: next_token, token_view,
// kv_map, sparklines, and step mode): pictures of inference drawn from what
// the backend's Poll brings — the engine's records of its steps, the KV
// pool's map, the stats — never from the engine itself, so drawing costs
// decoding nothing and happens at the poll rate (30 Hz while a reply
// streams). Each is toggled by its key, by /view NAME and by /set.
//
// The next-token view, the KV block map and the sparklines share a dock at
// the bottom of the transcript column, above the notice line; the token
// view colours the transcript itself (tokenview.go) and puts its legend in
// the dock. When the terminal is short, the dock keeps a third of the body
// for the transcript, gives each view a row first (its one-line summary)
// and the rest by priority (next-token, KV, sparklines); at 5 rows a view
// is one line, and with no room at all it is not drawn.

// viewData is what the views draw, from the backend's polls.
type viewData struct {
	step, preview *session.StepView
	blocks        []session.BlockState
	spark         sparkData
	now           func() time.Time // the sparklines' clock (tests set it)

	// The dock is drawn again only when what it shows changed (gen counts
	// the changes), not on every keystroke.
	gen      int
	planKey  dockKey
	plan     [4]int
	linesKey dockKey
	lines    []string
}

type dockKey struct {
	gen, body, w int
	views        [5]bool
	light        bool
}

// changed marks the views' data as changed.
func (v *viewData) changed() { v.gen++ }

func (m *model) dockKey(body, w int) dockKey {
	v := m.vals
	return dockKey{m.views.gen, body, w, [5]bool{v.ViewNext, v.ViewTokens, v.ViewKV, v.ViewSpark, v.Step}, m.st.light}
}

// dockPart is one view in the dock.
type dockPart struct {
	setting string
	// rows is what the view wants at width w; useful the least it needs to
	// be more than its one-line summary.
	rows   func(m *model, w int) int
	useful int
	draw   func(m *model, w, h int) []string
}

// dockParts in the order they get rows; they are drawn in the reverse
// order, so the next-token view sits closest to the input.
var dockParts = []dockPart{
	{"next_token", (*model).nextRows, 6, (*model).nextLines},
	{"kv_map", (*model).kvRows, 3, (*model).kvLines},
	{"sparklines", (*model).sparkRows, 3, (*model).sparkLines},
	{"token_view", func(*model, int) int { return 1 }, 1, (*model).tokenLegend},
}

// viewOn reports whether the view a setting names is on.
func (m *model) viewOn(name string) bool {
	s := settings.Lookup(name)
	return s != nil && s.Get(&m.vals) == true
}

// dockPlan shares out rows of a body of the given height and width among
// the views that are on (index as dockParts; 0 = not drawn).
func (m *model) dockPlan(body, w int) [4]int {
	k := m.dockKey(body, w)
	if k == m.views.planKey {
		return m.views.plan
	}
	m.views.planKey, m.views.plan = k, m.sharePlan(body, w)
	return m.views.plan
}

func (m *model) sharePlan(body, w int) [4]int {
	var got, want [4]int
	avail := body - min(body, max(1, body/3))
	n := 0
	for i, p := range dockParts {
		if m.viewOn(p.setting) {
			want[i] = max(1, p.rows(m, w))
			n++
		}
	}
	if n == 0 || avail <= 0 {
		return got
	}
	give := func(limit func(i int) int) {
		for i := range dockParts {
			if add := min(limit(i)-got[i], avail); add > 0 {
				got[i] += add
				avail -= add
			}
		}
	}
	give(func(i int) int { return min(want[i], 1) })
	give(func(i int) int { return min(want[i], dockParts[i].useful) })
	give(func(i int) int { return want[i] })
	return got
}

// dockLines draws the dock: the views' rows, each exactly w wide.
func (m *model) dockLines(plan [4]int, body, w int) []string {
	k := m.dockKey(body, w)
	if k == m.views.linesKey && m.views.lines != nil {
		return m.views.lines
	}
	out := []string{}
	for i := len(dockParts) - 1; i >= 0; i-- {
		h := plan[i]
		if h == 0 {
			continue
		}
		ls := dockParts[i].draw(m, w, h)
		for j := range h {
			s := ""
			if j < len(ls) {
				s = ls[j]
			}
			out = append(out, fit(s, w))
		}
	}
	m.views.linesKey, m.views.lines = k, out
	return out
}

// viewTitle is a view's first row: "── name · what ─────".
func (m *model) viewTitle(name, what string, w int) string {
	s := "── " + name
	if what != "" {
		s += " · " + what
	}
	s += " "
	if pad := w - ansi.StringWidth(s); pad > 0 {
		s += strings.Repeat("─", pad)
	}
	return m.st.r(m.st.dim, ansi.Truncate(s, max(0, w), "…"))
}

// takeViews keeps what a poll brought for the views.
func (m *model) takeViews(u session.Update) {
	v := &m.views
	if u.Step != nil || u.Preview != v.preview || u.Blocks != nil || len(u.Tokens) > 0 || u.Busy || u.Done {
		v.changed()
	}
	if u.Step != nil {
		v.step = u.Step
	}
	v.preview = u.Preview
	if u.Blocks != nil {
		v.blocks = append(v.blocks[:0], u.Blocks...)
	}
	if len(u.Tokens) > 0 {
		m.tr.appendStreamTokens(u.Tokens)
	}
	m.sampleSpark(u)
}

// syncViews follows the settings: the transcript's token view, and a
// reply that no longer steps.
func (m *model) syncViews() {
	m.views.changed()
	m.tr.setTokenView(m.vals.ViewTokens)
	if !m.vals.Step {
		m.views.preview = nil
	}
}

// Stepper is a backend whose replies can be made one token at a time
// (step mode; the step setting turns it on).
type Stepper interface{ Step() }

// stepKey is the step key: step mode on, then one token per press.
func (m *model) stepKey() tea.Cmd {
	if !m.vals.Step {
		s := settings.Lookup("step")
		cmd := m.applySetting(s, func(v *settings.Values) { v.Step = true })
		m.setInfo(fmt.Sprintf("step mode: %s makes each token, Esc leaves", m.keys.first("step")))
		return cmd
	}
	if !m.busy {
		m.setInfo(fmt.Sprintf("step mode is on: send a message, then %s makes each token (Esc leaves)", m.keys.first("step")))
		return nil
	}
	if st, ok := m.b.(Stepper); ok {
		st.Step()
	}
	return m.restartPolling() // show the token at once
}

// leaveStepMode is Esc in step mode.
func (m *model) leaveStepMode() {
	s := settings.Lookup("step")
	m.applySetting(s, func(v *settings.Values) { v.Step = false })
	m.setInfo("step mode off: the reply runs freely")
}

// viewCommand is /view [NAME [on|off]]: the views and their keys, or one
// view toggled or set; "/view off" turns every view off.
func (m *model) viewCommand(arg string) tea.Cmd {
	fields := strings.Fields(strings.ToLower(arg))
	views := settings.Views()
	if len(fields) == 0 {
		var parts []string
		for _, s := range views {
			parts = append(parts, fmt.Sprintf("%s (%s) %s", s.View, m.keys.first(s.Keys[0].Action), onOff(s.Get(&m.vals) == true)))
		}
		m.setInfo("views: " + strings.Join(parts, " · ") + " · /view NAME toggles one")
		return nil
	}
	if len(fields) == 1 && (fields[0] == "off" || fields[0] == "none") {
		v := m.b.Settings()
		for _, s := range views {
			s.Put(&v, false)
		}
		if err := m.apply(v); err != nil {
			m.setNotice(err.Error(), true)
			return nil
		}
		m.syncViews()
		m.setInfo("every view off")
		return nil
	}
	var s *settings.Setting
	for _, x := range views {
		if x.View == fields[0] || x.Name == fields[0] {
			s = x
		}
	}
	if s == nil || len(fields) > 2 {
		names := make([]string, len(views))
		for i, x := range views {
			names[i] = x.View
		}
		m.setNotice("usage: /view [NAME [on|off]] or /view off; views: "+strings.Join(names, ", "), true)
		return nil
	}
	on := s.Get(&m.vals) != true
	if len(fields) == 2 {
		x, err := s.Parse(fields[1])
		if err != nil {
			m.setNotice(err.Error(), true)
			return nil
		}
		on = x.(bool)
	}
	if s.Name == "step" && on && !m.vals.Step {
		return m.stepKey()
	}
	return m.applySetting(s, func(v *settings.Values) { s.Put(v, on) })
}

// viewNames lists the views that are on, for the panel.
func (m *model) viewNames() string {
	var on []string
	for _, s := range settings.Views() {
		if s.Get(&m.vals) == true {
			on = append(on, s.View)
		}
	}
	return strings.Join(on, " ")
}

// remote: the replies come from a server, which sends no step records,
// tokens or block map.
func (m *model) remote() bool { return m.stats.Server.Kind != "" || m.info.Arch == "remote" }

package ui

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"chat/config/settings"
	"chat/session/store"

	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
)

// The command palette (Ctrl+P) lists every action and sampler knob; typing
// filters it, ↑/↓ choose, Enter runs, Esc closes. The sessions picker is
// the same list with saved conversations in it. Both are drawn over the
// bottom of the transcript, above the input.

type paletteItem struct {
	label, keys string // label is what the filter matches
	run         func(m *model) tea.Cmd
	row         func(w int) string // when set, draws the label in w cells
}

type palette struct {
	title  string
	items  []paletteItem
	filter string
	shown  []int // indexes of items that match the filter
	sel    int   // in shown
	w, h   int
}

func (p *palette) place() placement        { return placeBottom }
func (p *palette) setSize(w, h int)        { p.w, p.h = w, h }
func (p *palette) lines(m *model) []string { return m.paletteLines(p, p.w, p.h) }
func (p *palette) hint(m *model) string {
	return m.st.r(m.st.dim, "↑↓ choose · Enter run · Esc close")
}

func newPalette(title string, items []paletteItem) *palette {
	p := &palette{title: title, items: items}
	p.setFilter("")
	return p
}

// setFilter keeps the items whose label holds every word of f.
func (p *palette) setFilter(f string) {
	p.filter = f
	words := strings.Fields(strings.ToLower(f))
	p.shown = p.shown[:0]
	for i, it := range p.items {
		l := strings.ToLower(it.label)
		ok := true
		for _, w := range words {
			if !strings.Contains(l, w) {
				ok = false
				break
			}
		}
		if ok {
			p.shown = append(p.shown, i)
		}
	}
	p.sel = 0
}

func (p *palette) move(d int) {
	if len(p.shown) == 0 {
		return
	}
	p.sel = min(len(p.shown)-1, max(0, p.sel+d))
}

// prefill puts a command in the input to finish typing.
func prefill(line string) func(m *model) tea.Cmd {
	return func(m *model) tea.Cmd {
		m.setInput(line)
		m.in.ta.MoveToEnd()
		return nil
	}
}

func runLine(line string) func(m *model) tea.Cmd {
	return func(m *model) tea.Cmd { return m.runCommand(line) }
}

func (m *model) openPalette() {
	k := m.keys.first
	_, cmdr := m.b.(Commander)
	has := func(ok bool) bool { return ok || cmdr }
	var items []paletteItem
	add := func(ok bool, label, keys string, run func(m *model) tea.Cmd) {
		if ok {
			items = append(items, paletteItem{label: label, keys: keys, run: run})
		}
	}
	_, regen := m.b.(Regenerator)
	_, clr := m.b.(Clearer)
	_, save := m.b.(Saver)
	_, load := m.b.(Loader)
	add(has(regen), "Regenerate the last reply", k("regenerate"), func(m *model) tea.Cmd { return m.regenerate() })
	add(has(clr), "New chat", "/new", runLine("/new"))
	add(has(clr), "Clear the conversation", "/clear", runLine("/clear"))
	add(has(save), "Save the conversation", "/save", runLine("/save"))
	add(has(save), "Save the conversation as…", "/save NAME", prefill("/save "))
	add(has(load), "Load a saved conversation…", "/sessions", func(m *model) tea.Cmd { m.openSessions(); return nil })
	add(true, "System prompt…", "/system", prefill("/system "+m.vals.System))
	add(cmdr, "Switch the model…", "/model FILE", prefill("/model "))
	add(cmdr, "Draft model for speculative decoding…", "/draft FILE", prefill("/draft "))
	add(cmdr && m.info.Draft != "", "Draft model off", "/draft off", runLine("/draft off"))
	add(cmdr, "Save the KV cache to a file…", "/kv save FILE", prefill("/kv save "))
	add(cmdr, "Load a KV cache file…", "/kv load FILE", prefill("/kv load "))
	add(cmdr, "Show the chat template", "/template", runLine("/template"))
	add(true, "Copy the last reply", k("copy_reply"), func(m *model) tea.Cmd { return m.copyReply() })
	add(true, "Copy the last code block", k("copy_code"), func(m *model) tea.Cmd { return m.copyCode() })
	add(true, "Edit your last message", k("edit_last"), func(m *model) tea.Cmd { m.editPrevious(); return nil })
	md := "on"
	if m.markdown {
		md = "off"
	}
	add(true, "Markdown "+md, k("toggle_markdown"), func(m *model) tea.Cmd { m.setMarkdown(!m.markdown); return nil })
	if !m.opts.Plain {
		for _, t := range []string{"dark", "light", "auto"} {
			add(true, "Theme "+t, "/theme "+t, func(m *model) tea.Cmd { return m.setTheme(t) })
		}
	}
	if m.layout().panel {
		add(true, "Show the panel", k("panel"), func(m *model) tea.Cmd { m.togglePanel(); return nil })
	}
	// Every setting /set takes: toggles switch at once, the others are
	// typed into the input with their current value to edit.
	v := m.vals
	for _, st := range settings.All() {
		if st.Where&settings.Set == 0 || st.Name == "system" { // "System prompt…" above
			continue
		}
		name := strings.ReplaceAll(st.Name, "_", " ")
		var keys string
		for _, hk := range st.Keys {
			if keys == "" {
				keys = k(hk.Action)
			}
		}
		if keys == "" {
			keys = "/set " + st.Name
		}
		switch {
		case st.Kind == settings.Bool:
			st := st
			add(true, fmt.Sprintf("%s %s", strings.ToUpper(name[:1])+name[1:], onOff(!st.Get(&v).(bool))), keys, func(m *model) tea.Cmd {
				return m.applySetting(st, func(v *settings.Values) { st.Put(v, !st.Get(v).(bool)) })
			})
		case st.Kind == settings.Choice && len(st.Choices) <= 8:
			for _, c := range st.Choices {
				if c == st.Show(&v) {
					continue
				}
				st, c := st, c
				add(true, fmt.Sprintf("%s: %s", strings.ToUpper(name[:1])+name[1:], c), "/set "+st.Name+" "+c, func(m *model) tea.Cmd {
					return m.applySetting(st, func(v *settings.Values) { st.Put(v, c) })
				})
			}
		default:
			cur := st.Format(&v)
			add(true, fmt.Sprintf("Set %s (now %s)…", name, st.Show(&v)), keys, prefill("/set "+st.Name+" "+cur))
		}
	}
	add(cmdr, "Show the settings", "/show", runLine("/show"))
	add(true, "Help: keys", k("help"), func(m *model) tea.Cmd { m.openHelp(); return nil })
	add(true, "Help: commands", "/help", runLine("/help"))
	add(true, "Quit", k("quit"), func(m *model) tea.Cmd { m.stop(); return tea.Quit })
	m.pop(func(l layer) bool { _, ok := l.(*pane); return ok })
	m.push(newPalette("Command palette", items))
}

// openSessions lists the saved conversations to load one.
func (m *model) openSessions() {
	var items []paletteItem
	if l, ok := m.b.(Lister); ok {
		list, current, err := l.Sessions()
		if err != nil {
			m.setNotice(err.Error(), true)
			return
		}
		if len(list) == 0 {
			m.setNotice("no saved conversations yet", false)
			return
		}
		cols := newSessionCols(list)
		for i, x := range list {
			cur := x.ID == current && current != ""
			label := strings.Join([]string{strconv.Itoa(i + 1), sessionDate(x), sessionTitle(x), oneLine(x.Model), x.ID}, " ")
			items = append(items, paletteItem{label: label, run: runLine("/load " + x.ID),
				row: func(w int) string { return cols.row(i, cur, w) }})
		}
	} else if cp, ok := m.b.(Completer); ok {
		if _, ok := m.b.(Loader); !ok {
			m.setNotice(errNoSessions.Error(), true)
			return
		}
		for _, c := range cp.Complete("/load ") {
			ref := strings.TrimPrefix(c, "/load ")
			items = append(items, paletteItem{label: oneLine(ref), run: runLine("/load " + ref)})
		}
		if len(items) == 0 {
			m.setNotice("no saved conversations yet", false)
			return
		}
	} else {
		m.setNotice(errNoSessions.Error(), true)
		return
	}
	m.pop(func(l layer) bool { _, ok := l.(*pane); return ok })
	m.push(newPalette("Load a conversation", items))
}

// sessionCols lays out the sessions picker's rows, every row's columns at
// the same cells: the number, date, title, model, message count and id.
type sessionCols struct {
	list                              []store.Summary
	numW, titleW, modelW, countW, idW int // the widest of each column
}

func newSessionCols(list []store.Summary) *sessionCols {
	c := &sessionCols{list: list, numW: max(2, len(strconv.Itoa(len(list))))}
	for _, x := range list {
		c.titleW = max(c.titleW, ansi.StringWidth(sessionTitle(x)))
		c.modelW = max(c.modelW, ansi.StringWidth(oneLine(x.Model)))
		c.countW = max(c.countW, len(sessionCount(x)))
		c.idW = max(c.idW, ansi.StringWidth(oneLine(x.ID)))
	}
	return c
}

func sessionTitle(x store.Summary) string {
	if x.Name != "" {
		return oneLine("[" + x.Name + "] " + x.Title)
	}
	return oneLine(x.Title)
}

func sessionDate(x store.Summary) string  { return x.Updated.Local().Format(time.DateTime[:16]) }
func sessionCount(x store.Summary) string { return fmt.Sprintf("%d messages", x.Messages) }

// row is saved conversation i in w cells. The title and the model are what
// tell conversations apart, so they stay longest: the message count and the
// id (/load takes the number too) show only beside the whole title; then a
// long model is elided in the middle (its end names the format) to 28
// cells, then the date goes; then the model is elided further and, below 6
// cells, dropped.
func (c *sessionCols) row(i int, current bool, w int) string {
	x := c.list[i]
	gap := "  "
	if w < 60 {
		gap = " "
	}
	mark := " "
	if current {
		mark = "*"
	}
	num := mark + fmt.Sprintf("%*d", c.numW, i+1)
	extra := []string{fit(sessionDate(x), 16), fit(sessionCount(x), c.countW), fit(oneLine(x.ID), c.idW)} // dropped from the end
	titleMin := min(c.titleW, 16)
	modelW := c.modelW
	room := func(n int) int { // the title's cells beside num, the model and n extras
		r := w - ansi.StringWidth(num) - len(gap) - modelW - len(gap)
		for _, e := range extra[:n] {
			r -= len(gap) + ansi.StringWidth(e)
		}
		return r
	}
	n := len(extra)
	for n > 1 && room(n) < c.titleW {
		n--
	}
	if r := room(n); r < c.titleW {
		modelW = max(min(modelW, 28), modelW-(c.titleW-r))
	}
	for n > 0 && room(n) < titleMin {
		n--
	}
	if r := room(0); r < titleMin {
		modelW = max(0, modelW-(titleMin-r))
		if modelW < 6 {
			modelW = 0
		}
	}
	titleW := min(c.titleW, room(n))
	if modelW == 0 {
		titleW = w - ansi.StringWidth(num) - len(gap)
	}
	cols := []string{num, fit(sessionTitle(x), titleW)}
	if modelW > 0 {
		cols = append(cols, fit(elideMiddle(oneLine(x.Model), modelW), modelW))
	}
	// The date reads best before the title: it goes there when shown.
	if n > 0 {
		cols = slices.Insert(cols, 1, extra[0])
	}
	if n > 1 {
		cols = append(cols, extra[1:n]...)
	}
	return fit(strings.Join(cols, gap), w)
}

// elideMiddle cuts s to w cells with … in the middle, keeping more of the end.
func elideMiddle(s string, w int) string {
	sw := ansi.StringWidth(s)
	if sw <= w || w < 2 {
		return s
	}
	left := (w - 1) / 2
	return ansi.Truncate(s, left, "") + "…" + ansi.TruncateLeft(s, sw-(w-1-left), "")
}

func (p *palette) key(m *model, k tea.KeyPressMsg, act string) (tea.Cmd, bool) {
	switch ks := k.Keystroke(); {
	case act == "stop" || act == "palette":
		m.closeTop()
	case ks == "up":
		p.move(-1)
	case ks == "down" || ks == "tab":
		p.move(+1)
	case ks == "pgup":
		p.move(-8)
	case ks == "pgdown":
		p.move(+8)
	case ks == "enter":
		if len(p.shown) == 0 {
			return nil, true
		}
		it := p.items[p.shown[p.sel]]
		m.closeTop()
		return it.run(m), true
	case ks == "backspace":
		if r := []rune(p.filter); len(r) > 0 {
			p.setFilter(string(r[:len(r)-1]))
		}
	case ks == "ctrl+u":
		p.setFilter("")
	case k.Text != "" && !k.Mod.Contains(tea.ModCtrl) && !k.Mod.Contains(tea.ModAlt):
		p.setFilter(p.filter + oneLine(k.Text))
	case act == "quit":
		return nil, false
	}
	return nil, true // the palette has the keyboard while it is open
}

// paletteLines draws the open palette in w cells and at most h rows.
func (m *model) paletteLines(p *palette, w, h int) []string {
	st := m.st
	if h < 2 || w < 4 {
		return nil
	}
	rows := min(len(p.shown), h-2, 12)
	out := make([]string, 0, rows+2)
	out = append(out, fit(st.r(st.title, " "+p.title)+st.r(st.dim, " · type to filter · ↑↓ Enter · Esc closes"), w))
	out = append(out, fit(st.r(st.user, " › ")+p.filter, w))
	if len(p.shown) == 0 {
		return append(out[:1], fit(st.r(st.user, " › ")+p.filter+st.r(st.dim, "  (nothing matches)"), w))
	}
	top := 0
	if p.sel >= rows {
		top = p.sel - rows + 1
	}
	// Rows with keys are at most 100 cells: wider, a key stands too far from
	// its label to read across.
	rw := w
	if slices.ContainsFunc(p.items, func(it paletteItem) bool { return it.keys != "" }) {
		rw = min(w, 100)
	}
	for i := top; i < top+rows; i++ {
		it := p.items[p.shown[i]]
		keys := it.keys
		kw := ansi.StringWidth(keys)
		lw := rw - 3 - kw - 1
		if lw < 8 {
			keys, kw, lw = "", 0, rw-3
		}
		label := it.label
		if it.row != nil {
			label = it.row(lw)
		}
		line := fit(label, lw) + " " + fit(keys, kw)
		if i == p.sel {
			out = append(out, fit(" "+st.r(st.sel, "▸ "+line), rw))
		} else {
			out = append(out, fit("   "+label, lw+3)+" "+st.r(st.key, fit(keys, kw)))
		}
	}
	for i := range out {
		out[i] = fit(out[i], w)
	}
	return out
}

// Completion of /commands: the candidates for what is typed are listed in a
// popup above the input; Tab takes the chosen one (again: the next), ↑/↓
// choose, Esc hides the popup. The backend is asked only when the part
// before the last space changes; typing after it filters locally.

type completion struct {
	head   string   // input up to and including its last space
	all    []string // candidate lines for head
	items  []string // those that start with the input
	sel    int
	moved  bool // ↑/↓ chose an item
	hidden bool // Esc hid the popup until the input changes
	cycle  []string
	pos    int
}

func completable(v string) bool {
	return strings.HasPrefix(v, "/") && !strings.HasPrefix(v, "//") && !strings.Contains(v, "\n") && len(v) < 300
}

// inputChanged updates the completions after the input changed.
func (m *model) inputChanged() {
	c := &m.compl
	v := m.in.value()
	if c.cycle != nil && c.pos < len(c.cycle) && v == c.cycle[c.pos] {
		return // set by Tab
	}
	c.cycle, c.hidden, c.moved, c.sel = nil, false, false, 0
	if !completable(v) {
		c.items, c.all, c.head = nil, nil, ""
		return
	}
	head := v[:strings.LastIndexByte(v, ' ')+1]
	if head != c.head || c.all == nil {
		c.head, c.all = head, m.candidates(head)
	}
	if m.note.kind == noteOK {
		m.note = note{} // the last answer is stale once a new command is typed
	}
	c.items = c.items[:0]
	lv := strings.ToLower(v)
	for _, s := range c.all {
		if strings.HasPrefix(strings.ToLower(s), lv) {
			c.items = append(c.items, s)
		}
	}
}

// candidates are the whole lines the input can become after head.
func (m *model) candidates(head string) []string {
	var out []string
	add := func(s ...string) {
		for _, x := range s {
			if !slices.Contains(out, x) {
				out = append(out, x)
			}
		}
	}
	cp, hasComplete := m.b.(Completer)
	if m.pending != "" {
		hasComplete = false // the backend is busy with a command
	}
	if head == "" {
		if hasComplete {
			add(cp.Complete("/")...)
		} else {
			add(fallbackCommands...)
		}
		for _, c := range uiCommands {
			add(c.name)
		}
		return out
	}
	name := strings.ToLower(strings.TrimSpace(head))
	if c, _ := findUICommand(name); c != nil && !strings.Contains(name, " ") {
		for _, a := range c.argVals {
			add(head + a)
		}
		return out
	}
	if hasComplete {
		add(cp.Complete(head)...)
	}
	if name == "/set" && !hasComplete {
		for _, k := range settings.Names(settings.Set) {
			add(head + k)
		}
	}
	return out
}

func (m *model) popupVisible() bool {
	c := &m.compl
	if _, open := find[*palette](m); open || c.hidden || len(c.items) == 0 || m.editing >= 0 {
		return false
	}
	return !(len(c.items) == 1 && c.items[0] == strings.TrimRight(m.in.value(), " "))
}

// popup is the completion popup as a layer: it shows while there are
// completions for what is typed (m.compl), so it holds no state itself.
type popup struct{}

func (popup) place() placement { return placeBottom }
func (popup) setSize(int, int) {}
func (popup) lines(m *model) []string {
	l := m.layout()
	return m.popupLines(l.mainW, l.body)
}
func (popup) hint(m *model) string {
	return m.st.r(m.st.dim, "Tab complete · ↑↓ choose · Enter run · Esc hide")
}
func (popup) key(m *model, k tea.KeyPressMsg, act string) (tea.Cmd, bool) { return m.popupKey(k, act) }

// completeKey is Tab, which completes even while the popup is hidden.
func (m *model) completeKey() tea.Cmd {
	c := &m.compl
	switch {
	case c.cycle != nil:
		c.pos = (c.pos + 1) % len(c.cycle)
		m.setInput(c.cycle[c.pos])
	case len(c.items) == 1:
		m.setInput(c.items[0] + " ")
	case len(c.items) > 1:
		c.cycle, c.pos = slices.Clone(c.items), c.sel
		m.setInput(c.cycle[c.pos])
	default:
		return nil // Tab never types into the input
	}
	m.in.ta.MoveToEnd()
	return nil
}

// popupKey handles the keys the completion popup takes; ok is false for
// the others.
func (m *model) popupKey(k tea.KeyPressMsg, act string) (tea.Cmd, bool) {
	c := &m.compl
	ks := k.Keystroke()
	if act == "complete" {
		return m.completeKey(), true
	}
	switch {
	case ks == "up":
		c.sel, c.moved = max(0, c.sel-1), true
	case ks == "down":
		c.sel, c.moved = min(len(c.items)-1, c.sel+1), true
	case act == "stop":
		c.hidden = true
	case act == "send" && c.moved:
		m.setInput(c.items[c.sel] + " ")
		m.in.ta.MoveToEnd()
	default:
		return nil, false
	}
	return nil, true
}

// popupLines draws the completion popup: at most 6 rows.
func (m *model) popupLines(w, h int) []string {
	c := &m.compl
	st := m.st
	rows := min(len(c.items), h-1, 6)
	if rows <= 0 || w < 4 {
		return nil
	}
	top := 0
	if c.sel >= rows {
		top = c.sel - rows + 1
	}
	nameW := 14
	for _, s := range c.items[top : top+rows] {
		nameW = max(nameW, ansi.StringWidth(s)+2)
	}
	nameW = max(1, min(nameW, w-3))
	out := make([]string, 0, rows)
	for i := top; i < top+rows; i++ {
		s := c.items[i]
		name := fit(s, nameW)
		line := "  " + name
		if i == c.sel {
			line = "▸ " + st.r(st.sel, name)
		}
		// A help cut to a few cells ("cha…") says nothing: it goes.
		if h := m.commandHelp(s); h != "" && w-2-nameW >= 8 {
			line += st.r(st.dim, h)
		}
		out = append(out, fit(line, w))
	}
	if n := len(c.items); n > rows && c.sel < top+rows-1 {
		out[len(out)-1] = fit(st.r(st.dim, fmt.Sprintf(" … %d more (Tab, ↑↓)", n-rows+1)), w)
	}
	return out
}

// commandHelp is the one-line description of a command name for the popup:
// the UI's own, or the backend's as its /help lists them (asked once).
func (m *model) commandHelp(name string) string {
	name = strings.ToLower(name)
	if uc, _ := findUICommand(name); uc != nil {
		return uc.help
	}
	if m.cmdHelp == nil && m.pending == "" {
		m.cmdHelp = map[string]string{}
		if c, ok := m.b.(Commander); ok {
			if handled, reply, err := c.Command("/help"); handled && err == nil {
				for line := range strings.SplitSeq(reply, "\n") {
					f := strings.Fields(line)
					if len(f) < 2 || !strings.HasPrefix(f[0], "/") {
						continue
					}
					// "/set KEY VALUE   change a setting": the text after the widest gap.
					rest := strings.TrimSpace(line[len(f[0]):])
					if i := strings.Index(rest, "  "); i >= 0 {
						rest = strings.TrimSpace(rest[i:])
					}
					m.cmdHelp[f[0]] = oneLine(rest)
				}
			}
		}
	}
	return m.cmdHelp[name] // nil map: ""
}

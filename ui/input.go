package ui

import (
	"fmt"
	"strings"

	"charm.land/bubbles/v2/key"
	"charm.land/bubbles/v2/textarea"
	tea "charm.land/bubbletea/v2"
	"github.com/charmbracelet/x/ansi"
	"github.com/rivo/uniseg"
)

// inputBox is the multi-line input: a textarea whose Enter is taken by the
// UI (send), so the newline moves to Alt+Enter / Ctrl+J / Shift+Enter, and
// PgUp/PgDn and Ctrl+Home/End scroll the transcript instead.
//
// A large paste does not go into the textarea (which caps its rows and would
// drop it): it is held aside and a marker such as "[pasted 812.4 KB, 10233
// lines #1]" stands for it; sending puts the text back in its place.
type inputBox struct {
	ta     textarea.Model
	view   string // the last rendering, kept until the input changes
	dirty  bool
	pastes []string // held pastes; marker #i+1 stands for pastes[i]
	raw    bool     // raw mode, for the placeholder
}

// bigPaste is the size from which a paste is held aside.
const (
	bigPasteBytes = 16 << 10
	bigPasteLines = 200
)

func newInputBox(st *styles, raw bool, newline []string) *inputBox {
	in := textarea.New()
	in.ShowLineNumbers = false
	in.SetVirtualCursor(false) // the terminal's cursor: nothing blinks in the content
	in.SetPromptFunc(2, func(p textarea.PromptInfo) string {
		if p.LineNumber == 0 {
			return "› "
		}
		return "  "
	})
	in.Placeholder = placeholder(raw, 0)
	in.DynamicHeight = true
	in.MaxContentHeight = 10000 // not MaxHeight: that would cap the lines one can type
	in.CharLimit = 0
	in.MaxWidth = 0

	km := textarea.DefaultKeyMap()
	if len(newline) == 0 {
		km.InsertNewline = key.NewBinding(key.WithDisabled())
	} else {
		km.InsertNewline = key.NewBinding(key.WithKeys(newline...))
	}
	// Ctrl+P, Ctrl+E and Ctrl+Home/End are the UI's (palette, edit, scroll).
	km.LinePrevious = key.NewBinding(key.WithKeys("up"))
	km.LineNext = key.NewBinding(key.WithKeys("down"))
	km.PageUp = key.NewBinding(key.WithDisabled())
	km.PageDown = key.NewBinding(key.WithDisabled())
	km.InputBegin = key.NewBinding(key.WithKeys("alt+<"))
	km.InputEnd = key.NewBinding(key.WithKeys("alt+>"))
	in.KeyMap = km

	in.SetStyles(inputStyles(st))
	in.Focus()
	return &inputBox{ta: in, dirty: true, raw: raw}
}

// value is what the textarea holds (markers, not the pastes they stand for).
func (b *inputBox) value() string { return b.ta.Value() }

// text is the input as it is sent: every marker replaced by its paste.
func (b *inputBox) text() string {
	v := b.ta.Value()
	for i, p := range b.pastes {
		v = strings.Replace(v, pasteMarker(i, p), p, 1)
	}
	return v
}

func (b *inputBox) setValue(s string) {
	b.ta.SetValue(s)
	b.dirty = true
	if s == "" {
		b.pastes = nil
	}
}

// update passes msg to the textarea; a large paste is held aside.
func (b *inputBox) update(msg tea.Msg) tea.Cmd {
	if p, ok := msg.(tea.PasteMsg); ok && (len(p.Content) >= bigPasteBytes || strings.Count(p.Content, "\n") >= bigPasteLines) {
		b.pastes = append(b.pastes, p.Content)
		b.ta.InsertString(pasteMarker(len(b.pastes)-1, p.Content))
		b.dirty = true
		return nil
	}
	n := 1
	if k, ok := msg.(tea.KeyPressMsg); ok {
		n = b.clusterRunes(k)
	}
	var cmds []tea.Cmd
	for range n {
		var cmd tea.Cmd
		b.ta, cmd = b.ta.Update(msg)
		cmds = append(cmds, cmd)
	}
	// Up or Down (or a paste joining what follows) can land inside a
	// cluster: go to its start. Other messages (the cursor's blink) move
	// nothing, and a click never reaches the input (model.go).
	if moves(msg) {
		if line, col := b.cursorLine(); col < len(line) {
			if start, _ := clusterAt(line, col); start < col {
				b.ta.SetCursorColumn(start)
			}
		}
	}
	b.dirty = true
	return tea.Batch(cmds...)
}

// moves reports whether msg can move the input's cursor: a key or a paste.
func moves(msg tea.Msg) bool {
	switch msg.(type) {
	case tea.KeyPressMsg, tea.PasteMsg:
		return true
	}
	return false
}

// clusterRunes is how many times key k goes to the textarea. The textarea
// moves and deletes by rune, but a user sees grapheme clusters (an emoji
// with a skin tone, a flag, e + a combining accent): Left, Right, Backspace
// and Delete repeat over the runes of the cluster they step over.
func (b *inputBox) clusterRunes(k tea.KeyPressMsg) int {
	km := b.ta.KeyMap
	back := key.Matches(k, km.CharacterBackward, km.DeleteCharacterBackward)
	fwd := key.Matches(k, km.CharacterForward, km.DeleteCharacterForward)
	deletes := key.Matches(k, km.DeleteCharacterBackward, km.DeleteCharacterForward)
	if !back && !fwd || deletes && b.ta.HasSelection() {
		return 1
	}
	line, col := b.cursorLine()
	switch {
	case back && col > 0:
		start, _ := clusterAt(line, col-1)
		return col - start
	case fwd && col < len(line):
		_, end := clusterAt(line, col)
		return end - col
	}
	return 1 // across a line break
}

// cursorLine is the cursor's logical line and its column in runes.
func (b *inputBox) cursorLine() ([]rune, int) {
	lines := strings.Split(b.ta.Value(), "\n")
	line := []rune(lines[min(b.ta.Line(), len(lines)-1)])
	return line, min(b.ta.Column(), len(line))
}

// clusterAt is the rune span [start, end) of the grapheme cluster holding
// line[col].
func clusterAt(line []rune, col int) (start, end int) {
	g := uniseg.NewGraphemes(string(line))
	for g.Next() {
		end = start + len(g.Runes())
		if end > col {
			break
		}
		start = end
	}
	return start, end
}

// pasteMarker is what stands in the input for held paste i.
func pasteMarker(i int, p string) string {
	return fmt.Sprintf("[pasted %.1f KB, %s #%d]", float64(len(p))/1024, lineCount(p), i+1)
}

// setSize gives the input the terminal's width and the rows it may grow to.
func (b *inputBox) setSize(w, termH int) {
	lo, hi := inputBounds(termH)
	b.ta.MinHeight, b.ta.MaxHeight = lo, hi
	b.ta.SetWidth(max(1, w)) // also re-fits the height
	b.setRaw(b.raw)
}

func (b *inputBox) height() int { return b.ta.Height() }

// rows is the rendering, redrawn only after the input changed.
func (b *inputBox) rows() []string {
	if b.dirty || b.view == "" {
		b.view = b.ta.View()
		b.dirty = false
	}
	return strings.Split(b.view, "\n")
}

func inputStyles(st *styles) textarea.Styles {
	var s textarea.Styles
	if !st.plain {
		s.Focused.Prompt = st.user.style
		s.Focused.Placeholder = st.dim.style
		s.Blurred = s.Focused
	}
	s.Cursor = textarea.CursorStyle{Shape: tea.CursorBar, Blink: true}
	return s
}

// inputBounds gives the input's minimum and maximum height for a terminal
// of h rows: three lines when there is room, one on tiny screens.
func inputBounds(h int) (lo, hi int) {
	switch {
	case h >= 20:
		lo = 3
	case h >= 12:
		lo = 2
	default:
		lo = 1
	}
	return lo, max(lo, min(10, h/3))
}

// placeholder is the empty input's hint for a text w cells wide: the
// keys too when they fit on the line, else only what to type (at 20
// columns the whole hint took three rows).
func placeholder(raw bool, w int) string {
	what := "Say something"
	if raw {
		what = "Text to continue (or none)"
	}
	if full := what + " · Enter sends · F1 keys"; w <= 0 || ansi.StringWidth(full) <= w {
		return full
	}
	return what
}

// setRaw fits the placeholder to the mode and the width.
func (b *inputBox) setRaw(raw bool) {
	b.raw = raw
	b.ta.Placeholder = placeholder(raw, b.ta.Width())
	b.dirty = true
}

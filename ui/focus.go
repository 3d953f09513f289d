package ui

import tea "charm.land/bubbletea/v2"

// The UI is a few components, each drawn in the size it is given: the
// transcript, the input, the side panel (transcript.go, input.go, panel.go)
// and the layers opened over the transcript — a pane (help, a long answer),
// the command palette or the sessions picker, the panel as an overlay on a
// narrow terminal, and the completion popup above the input. Opened layers
// sit on a focus stack: a key goes to the top layer first and down the stack
// while no layer takes it, then to the root (scrolling, the hot keys, the
// input). Drawing goes the other way: the transcript, then each layer over
// it, the top one last.

// where a layer is drawn in the body (the rows between the header and the
// notice line).
type placement int

const (
	placeFull   placement = iota // over the whole transcript column
	placeBottom                  // over the bottom of the transcript, above the input
	placeRight                   // at the right of the body (the panel overlay)
)

// layer is one thing opened over the transcript.
type layer interface {
	place() placement
	// setSize gives the layer the cells it may draw in.
	setSize(w, h int)
	// key handles a key press; handled false passes it down the stack.
	key(m *model, k tea.KeyPressMsg, act string) (cmd tea.Cmd, handled bool)
	// lines draws the layer: at most its height, each exactly its width.
	lines(m *model) []string
	// hint is the hint line while the layer has the focus.
	hint(m *model) string
}

// push opens l on top of the stack (one layer of a kind at a time: opening
// it again brings it to the top).
func (m *model) push(l layer) {
	if m.note.kind != noteErr {
		m.clearNote() // the user moved on; the layer's hint takes the line
	}
	m.pop(func(x layer) bool { return sameKind(x, l) })
	m.focus = append(m.focus, l)
	m.sizeLayers()
}

// pop closes the layers match says yes to.
func (m *model) pop(match func(layer) bool) {
	out := m.focus[:0]
	for _, l := range m.focus {
		if !match(l) {
			out = append(out, l)
		}
	}
	clear(m.focus[len(out):])
	m.focus = out
}

// closeTop closes the top layer.
func (m *model) closeTop() {
	if n := len(m.focus); n > 0 {
		if p, ok := m.focus[n-1].(*pane); ok && p == m.note.pane {
			// The notice's pane: closing it dismisses the notice, whose
			// rows said "(in full above · Esc closes)" over nothing.
			m.clearNote()
		}
		m.focus[n-1] = nil
		m.focus = m.focus[:n-1]
	}
}

func (m *model) top() layer {
	if n := len(m.focus); n > 0 {
		return m.focus[n-1]
	}
	return nil
}

func sameKind(a, b layer) bool {
	switch a.(type) {
	case *pane:
		_, ok := b.(*pane)
		return ok
	case *palette:
		_, ok := b.(*palette)
		return ok
	case *panelOverlay:
		_, ok := b.(*panelOverlay)
		return ok
	}
	return false
}

// find is the open layer of type T, if any.
func find[T layer](m *model) (T, bool) {
	for i := len(m.focus) - 1; i >= 0; i-- {
		if l, ok := m.focus[i].(T); ok {
			return l, true
		}
	}
	var zero T
	return zero, false
}

// layers are the open layers bottom to top, with the completion popup
// (opened by typing "/", not by a key) on top when it shows.
func (m *model) layers() []layer {
	if m.popupVisible() {
		return append(m.focus[:len(m.focus):len(m.focus)], popup{})
	}
	return m.focus
}

// sizeLayers gives every layer its size after a resize or an open.
func (m *model) sizeLayers() {
	l := m.layout()
	for _, x := range m.focus {
		switch x.place() {
		case placeRight:
			x.setSize(l.w, l.body) // the panel overlay takes one or two columns of it
		default:
			x.setSize(l.mainW, l.body)
		}
	}
}

// keyToLayers offers k to the open layers, top first.
func (m *model) keyToLayers(k tea.KeyPressMsg, act string) (tea.Cmd, bool) {
	ls := m.layers()
	for i := len(ls) - 1; i >= 0; i-- {
		if cmd, ok := ls[i].key(m, k, act); ok {
			return cmd, true
		}
	}
	return nil, false
}

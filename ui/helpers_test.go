package ui

// Views of the focus stack for the tests.

// pal is the open palette (or sessions picker), nil when closed.
func (m *model) pal() *palette {
	p, _ := find[*palette](m)
	return p
}

// openPane is the open pane, nil when closed.
func (m *model) openPane() *pane {
	p, _ := find[*pane](m)
	return p
}

// helpShown reports whether the key help is open.
func (m *model) helpShown() bool {
	p := m.openPane()
	return p != nil && p.help
}

package ui

import (
	"fmt"
	"io"
	"strings"
	"time"
)

// Progress draws a one-line progress bar (on stderr, before the TUI opens)
// while a large model is read: "loading model.gguf ▕██████░░░░▏ 62%  640/1032 MB".
// It draws nothing for a load that finishes within the first 300 ms, and at
// most ten frames a second.
type Progress struct {
	Verb    string // what is being done: "loading" unless set ("converting", ...)
	w       io.Writer
	label   string
	start   time.Time
	last    time.Time
	touched bool
}

// NewProgress writes to w (a terminal) about label.
func NewProgress(w io.Writer, label string) *Progress {
	return &Progress{w: w, label: label, start: time.Now()}
}

// Update is the loader's callback: done of total bytes read.
func (p *Progress) Update(done, total int64) {
	now := time.Now()
	if now.Sub(p.start) < 300*time.Millisecond || now.Sub(p.last) < 100*time.Millisecond || total <= 0 {
		return
	}
	p.last, p.touched = now, true
	const width = 24
	frac := min(float64(done)/float64(total), 1)
	full := int(frac * width)
	bar := strings.Repeat("█", full) + strings.Repeat("░", width-full)
	verb := p.Verb
	if verb == "" {
		verb = "loading"
	}
	fmt.Fprintf(p.w, "\r\x1b[K%s %s ▕%s▏ %3.0f%%  %.0f/%.0f MB", verb, p.label, bar, 100*frac, float64(done)/1e6, float64(total)/1e6)
}

// Done clears the bar.
func (p *Progress) Done() {
	if p.touched {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

package ui

import (
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"chat/session/termtext"

	"github.com/charmbracelet/x/ansi"
)

// Progress draws a one-line progress bar (on stderr, before the TUI opens)
// while a large model is read: "loading model.gguf ▕██████░░░░▏ 62%  640/1032 MB  1.4 s".
// It draws nothing for a load that finishes within the first 300 ms; past
// that it redraws ten times a second with the seconds spent, also while no
// bytes move: a GGUF file is read through and then its weights are
// repacked, which a still screen made look hung.
type Progress struct {
	verb, label string
	w           io.Writer
	width       int // the terminal's columns: the line stays on one row
	stop, ended chan struct{}

	mu          sync.Mutex
	start       time.Time
	done, total int64
	drawn       bool
}

// NewProgress writes to w (a terminal width columns wide) what is being
// done (verb: "loading", "converting") to label, until Done. The label, a
// file name, is shown with its control characters escaped: the bar writes
// to the terminal directly, not through main's escaping stderr.
func NewProgress(w io.Writer, width int, verb, label string) *Progress {
	return newProgressAt(w, width, verb, label, time.Now())
}

// newProgressAt is NewProgress for a load that started at start.
func newProgressAt(w io.Writer, width int, verb, label string, start time.Time) *Progress {
	p := &Progress{verb: verb, label: termtext.Token(label), w: w, width: width, start: start, stop: make(chan struct{}), ended: make(chan struct{})}
	go p.run()
	return p
}

func (p *Progress) run() {
	defer close(p.ended)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case <-p.stop:
			return
		case <-tick.C:
			p.draw()
		}
	}
}

// Update is the loader's callback: done of total bytes read.
func (p *Progress) Update(done, total int64) {
	p.mu.Lock()
	p.done, p.total = done, total
	p.mu.Unlock()
}

func (p *Progress) draw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	took := time.Since(p.start)
	if took < 300*time.Millisecond {
		return
	}
	p.drawn = true
	tail := fmt.Sprintf("  %.1f s", took.Seconds())
	if p.total > 0 {
		const width = 24
		frac := min(float64(p.done)/float64(p.total), 1)
		full := int(frac * width)
		bar := strings.Repeat("█", full) + strings.Repeat("░", width-full)
		tail = fmt.Sprintf(" ▕%s▏ %3.0f%%  %.0f/%.0f MB", bar, 100*frac, float64(p.done)/1e6, float64(p.total)/1e6) + tail
	}
	// A line that wraps is not cleared by the next frame's \r: the label
	// gives way, then the whole line. The last column stays free, as some
	// terminals wrap on writing it.
	head := p.verb + " " + p.label
	if room := p.width - 1 - ansi.StringWidth(tail); p.width > 0 && ansi.StringWidth(head) > room {
		head = ansi.Truncate(head, max(len(p.verb), room), "…")
	}
	line := head + tail
	if p.width > 0 {
		line = ansi.Truncate(line, p.width-1, "")
	}
	fmt.Fprint(p.w, "\r\x1b[K"+line)
}

// Done stops the drawing and clears the bar.
func (p *Progress) Done() {
	close(p.stop)
	<-p.ended
	if p.drawn {
		fmt.Fprint(p.w, "\r\x1b[K")
	}
}

package ui

import (
	"bytes"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"chat/models/testmodels"

	"github.com/charmbracelet/x/ansi"
)

// lockedBuffer is a bytes.Buffer the bar's goroutine and the test share.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// waitOutput waits until the bar has written something that ok accepts
// (failing after testmodels.HangAfter, a hang).
func waitOutput(t *testing.T, b *lockedBuffer, ok func(string) bool) string {
	t.Helper()
	for deadline := time.Now().Add(testmodels.HangAfter); time.Now().Before(deadline); {
		if s := b.String(); ok(s) {
			return s
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("the bar drew %q", b.String())
	return ""
}

// pastTheDelay moves p's start a second back, past the 300 ms a bar waits
// before it draws.
func pastTheDelay(p *Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.start = time.Now().Add(-time.Second)
}

func TestProgressBar(t *testing.T) {
	var b lockedBuffer
	// Done within the first 300 ms: nothing. The load starts an hour from
	// now, so it is within them however long this host takes to get to
	// Done (with a real start, a test paused 300 ms saw a frame).
	p := newProgressAt(&b, 0, "loading", "big.gguf", time.Now().Add(time.Hour))
	p.Update(10, 100)
	p.Done()
	if b.String() != "" {
		t.Fatalf("drew %q for a fast load", b.String())
	}

	p = NewProgress(&b, 0, "loading", "big.gguf")
	pastTheDelay(p)
	p.Update(50e6, 100e6)
	// The time is a second or more (the start was moved a second back),
	// however long this host takes to draw the frame.
	half := regexp.MustCompile(`loading big\.gguf ▕████████████░░░░░░░░░░░░▏  50%  50/100 MB  [1-9][0-9]*\.[0-9] s`)
	waitOutput(t, &b, half.MatchString)
	// Read through, the weights are prepared with no byte counted: the bar
	// goes on being redrawn, so the wait does not look like a hang.
	p.Update(100e6, 100e6)
	s := waitOutput(t, &b, func(s string) bool { return strings.Contains(s, "100%") })
	waitOutput(t, &b, func(now string) bool { return strings.Count(now, "100%") > strings.Count(s, "100%") })
	p.Done()
	if !strings.HasSuffix(b.String(), "\r\x1b[K") {
		t.Fatalf("Done did not clear the line: %q", b.String())
	}
}

// On a terminal narrower than the line, the label is cut so the line stays
// on one row: a wrapped line is not cleared by the next frame, and each
// frame added a row.
func TestProgressBarFitsTheTerminal(t *testing.T) {
	var b lockedBuffer
	p := NewProgress(&b, 70, "loading", "llama3.2-1b-random-q4_k_m.gguf")
	pastTheDelay(p)
	p.Update(50e6, 100e6)
	s := waitOutput(t, &b, func(s string) bool { return strings.Contains(s, "MB") })
	p.Done()
	for _, frame := range strings.Split(s, "\r\x1b[K")[1:] {
		if w := ansi.StringWidth(frame); w > 69 || !strings.HasPrefix(frame, "loading llama3.2") || !strings.Contains(frame, "…") {
			t.Errorf("a frame %d wide: %q", w, frame)
		}
	}
}

// A file name's control characters are escaped: the bar writes to the
// terminal itself, and a model named "\x1b]0;pwned\a.gguf" set the window's
// title while it loaded.
func TestProgressBarEscapesTheName(t *testing.T) {
	var b lockedBuffer
	p := NewProgress(&b, 0, "loading", "\x1b]0;pwned\a\u009b2J\xff.gguf")
	pastTheDelay(p)
	s := waitOutput(t, &b, func(s string) bool { return strings.Contains(s, ".gguf") })
	p.Done()
	for _, frame := range strings.Split(s, "\r\x1b[K")[1:] {
		if strings.ContainsAny(frame, "\x1b\a\u009b") || !strings.Contains(frame, `\x1b]0;pwned\a\u009b2J\xff.gguf`) {
			t.Errorf("frame %q", frame)
		}
	}
}

package ui

import (
	"fmt"
	"strings"
	"time"

	"github.com/charmbracelet/x/ansi"
)

// fit cuts s to w cells (with an ellipsis) and pads it with spaces to exactly
// w cells, so every screen row has a known width whatever the text holds.
func fit(s string, w int) string {
	if w <= 0 {
		return ""
	}
	sw := ansi.StringWidth(s)
	if sw > w {
		s = ansi.Truncate(s, w, "…")
		sw = ansi.StringWidth(s)
	}
	if sw < w {
		s += strings.Repeat(" ", w-sw)
	}
	return s
}

func formatDur(d time.Duration) string {
	switch {
	case d <= 0:
		return "—"
	case d < time.Millisecond:
		return fmt.Sprintf("%d µs", d.Microseconds())
	case d < 10*time.Second:
		return fmt.Sprintf("%d ms", d.Milliseconds())
	default:
		return fmt.Sprintf("%.1f s", d.Seconds())
	}
}

func formatRate(r float64) string {
	if r <= 0 {
		return "—"
	}
	if r >= 1000 {
		return fmt.Sprintf("%.0f", r)
	}
	return fmt.Sprintf("%.1f", r)
}

// The "off" rules mirror sampler.Params: top-p and min-p only act inside
// (0, 1), top-k only above 0.
func formatTopK(k int) string {
	if k <= 0 {
		return "off"
	}
	return fmt.Sprint(k)
}

func formatProb(p float64) string {
	if p <= 0 || p >= 1 {
		return "off"
	}
	return fmt.Sprintf("%.2f", p)
}

// lineCount is "1 line", "250 lines": the lines of s as an editor counts
// them, a final newline ending the last line rather than starting one.
func lineCount(s string) string {
	n := strings.Count(strings.TrimSuffix(s, "\n"), "\n") + 1
	if n == 1 {
		return "1 line"
	}
	return fmt.Sprintf("%d lines", n)
}

func onOff(b bool) string {
	if b {
		return "on"
	}
	return "off"
}

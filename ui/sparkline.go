package ui

import (
	"fmt"
	"strings"
	"time"

	"chat/session"
)

// Sparklines over the reply being generated (one sample per poll that
// brought tokens: the decode rate over that interval, the speculative
// acceptance so far, the KV fill) and over the session (one point per
// finished reply: its decode rate, acceptance, final KV fill and time to
// first token). They are sampled from the stats every poll, whether the
// view is on or not, so turning it on shows the session so far.

// sparkKeep bounds each series.
const sparkKeep = 512

type series []float64

func (s *series) add(v float64) {
	if len(*s) == sparkKeep {
		copy(*s, (*s)[1:])
		*s = (*s)[:sparkKeep-1]
	}
	*s = append(*s, v)
}

// sparkData are the series.
type sparkData struct {
	rate, accept, fill             series // this reply
	turnRate, turnAccept, turnFill series // per reply
	turnTTFT                       series // ms
	inReply                        bool
	lastTok                        int
	lastAt                         time.Time
}

func (m *model) clock() time.Time {
	if m.views.now != nil {
		return m.views.now()
	}
	return time.Now()
}

// sampleSpark takes one poll's stats.
func (m *model) sampleSpark(u session.Update) {
	d := &m.views.spark
	st := u.Stats
	busy := u.Busy || u.Done
	if !busy {
		return
	}
	now := m.clock()
	if !d.inReply {
		d.inReply = true
		d.rate, d.accept, d.fill = d.rate[:0], d.accept[:0], d.fill[:0]
		d.lastTok, d.lastAt = 0, now
	}
	if st.GenTokens > d.lastTok {
		if d.lastTok > 0 { // the first interval holds the prefill
			if dt := now.Sub(d.lastAt).Seconds(); dt > 0 {
				d.rate.add(float64(st.GenTokens-d.lastTok) / dt)
			}
		}
		if spec(st) {
			d.accept.add(st.Spec.Acceptance)
		}
		if st.KVCap > 0 {
			d.fill.add(float64(st.KVUsed) / float64(st.KVCap))
		}
		d.lastTok, d.lastAt = st.GenTokens, now
	}
	if u.Done {
		d.inReply = false
		d.turnRate.add(st.DecodeTokS)
		if spec(st) {
			d.turnAccept.add(st.Spec.Acceptance)
		}
		if st.KVCap > 0 {
			d.turnFill.add(float64(st.KVUsed) / float64(st.KVCap))
		}
		if st.TTFT > 0 {
			d.turnTTFT.add(float64(st.TTFT.Microseconds()) / 1000)
		}
	}
}

func spec(st session.Stats) bool { return st.Spec.Method != "" && st.Spec.Method != "off" }

func (m *model) sparkRows(int) int { return 5 }

// sparkLines draws a row per metric: this reply's line, then the session's.
func (m *model) sparkLines(w, h int) []string {
	st := m.st
	d := &m.views.spark
	type metric struct {
		label        string
		reply, turns series
		unit         func(float64) string
		fixed        bool // a fraction: scaled to 0..1, not to the largest
	}
	rate := func(v float64) string { return formatRate(v) + " tok/s" }
	frac := func(v float64) string { return fmt.Sprintf("%.0f%%", 100*v) }
	ms := func(v float64) string { return fmt.Sprintf("%.1f ms", v) }
	metrics := []metric{
		{"decode", d.rate, d.turnRate, rate, false},
		{"TTFT", nil, d.turnTTFT, ms, false},
		{"KV fill", d.fill, d.turnFill, frac, true},
		{"spec acc.", d.accept, d.turnAccept, frac, true},
	}
	valW := 12
	if h == 1 {
		return []string{st.r(st.dim, "decode ") + spark(d.rate, 20, false) + " " + valueOf(d.rate, rate) +
			st.r(st.dim, " · per reply ") + spark(d.turnRate, 12, false) + " " + valueOf(d.turnRate, rate)}
	}
	out := []string{m.viewTitle("sparklines", "this reply │ per reply", w)}
	labelW := 12
	room := max(0, w-labelW-2*valW-4)
	rw, tw := room*3/5, room-room*3/5
	for _, mt := range metrics {
		if len(out) >= h {
			break
		}
		row := " " + fit(mt.label, labelW-1) + spark(mt.reply, rw, mt.fixed) + " " + fit(valueOf(mt.reply, mt.unit), valW) +
			st.r(st.dim, "│ ") + spark(mt.turns, tw, mt.fixed) + " " + valueOf(mt.turns, mt.unit)
		if mt.reply == nil {
			row = " " + fit(mt.label, labelW-1) + strings.Repeat(" ", rw) + " " + fit("", valW) +
				st.r(st.dim, "│ ") + spark(mt.turns, tw, mt.fixed) + " " + valueOf(mt.turns, mt.unit)
		}
		out = append(out, row)
	}
	return out
}

// valueOf is the last value of s in its unit, or "—".
func valueOf(s series, unit func(float64) string) string {
	if len(s) == 0 {
		return "—"
	}
	return unit(s[len(s)-1])
}

// spark draws the last w values of s, padded to w cells.
func spark(s series, w int, fixed bool) string {
	if w <= 0 {
		return ""
	}
	if len(s) > w {
		s = s[len(s)-w:]
	}
	top := 1.0
	if !fixed {
		top = 0
		for _, v := range s {
			top = max(top, v)
		}
	}
	levels := []rune("▁▂▃▄▅▆▇█")
	var b strings.Builder
	for _, v := range s {
		i := 0
		if top > 0 {
			i = int(v/top*float64(len(levels)-1) + 0.5)
		}
		b.WriteRune(levels[min(max(i, 0), len(levels)-1)])
	}
	return b.String() + strings.Repeat(" ", w-len(s))
}

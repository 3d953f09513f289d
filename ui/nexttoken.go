package ui

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"chat/session"
	"chat/session/termtext"

	"github.com/charmbracelet/x/ansi"
)

// The next-token view: for the token being generated, the likeliest
// candidates as bars of probability before the sampler chain (the model's
// softmax) and after it (what the sampler drew from: the engine's own
// numbers), the drawn one marked, the entropies, the ids each stage of the
// chain left, in the order the sampler applies them, and a speculative
// round's guesses. In step mode it shows the next token before it is drawn,
// and a hot key reshapes the bars at once.

// maxCands is the candidates listed (engine.TopN).
const maxCands = 10

// nextCands are the rows: the ids the sampler could draw, most likely
// first, then the likeliest ones the chain cut, up to maxCands; the drawn
// id always among them.
func nextCands(v *session.StepView) []session.Candidate {
	out := make([]session.Candidate, 0, maxCands+1)
	has := func(id int) bool {
		return slices.ContainsFunc(out, func(c session.Candidate) bool { return c.ID == id })
	}
	for _, c := range v.After {
		if len(out) < maxCands {
			out = append(out, c)
		}
	}
	for _, c := range v.Before {
		if len(out) < maxCands && !has(c.ID) {
			out = append(out, c)
		}
	}
	if d := v.Drawn; d.ID >= 0 && !has(d.ID) {
		if len(out) == maxCands {
			out = out[:maxCands-1]
		}
		out = append(out, d)
	}
	slices.SortStableFunc(out, func(a, b session.Candidate) int {
		if c := cmp.Compare(b.After, a.After); c != 0 {
			return c
		}
		return cmp.Compare(b.Before, a.Before)
	})
	return out
}

// shown is the record the view draws: the preview while step mode waits,
// else the latest step.
func (m *model) shownStep() *session.StepView {
	if m.views.preview != nil {
		return m.views.preview
	}
	return m.views.step
}

func (m *model) nextRows(w int) int {
	v := m.shownStep()
	if v == nil || m.remote() {
		return 2
	}
	n := 3 + len(nextCands(v)) // title, stages, header
	if v.Round || v.Preview && m.views.step != nil {
		n++
	}
	return n
}

// tokenLabel is a token's text on one row, quoted, at most w cells.
func tokenLabel(text string, w int) string {
	return ansi.Truncate(`"`+termtext.Token(text)+`"`, max(1, w), "…")
}

// pct is a probability in 6 cells; a tiny one is "<0.1%", not 0.
func pct(p float64) string {
	if p > 0 && p < 0.0005 {
		return " <0.1%"
	}
	return fmt.Sprintf("%5.1f%%", 100*p)
}

func (m *model) nextLines(w, h int) []string {
	st := m.st
	v := m.shownStep()
	switch {
	case m.remote():
		return m.viewMessage("next token", "not with --remote: the server sends no distributions", w, h)
	case v == nil:
		return m.viewMessage("next token", "shown from the next token on", w, h)
	}
	ent := fmt.Sprintf("entropy %.2f → %.2f bits", v.EntropyBefore, v.EntropyAfter)
	what := "drew " + tokenLabel(v.Drawn.Text, 18) + " " + strings.TrimSpace(pct(v.Drawn.After))
	if v.Preview {
		what = "not drawn yet (" + m.keys.first("step") + " draws it)"
	}
	if h == 1 {
		return []string{st.r(st.dim, fmt.Sprintf("next #%d %s · %s · %s", v.Token, what, ent, stagesText(v)))}
	}
	out := []string{m.viewTitle(fmt.Sprintf("next token #%d", v.Token), what, w),
		" " + st.r(st.dim, ansi.Truncate(stagesText(v)+" · "+ent, max(1, w-1), "…"))}
	if v.Round {
		out = append(out, " "+ansi.Truncate(roundText(v), max(1, w-1), "…"))
	} else if v.Preview && m.views.step != nil {
		last := m.views.step
		out = append(out, " "+st.r(st.dim, fmt.Sprintf("token #%d drew %s %s", last.Token, tokenLabel(last.Drawn.Text, 18), strings.TrimSpace(pct(last.Drawn.After)))))
	}
	// Columns: marker, token, then "before %" and its bar, "after %" and
	// its bar; a narrow view keeps the after side only.
	tokW := min(16, max(6, w/6))
	rest := w - 2 - tokW - 1
	both := (rest-15)/2 >= 3
	barW := max(0, rest-7)
	if both {
		barW = (rest - 15) / 2
	}
	head := "  " + fit("token", tokW) + " "
	if both {
		head += fit("before the chain", 7+barW) + " "
	}
	head += "after: sampled from"
	out = append(out, st.r(st.dim, head))
	for _, c := range nextCands(v) {
		mark := "  "
		if c.ID == v.Drawn.ID {
			mark = st.r(st.key, "▸ ")
		}
		label := fit(tokenLabel(c.Text, tokW), tokW)
		if c.After == 0 {
			label = st.r(st.dim, label) // cut by the chain
		}
		row := mark + label + " "
		if both {
			row += st.r(st.dim, pct(c.Before)+" "+fit(bar(c.Before, barW), barW)) + " "
		}
		if c.After == 0 {
			row += st.r(st.dim, "   cut")
		} else {
			row += pct(c.After) + " " + st.r(st.barFull, bar(c.After, barW))
		}
		out = append(out, row)
	}
	return out
}

// stagesText is the ids each applied stage left, in the sampler's order:
// "vocab 4096 → temperature 4096 → top-p 23".
func stagesText(v *session.StepView) string {
	parts := []string{fmt.Sprintf("vocab %d", v.Vocab)}
	for _, s := range v.Stages {
		if s.Name == "softmax" || s.Name == "draw" {
			continue // not filters
		}
		parts = append(parts, fmt.Sprintf("%s %d", s.Name, s.Left))
	}
	return strings.Join(parts, " → ")
}

// roundText is a speculative round: the guesses, accepted ones first.
func roundText(v *session.StepView) string {
	var acc, rej []string
	for i, g := range v.Guesses {
		if i < v.Accepted {
			acc = append(acc, tokenLabel(g, 12))
		} else {
			rej = append(rej, tokenLabel(g, 12))
		}
	}
	s := fmt.Sprintf("round: %d guessed, %d accepted", len(v.Guesses), v.Accepted)
	if len(acc) > 0 {
		s += " ✓ " + strings.Join(acc, " ")
	}
	if len(rej) > 0 {
		s += " ✗ " + strings.Join(rej, " ")
	}
	return s
}

// bar draws p of w cells in eighths.
func bar(p float64, w int) string {
	if w <= 0 {
		return ""
	}
	eighths := int(p*float64(w)*8 + 0.5)
	eighths = min(max(eighths, 0), w*8)
	s := strings.Repeat("█", eighths/8)
	if r := eighths % 8; r > 0 {
		s += string([]rune("▏▎▍▌▋▊▉")[r-1])
	}
	return s
}

// viewMessage is a view that has nothing to draw yet: its title with why.
func (m *model) viewMessage(name, why string, w, h int) []string {
	if h == 1 {
		return []string{m.st.r(m.st.dim, name+": "+why)}
	}
	return []string{m.viewTitle(name, "", w), " " + m.st.r(m.st.dim, why)}
}

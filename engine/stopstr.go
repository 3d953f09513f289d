package engine

import "bytes"

// Stop strings (Request.Stop, --stop): the reply ends where one of them
// appears in its text, which is cut before it. The text is matched after
// detokenization, so a stop string may span tokens or end inside one. While
// the end of the text could still be the start of a stop string, those
// bytes are held back from the reply buffer (and OnText); they are let out
// as soon as the next piece shows they are not, or when the reply ends for
// another reason.

// ReasonStopString ends a reply whose text reached one of Request.Stop.
const ReasonStopString = "stop"

// Bounds on a reply's stop strings, which every entry point holds a
// request to (--stop and /set stop, the servers' "stop"): every generated
// piece is matched against each (90,000 of them from a config file made
// decoding 15× slower).
const (
	MaxStops     = 16
	MaxStopBytes = 256
)

// stopText matches the stop strings of one reply.
type stopText struct {
	stops [][]byte
	held  []byte // the tail of the text not yet emitted
	hit   bool   // a stop string was reached: nothing more is emitted
}

// newStopText returns nil when there are no (non-empty) stop strings, so
// the hooks cost nothing then.
func newStopText(stops []string) *stopText {
	var t stopText
	for _, s := range stops {
		if s != "" {
			t.stops = append(t.stops, []byte(s))
		}
	}
	if len(t.stops) == 0 {
		return nil
	}
	return &t
}

// cut takes the next piece of text and replaces *piece with the part that
// can be emitted now. It reports whether a stop string was reached; the
// piece then ends just before it.
func (t *stopText) cut(piece *[]byte) bool {
	if t == nil {
		return false
	}
	if t.hit {
		*piece = (*piece)[:0]
		return true
	}
	t.held = append(t.held, *piece...)
	first := -1
	for _, s := range t.stops {
		if i := bytes.Index(t.held, s); i >= 0 && (first < 0 || i < first) {
			first = i
		}
	}
	if first >= 0 {
		*piece = append((*piece)[:0], t.held[:first]...)
		t.held = t.held[:0]
		t.hit = true
		return true
	}
	keep := 0 // the longest tail of held that begins some stop string
	for _, s := range t.stops {
		for n := min(len(s)-1, len(t.held)); n > keep; n-- {
			if bytes.HasSuffix(t.held, s[:n]) {
				keep = n
				break
			}
		}
	}
	*piece = append((*piece)[:0], t.held[:len(t.held)-keep]...)
	t.held = append(t.held[:0], t.held[len(t.held)-keep:]...)
	return false
}

// flush appends the held-back text to piece, for a reply that ended
// otherwise.
func (t *stopText) flush(piece []byte) []byte {
	if t == nil {
		return piece
	}
	piece = append(piece, t.held...)
	t.held = t.held[:0]
	return piece
}

package ui

import (
	"slices"
	"strings"

	"chat/session"
	"chat/session/termtext"
)

// transcript keeps every message rendered for the current width and only
// re-wraps what changes: finished messages are rendered once per width (and
// lazily, from the bottom, so a resize costs only what is on screen), the
// streaming reply keeps its finished paragraphs and re-wraps only the last
// one.
//
// The scroll position is counted in lines up from the bottom: 0 means
// "follow", anything else stays anchored to the same text while the reply
// grows below it.
type transcript struct {
	st    *styles
	raw   bool
	width int

	msgs []entry
	rd   *rawDoc // raw mode: the conversation as one flowing text instead of msgs

	streaming   bool
	clean       termtext.Stream // sanitises the streamed pieces: an escape sequence split over tokens goes whole
	stream      strings.Builder // the reply so far, sanitised
	stableEnd   int             // stream[:stableEnd] ends with '\n' and is rendered in stable
	stable      []string
	tail        []string
	streamWidth int
	pendingCR   bool // the last piece ended in '\r'

	// Markdown (nil: replies are plain wrapped text). While a reply streams,
	// sc has cut stream into blocks; stable holds the rendered finished
	// ones and tail the open one (markdown.go).
	md     *mdRenderer
	sc     mdScanner
	mdPrev mdBlock // the last block in stable
	mdAny  bool    // stable holds at least one block

	offset int // lines scrolled up from the bottom; 0 = follow

	blank [1]string // the separator line, as wide as the transcript

	frame  uint64 // counts windows drawn
	cached int    // lines held by msgs' renderings

	// The token view (tokenview.go): messages with tokens are drawn as
	// them, and so is the reply being streamed, from streamToks.
	tokenView  bool
	streamToks []session.Token
	tokLines   []string // streamToks drawn at tokWidth
	tokWidth   int
	tokN       int

	sel int // index in msgs of the message being edited, -1 if none
}

type entry struct {
	msg   session.Message
	cut   bool // the last message the model no longer sees: a line says so below it
	width int  // width lines were rendered at; 0 = not yet
	lines []string
	used  uint64 // the frame that last used lines

	n, nWidth int // line count at nWidth, kept when lines are dropped
}

// maxCachedLines bounds the rendered lines kept for finished messages: past
// it, the renderings no frame used lately are dropped (and made again if
// scrolled back to), so a long session's memory stays bounded.
const maxCachedLines = 6000

func newTranscript(st *styles, raw bool, width int) *transcript {
	t := &transcript{st: st, sel: -1}
	t.setWidth(width)
	t.setRaw(raw)
	return t
}

func (t *transcript) setWidth(w int) {
	t.width = max(1, w)
	if len(t.blank[0]) != t.width {
		t.blank[0] = strings.Repeat(" ", t.width)
	}
}

// setRaw switches between chat and raw rendering. The transcript starts
// empty; the next setMessages fills it.
func (t *transcript) setRaw(raw bool) {
	t.raw = raw
	t.msgs, t.rd, t.cached = nil, nil, 0
	if raw {
		t.rd = newRawDoc(t.st)
		t.rd.tokens = t.tokenView
	}
	t.streamWidth = 0
}

// empty reports whether there is nothing to show.
func (t *transcript) empty() bool {
	if t.raw {
		return t.rd.empty() && !t.streaming
	}
	return len(t.msgs) == 0 && !t.streaming
}

// last is the last finished message shown.
func (t *transcript) last() (session.Message, bool) {
	if t.raw {
		return t.rd.last()
	}
	if len(t.msgs) == 0 {
		return session.Message{}, false
	}
	return t.msgs[len(t.msgs)-1].msg, true
}

func (t *transcript) following() bool { return t.offset == 0 }

func (t *transcript) entryLines(i int) []string {
	e := &t.msgs[i]
	e.used = t.frame
	if e.width != t.width {
		t.cached -= len(e.lines)
		e.lines = t.renderMessage(e.msg, t.width, i == t.sel)
		if e.cut {
			e.lines = append(e.lines, t.st.r(t.st.warn, padTo(cutLine, len([]rune(cutLine)), t.width)))
		}
		e.width = t.width
		e.n, e.nWidth = len(e.lines), t.width
		t.cached += len(e.lines)
	}
	return e.lines
}

// entryCount is the number of lines of message i, rendering it only when
// that is not known.
func (t *transcript) entryCount(i int) int {
	if e := &t.msgs[i]; e.nWidth == t.width {
		return e.n
	}
	return len(t.entryLines(i))
}

// evict drops renderings the last frame did not use once too many lines
// are kept.
func (t *transcript) evict() {
	if t.cached <= maxCachedLines {
		return
	}
	for i := range t.msgs {
		e := &t.msgs[i]
		if e.width != 0 && e.used != t.frame {
			t.cached -= len(e.lines)
			e.lines, e.width = nil, 0
			if t.cached <= maxCachedLines/2 {
				return
			}
		}
	}
}

// cutLine follows the last message that no longer fits the context.
const cutLine = "  ⋯ the model no longer sees the messages above: they do not fit its context"

func (t *transcript) renderMessage(m session.Message, width int, selected bool) []string {
	if m.Role == session.System && m.Content == "" {
		m.Content = "(system prompt removed)"
	}
	if m.Dropped {
		text := strings.TrimRight(sanitizeDisplay(m.Content), "\n")
		first, rest := t.st.marker(m.Role)
		return t.st.renderMarked(nil, first, rest, func(s string) string { return t.st.r(t.st.dim, s) }, text, width, true)
	}
	if selected {
		// The message being edited: marked, and in the warning colour.
		text := strings.TrimRight(sanitizeDisplay(m.Content), "\n")
		return t.st.renderMarked(nil, "✎ ", "  ", func(s string) string { return t.st.r(t.st.warn, s) }, text, width, true)
	}
	if t.tokenView && len(m.Tokens) > 0 {
		return t.st.renderTokens(m, width)
	}
	if t.md != nil && m.Role == session.Assistant {
		text := strings.TrimRight(sanitizeDisplay(m.Content), "\n")
		if ls := t.md.render(nil, text, width); len(ls) > 0 {
			return ls
		}
	}
	return t.st.renderMessage(m, width)
}

// invalidate drops the rendering of message i.
func (t *transcript) invalidate(i int) {
	if i < 0 || i >= len(t.msgs) {
		return
	}
	e := &t.msgs[i]
	t.cached -= len(e.lines)
	e.lines, e.width, e.nWidth = nil, 0, 0
}

// selectEntry marks message i (-1: none) as being edited and, for a view of
// the given height, scrolls so that it is in sight.
func (t *transcript) selectEntry(i, height int) {
	if t.raw || i >= len(t.msgs) {
		i = -1
	}
	if i == t.sel {
		return
	}
	// "✎ " and "› " are as wide: the line counts stay, so does the anchor.
	t.invalidate(t.sel)
	t.invalidate(i)
	t.sel = i
	if i < 0 {
		return
	}
	below := t.countFrom(i) // from the top of message i to the bottom
	if below > t.offset+height {
		t.offset = below - height // its first line at the top of the view
	} else if below-t.entryCount(i) < t.offset {
		t.offset = max(0, below-t.entryCount(i)) // its last line at the bottom
	}
}

// setLook changes the styles and whether replies are markdown; everything
// is rendered again lazily.
func (t *transcript) setLook(st *styles, markdown bool) {
	t.st = st
	t.md = nil
	if markdown && !t.raw {
		t.md = newMDRenderer(st)
	}
	if t.rd != nil {
		t.rd.st = st
		t.rd.invalidate()
	}
	for i := range t.msgs {
		t.msgs[i].width, t.msgs[i].lines, t.msgs[i].nWidth = 0, nil, 0
	}
	t.cached = 0
	t.streamWidth = 0
}

// setTokenView turns the token view on or off; what has tokens is drawn
// again.
func (t *transcript) setTokenView(on bool) {
	if on == t.tokenView {
		return
	}
	t.tokenView = on
	if t.rd != nil {
		t.rd.tokens = on
		t.rd.invalidate()
	}
	for i := range t.msgs {
		if len(t.msgs[i].msg.Tokens) > 0 {
			t.invalidate(i)
		}
	}
	t.tokN = -1
}

// appendStreamTokens adds tokens of the reply being streamed.
func (t *transcript) appendStreamTokens(toks []session.Token) {
	before := t.streamCount()
	t.streamToks = append(t.streamToks, toks...)
	t.keepAnchor(before, t.streamCount())
}

// streamTokenLines draws the streamed reply's tokens (all of them: a reply
// is at most a context long).
func (t *transcript) streamTokenLines() []string {
	if t.tokN != len(t.streamToks) || t.tokWidth != t.width {
		t.tokLines = t.st.renderTokens(session.Message{Role: session.Assistant, Tokens: t.streamToks}, t.width)
		t.tokN, t.tokWidth = len(t.streamToks), t.width
	}
	return t.tokLines
}

// streamLines returns the stable and tail lines of the reply being streamed.
func (t *transcript) streamLines() (stable, tail []string) {
	if t.tokenView && len(t.streamToks) > 0 {
		return nil, t.streamTokenLines()
	}
	if t.streamWidth != t.width && t.md != nil {
		t.stable = t.stable[:0]
		t.sc, t.mdAny = newMDScanner(), false
		t.sc.feed(t.stream.String(), t.addBlock)
		t.renderTail()
		t.streamWidth = t.width
	}
	if t.streamWidth != t.width {
		t.stable = t.stable[:0]
		if t.stableEnd > 0 {
			s := t.stream.String()
			t.stable = t.st.renderText(t.stable, session.Assistant, s[:t.stableEnd-1], t.width, true)
		}
		t.renderTail()
		t.streamWidth = t.width
	}
	return t.stable, t.tail
}

func (t *transcript) renderTail() {
	s := t.stream.String()
	rest := s[t.stableEnd:]
	t.tail = t.tail[:0]
	if s == "" {
		// Nothing yet (prefill): a static mark, no animation.
		t.tail = append(t.tail, t.st.r(t.st.dim, padTo("  …", 3, t.width)))
		return
	}
	if t.md != nil {
		if b, ok := t.sc.open(s); ok {
			var prev *mdBlock
			if t.mdAny {
				prev = &t.mdPrev
			}
			if !b.code && len(b.src) > mdTailLimit {
				// A very long open paragraph is shown as plain text until
				// its line ends, so a poll never costs more than this.
				t.tail = t.md.appendPlain(t.tail, prev, b, t.width)
			} else {
				t.tail = t.md.appendBlock(t.tail, prev, b, t.width)
			}
		}
		return
	}
	t.tail = t.st.renderText(t.tail, session.Assistant, rest, t.width, t.stableEnd == 0)
}

func (t *transcript) streamCount() int {
	if !t.streaming || t.raw {
		return 0
	}
	st, tl := t.streamLines()
	n := len(st) + len(tl)
	if len(t.msgs) > 0 {
		n++ // separator
	}
	return n
}

// startStream begins showing a reply; a no-op if one is already shown.
func (t *transcript) startStream() {
	if t.streaming {
		return
	}
	before := t.streamCount()
	t.streaming = true
	if t.raw {
		t.rd.streamed.Reset()
	}
	t.stream.Reset()
	t.streamToks, t.tokN = nil, -1
	t.stableEnd, t.pendingCR = 0, false
	t.stable = t.stable[:0]
	t.sc, t.mdAny = newMDScanner(), false
	t.streamWidth = 0
	t.keepAnchor(before, t.streamCount())
}

// addBlock renders a finished block of the streaming reply into stable.
func (t *transcript) addBlock(b mdBlock) {
	var prev *mdBlock
	if t.mdAny {
		prev = &t.mdPrev
	}
	t.stable = t.md.appendBlock(t.stable, prev, b, t.width)
	t.mdPrev, t.mdAny = b, true
}

// appendStream adds reply text. Only the paragraphs that this text touches
// are wrapped again.
func (t *transcript) appendStream(text string) {
	// A "\r\n" split over two pieces must not become two line breaks.
	if t.pendingCR && strings.HasPrefix(text, "\n") {
		text = text[1:]
	}
	if text != "" {
		t.pendingCR = strings.HasSuffix(text, "\r")
	}
	if t.raw {
		t.startStream()
		k := len(t.rd.paras)
		before := t.rd.countFrom(k, t.width)
		t.rd.stream(text)
		t.keepAnchor(before, t.rd.countFrom(k, t.width))
		return
	}
	text = t.clean.Clean(text)
	if text == "" {
		return
	}
	t.startStream()
	before := t.streamCount()
	start := t.stream.Len()
	t.stream.WriteString(text)
	if t.md != nil {
		if t.streamWidth == t.width {
			t.sc.feed(t.stream.String(), t.addBlock)
			t.renderTail()
		}
		t.keepAnchor(before, t.streamCount())
		return
	}
	if i := strings.LastIndexByte(text, '\n'); i >= 0 {
		end := start + i + 1 // the reply up to here is whole paragraphs
		if t.streamWidth == t.width {
			s := t.stream.String()
			t.stable = t.st.renderText(t.stable, session.Assistant, s[t.stableEnd:end-1], t.width, t.stableEnd == 0)
		}
		t.stableEnd = end
	}
	if t.streamWidth == t.width {
		t.renderTail()
	}
	t.keepAnchor(before, t.streamCount())
}

func (t *transcript) endStream() {
	if !t.streaming {
		return
	}
	before := t.streamCount()
	t.streaming = false
	t.clean = termtext.Stream{} // an unfinished escape sequence goes with the reply
	if t.rd != nil {
		t.rd.clean = termtext.Stream{}
	}
	t.stream.Reset()
	t.streamToks, t.tokN = nil, -1
	t.stableEnd = 0
	t.stable, t.tail = t.stable[:0], t.tail[:0]
	t.keepAnchor(before, 0)
}

// keepAnchor moves the scroll offset by the change in lines below the view
// so a user who scrolled up keeps reading the same text.
func (t *transcript) keepAnchor(before, after int) {
	if t.offset > 0 {
		t.offset = max(0, t.offset+after-before)
	}
}

func sameMsg(a, b session.Message) bool {
	return a.Role == b.Role && a.Content == b.Content && a.Dropped == b.Dropped && len(a.Tokens) == len(b.Tokens)
}

// setMessages replaces the finished messages, reusing the rendering of every
// message that did not change.
func (t *transcript) setMessages(msgs []session.Message) {
	if t.raw {
		k := len(t.rd.paras)
		before := t.rd.countFrom(k, t.width)
		t.rd.setMessages(msgs, t.streaming)
		if k <= len(t.rd.paras) {
			t.keepAnchor(before, t.rd.countFrom(k, t.width))
		}
		return
	}
	if t.sel >= 0 { // an edit is over when the messages change
		t.invalidate(t.sel)
		t.sel = -1
	}
	k := 0
	for k < len(msgs) && k < len(t.msgs) && sameMsg(msgs[k], t.msgs[k].msg) {
		k++
	}
	if k == len(msgs) && k == len(t.msgs) {
		t.markCut()
		return
	}
	before := 0
	if t.offset > 0 {
		before = t.countFrom(k)
	}
	type key struct {
		role    session.Role
		content string
		tokens  int
	}
	var reuse map[key]entry
	if k < len(t.msgs) && k < len(msgs) {
		// Something older changed (turns dropped to fit the context, an
		// edit): keep the renderings we can still use.
		reuse = make(map[key]entry, len(t.msgs)-k)
		for _, e := range t.msgs[k:] {
			reuse[key{e.msg.Role, e.msg.Content, len(e.msg.Tokens)}] = e
		}
	}
	next := make([]entry, k, len(msgs))
	copy(next, t.msgs[:k])
	for _, m := range msgs[k:] {
		if e, ok := reuse[key{m.Role, m.Content, len(m.Tokens)}]; ok && e.msg.Dropped == m.Dropped {
			e.msg = m
			next = append(next, e)
			continue
		}
		next = append(next, entry{msg: m})
	}
	t.msgs = next
	t.markCut()
	t.cached = 0
	for i := range next {
		t.cached += len(next[i].lines)
	}
	if t.offset > 0 {
		t.keepAnchor(before, t.countFrom(k))
	}
}

// markCut marks the last dropped message (see entry.cut).
func (t *transcript) markCut() {
	for i := range t.msgs {
		e := &t.msgs[i]
		cut := e.msg.Dropped && (i+1 == len(t.msgs) || !t.msgs[i+1].msg.Dropped)
		if cut != e.cut {
			e.cut = cut
			t.invalidate(i)
		}
	}
}

// addMessage appends one finished message.
func (t *transcript) addMessage(m session.Message) {
	if t.raw {
		t.setMessages(append(slices.Clone(t.rd.committed), m))
		return
	}
	before := t.countFrom(len(t.msgs))
	t.msgs = append(t.msgs, entry{msg: m})
	t.keepAnchor(before, t.countFrom(len(t.msgs)-1))
}

// countFrom is the number of lines from message k to the bottom, separators
// and the streaming reply included.
func (t *transcript) countFrom(k int) int {
	n := 0
	for i := k; i < len(t.msgs); i++ {
		n += t.entryCount(i)
		if i > 0 {
			n++
		}
	}
	return n + t.streamCount()
}

// block is a run of transcript lines: given, or those of message entry,
// fetched only when shown (counting lines needs only the count).
type block struct {
	n     int
	lines []string
	entry int // index in msgs, or -1 when lines are given
}

func given(l []string) block { return block{n: len(l), lines: l, entry: -1} }

func (t *transcript) blockLines(b block) []string {
	if b.entry >= 0 {
		return t.entryLines(b.entry)
	}
	return b.lines
}

// walkUp calls fn with blocks of lines from the bottom of the transcript up
// until fn returns false.
func (t *transcript) walkUp(fn func(b block) bool) {
	if t.raw {
		t.rd.walkUp(t.width, func(l []string) bool { return fn(given(l)) })
		return
	}
	if t.streaming {
		st, tl := t.streamLines()
		if !fn(given(tl)) || !fn(given(st)) {
			return
		}
		if len(t.msgs) > 0 && !fn(given(t.blank[:])) {
			return
		}
	}
	for i := len(t.msgs) - 1; i >= 0; i-- {
		if !fn(block{n: t.entryCount(i), entry: i}) {
			return
		}
		if i > 0 && !fn(given(t.blank[:])) {
			return
		}
	}
}

// countUp counts lines from the bottom, stopping once limit is reached.
func (t *transcript) countUp(limit int) int {
	n := 0
	t.walkUp(func(b block) bool {
		n += b.n
		return n < limit
	})
	return n
}

// scroll moves the view up (delta > 0) or down by delta lines for a view of
// the given height; reaching the bottom turns follow mode back on.
func (t *transcript) scroll(delta, height int) {
	height = max(1, height)
	if delta < 0 {
		t.offset = max(0, t.offset+delta)
		return
	}
	want := t.offset + delta
	total := t.countUp(want + height)
	t.offset = max(0, min(want, total-height))
}

func (t *transcript) toTop(height int) {
	t.offset = max(0, t.countUp(int(^uint(0)>>1))-max(1, height))
}

func (t *transcript) toBottom() { t.offset = 0 }

// window returns the lines to show in a view of the given height: the last
// ones when following, otherwise the ones offset lines above the bottom. A
// transcript shorter than the view is returned whole (top-aligned). Every
// line is exactly the transcript's width.
func (t *transcript) window(height int) []string {
	if height <= 0 {
		return nil
	}
	t.frame++
	defer t.evict()
	need := t.offset + height
	var blocks []block
	n := 0
	t.walkUp(func(b block) bool {
		if b.n > 0 {
			blocks = append(blocks, b)
			n += b.n
		}
		return n < need
	})
	if n < need {
		t.offset = max(0, n-height) // clamp: the top was reached
	}
	// Lines [lo, hi) counted from the top of the collected blocks.
	hi := n - t.offset
	lo := max(0, hi-height)
	out := make([]string, 0, hi-lo)
	pos := 0
	for i := len(blocks) - 1; i >= 0 && pos < hi; i-- {
		end := pos + blocks[i].n
		if end > lo {
			b := t.blockLines(blocks[i])
			out = append(out, b[max(0, lo-pos):min(len(b), hi-pos)]...)
		}
		pos = end
	}
	return out
}

package ui

import (
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	"chat/session/termtext"

	"charm.land/glamour/v2"
	gansi "charm.land/glamour/v2/ansi"
	gstyles "charm.land/glamour/v2/styles"
	"charm.land/lipgloss/v2"
	"github.com/alecthomas/chroma/v2"
	"github.com/alecthomas/chroma/v2/lexers"
	chstyles "github.com/alecthomas/chroma/v2/styles"
	"github.com/charmbracelet/x/ansi"
)

// Markdown in replies. A reply is cut into top-level blocks (paragraphs,
// headings, list items, fenced code, tables, quotes) at lines that can only
// start a new block; each block is rendered on its own and the results are
// stacked. A finished reply and the same reply while it streams are cut the
// same way, so they look the same, and a streaming reply renders each block
// once, when the next one starts: per poll only the open (last) block is
// rendered again.
//
// Paragraph-like blocks go through glamour; fenced code is drawn here, one
// source line per screen line (long lines hard-wrapped, never reflowed), so
// what the terminal shows is the code's exact text and can be selected and
// copied as it is.

// mdBlock is one top-level block of markdown source.
type mdBlock struct {
	src     string // the block's markdown; for code, the code lines without the fences
	code    bool
	lang    string
	item    bool // a list item
	blank   bool // a blank line came before it
	heading bool
	cont    bool // a paragraph line right after another: no space between them
	closed  bool // fenced code whose closing fence came (it is highlighted)
}

// Paragraph lines are blocks of their own, stacked without space: replies
// are shown with their line breaks kept (what small models mean by them),
// and a long paragraph then costs one line per poll, not the whole
// paragraph. Tables and list items stay whole.

const (
	openNone = iota
	openItem
	openTable
)

// mdScanner cuts markdown into blocks as it arrives. feed scans the complete
// lines it has not seen and emits the blocks they finish; open is the block
// still being written.
type mdScanner struct {
	pos       int // start of the first line not yet scanned
	start     int // start of the open item or table
	kind      int // openNone, openItem, openTable
	openBlank bool
	blank     bool // a blank line since the last block
	lastPara  bool // the last block was a paragraph line
	fence     string
	lang      string
	codeStart int
}

func newMDScanner() mdScanner { return mdScanner{} }

func (sc *mdScanner) emitOpen(s string, end int, emit func(mdBlock)) {
	if sc.kind == openNone {
		return
	}
	src := strings.TrimRight(s[sc.start:end], "\n")
	emit(mdBlock{src: src, item: sc.kind == openItem, blank: sc.openBlank})
	sc.kind, sc.lastPara = openNone, false
}

func isTableLine(line string) bool { return strings.HasPrefix(strings.TrimSpace(line), "|") }

// feed scans the complete lines of s from where it stopped.
func (sc *mdScanner) feed(s string, emit func(mdBlock)) {
	for {
		nl := strings.IndexByte(s[sc.pos:], '\n')
		if nl < 0 {
			return
		}
		ls, le := sc.pos, sc.pos+nl
		sc.pos = le + 1
		line := s[ls:le]
		if sc.fence != "" {
			if isFenceClose(line, sc.fence) {
				emit(mdBlock{src: strings.TrimSuffix(s[sc.codeStart:ls], "\n"), code: true, lang: sc.lang, blank: sc.openBlank, closed: true})
				sc.fence, sc.lastPara = "", false
			}
			continue
		}
		switch {
		case strings.TrimSpace(line) == "":
			sc.emitOpen(s, ls, emit)
			sc.blank, sc.lastPara = true, false
		case fenceOpen(line) != "":
			sc.emitOpen(s, ls, emit)
			sc.fence = fenceOpen(line)
			sc.lang = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), sc.fence[:1]))
			sc.codeStart = sc.pos
			sc.openBlank, sc.blank = sc.blank, false
		case isHeading(line):
			sc.emitOpen(s, ls, emit)
			emit(mdBlock{src: line, heading: true, blank: sc.blank})
			sc.blank, sc.lastPara = false, false
		case isItem(line):
			sc.emitOpen(s, ls, emit)
			sc.start, sc.kind = ls, openItem
			sc.openBlank, sc.blank = sc.blank, false
		case (sc.kind == openItem && (indentOf(line) > 0 || !isTableLine(line))) || (sc.kind == openTable && isTableLine(line)):
			// the open item or table goes on
		case isTableLine(line):
			sc.emitOpen(s, ls, emit)
			sc.start, sc.kind = ls, openTable
			sc.openBlank, sc.blank = sc.blank, false
		default:
			sc.emitOpen(s, ls, emit)
			emit(mdBlock{src: line, blank: sc.blank, cont: sc.lastPara && !sc.blank})
			sc.blank, sc.lastPara = false, true
		}
	}
}

// open is the block still being written (complete lines not yet closed
// off, and the partial last line), if any.
func (sc *mdScanner) open(s string) (mdBlock, bool) {
	switch {
	case sc.fence != "":
		return mdBlock{src: strings.TrimSuffix(s[min(sc.codeStart, len(s)):], "\n"), code: true, lang: sc.lang, blank: sc.openBlank}, true
	case sc.kind != openNone:
		return mdBlock{src: strings.TrimRight(s[sc.start:], "\n"), item: sc.kind == openItem, blank: sc.openBlank}, true
	case sc.pos < len(s) && strings.TrimSpace(s[sc.pos:]) != "":
		rest := s[sc.pos:]
		b := mdBlock{src: rest, item: isItem(rest), heading: isHeading(rest), blank: sc.blank}
		b.cont = !b.item && !b.heading && sc.lastPara && !sc.blank
		return b, true
	}
	return mdBlock{}, false
}

// splitMarkdown cuts finished text into its blocks.
func splitMarkdown(s string) []mdBlock {
	var out []mdBlock
	sc := newMDScanner()
	if !strings.HasSuffix(s, "\n") {
		s += "\n"
	}
	sc.feed(s, func(b mdBlock) { out = append(out, b) })
	if b, ok := sc.open(s); ok {
		out = append(out, b)
	}
	return out
}

func indentOf(line string) int {
	n := 0
	for n < len(line) && line[n] == ' ' {
		n++
	}
	return n
}

// fenceOpen returns the fence a line opens ("```", "~~~~", ...) or "".
func fenceOpen(line string) string {
	if indentOf(line) > 3 {
		return ""
	}
	t := strings.TrimLeft(line, " ")
	for _, c := range []byte{'`', '~'} {
		n := 0
		for n < len(t) && t[n] == c {
			n++
		}
		if n >= 3 {
			if c == '`' && strings.IndexByte(t[n:], '`') >= 0 {
				return "" // inline code, not a fence
			}
			return t[:n]
		}
	}
	return ""
}

func isFenceClose(line, fence string) bool {
	if indentOf(line) > 3 {
		return false
	}
	t := strings.TrimSpace(line)
	return len(t) >= len(fence) && strings.Trim(t, fence[:1]) == ""
}

func isHeading(line string) bool {
	if indentOf(line) > 3 {
		return false
	}
	t := strings.TrimLeft(line, " ")
	n := 0
	for n < len(t) && t[n] == '#' {
		n++
	}
	return n >= 1 && n <= 6 && (n == len(t) || t[n] == ' ')
}

// isItem: a list item at the top level ("- ", "* ", "+ ", "1. ", "1) ").
func isItem(line string) bool {
	if indentOf(line) > 1 {
		return false
	}
	t := strings.TrimLeft(line, " ")
	if len(t) >= 2 && (t[0] == '-' || t[0] == '*' || t[0] == '+') && t[1] == ' ' {
		return !(t[0] != '+' && strings.Trim(strings.ReplaceAll(t, " ", ""), t[:1]) == "" && len(strings.ReplaceAll(t, " ", "")) >= 3) // "* * *" is a rule
	}
	n := 0
	for n < len(t) && n < 9 && t[n] >= '0' && t[n] <= '9' {
		n++
	}
	return n > 0 && n+1 < len(t) && (t[n] == '.' || t[n] == ')') && t[n+1] == ' '
}

// mdRenderer renders blocks for one look (dark, light or plain) and keeps a
// glamour renderer per wrap width.
type mdRenderer struct {
	st     *styles
	config gansi.StyleConfig
	byW    map[int]*glamour.TermRenderer
	chroma *chroma.Style
	toks   map[chroma.TokenType]look
}

func newMDRenderer(st *styles) *mdRenderer {
	var c gansi.StyleConfig
	switch {
	case st.plain:
		c = gstyles.ASCIIStyleConfig
	case st.light:
		c = gstyles.LightStyleConfig
	default:
		c = gstyles.DarkStyleConfig
	}
	// The transcript owns margins, blank lines between blocks and the text
	// colour (the terminal's own).
	c.Document.Margin = nil
	c.Document.BlockPrefix, c.Document.BlockSuffix = "", ""
	c.Document.Color, c.Document.BackgroundColor = nil, nil
	cs := chstyles.Get("monokai")
	if st.light {
		cs = chstyles.Get("github")
	}
	return &mdRenderer{st: st, config: c, byW: map[int]*glamour.TermRenderer{}, chroma: cs, toks: map[chroma.TokenType]look{}}
}

func (r *mdRenderer) renderer(w int) *glamour.TermRenderer {
	if tr, ok := r.byW[w]; ok {
		return tr
	}
	if len(r.byW) >= 4 { // a resize storm must not grow this
		clear(r.byW)
	}
	tr, err := glamour.NewTermRenderer(glamour.WithStyles(r.config), glamour.WithWordWrap(w))
	if err != nil {
		return nil
	}
	r.byW[w] = tr
	return tr
}

// minMarkdownWidth: below it replies are wrapped as plain text.
const minMarkdownWidth = 12

// render appends the lines of a whole reply (already sanitised) at width.
func (r *mdRenderer) render(dst []string, text string, width int) []string {
	var prev *mdBlock
	for _, b := range splitMarkdown(text) {
		dst = r.appendBlock(dst, prev, b, width)
		prev = &b
	}
	return dst
}

// appendBlock appends block b (after prev, nil for the first) to dst: a blank
// line between blocks except between list items written without one.
func (r *mdRenderer) appendBlock(dst []string, prev *mdBlock, b mdBlock, width int) []string {
	if prev != nil && !b.cont && !(prev.item && b.item && !b.blank) {
		dst = append(dst, strings.Repeat(" ", width))
	}
	return r.block(dst, b, width)
}

// appendPlain is appendBlock with the block as plain wrapped text.
func (r *mdRenderer) appendPlain(dst []string, prev *mdBlock, b mdBlock, width int) []string {
	if prev != nil && !b.cont && !(prev.item && b.item && !b.blank) {
		dst = append(dst, strings.Repeat(" ", width))
	}
	return r.st.renderText(dst, "assistant", b.src, width, false)
}

// mdTailLimit: an open block longer than this (bytes) streams as plain text
// until it is finished; glamour costs about 1 µs a byte.
const mdTailLimit = 1500

const mdIndent = "  " // the assistant's marker and indent

// block renders one block, each line exactly width cells.
func (r *mdRenderer) block(dst []string, b mdBlock, width int) []string {
	cw := width - len(mdIndent)
	if b.code {
		var hl []string
		if b.closed {
			hl = r.highlight(b.src, b.lang)
		}
		for i, l := range strings.Split(b.src, "\n") {
			w := ansi.StringWidth(l)
			if w > cw && cw > 0 {
				for p := range strings.SplitSeq(ansi.Hardwrap(l, cw, true), "\n") {
					dst = append(dst, padTo(mdIndent+r.st.r(r.st.code, p), len(mdIndent)+ansi.StringWidth(p), width))
				}
				continue
			}
			painted := r.st.r(r.st.code, l)
			if hl != nil {
				painted = hl[i]
			}
			dst = append(dst, padTo(mdIndent+painted, len(mdIndent)+w, width))
		}
		return dst
	}
	tr := r.renderer(cw)
	if cw < minMarkdownWidth || tr == nil {
		return r.st.renderText(dst, "assistant", b.src, width, false)
	}
	src, restore := protectRefs(b.src)
	out, err := tr.Render(src)
	if err != nil {
		return r.st.renderText(dst, "assistant", b.src, width, false)
	}
	out = restore(stripHyperlinks(out))
	if r.st.plain {
		out = ansi.Strip(out)
	}
	lines := strings.Split(out, "\n")
	// Glamour pads lines and adds blank lines around blocks: the transcript
	// spaces blocks itself.
	lo, hi := 0, len(lines)
	for lo < hi && strings.TrimSpace(ansi.Strip(lines[lo])) == "" {
		lo++
	}
	for hi > lo && strings.TrimSpace(ansi.Strip(lines[hi-1])) == "" {
		hi--
	}
	for _, l := range lines[lo:hi] {
		l = strings.TrimRight(l, " ")
		w := ansi.StringWidth(l)
		if w > cw {
			for p := range strings.SplitSeq(ansi.Hardwrap(l, cw, true), "\n") {
				dst = append(dst, padTo(mdIndent+p, len(mdIndent)+ansi.StringWidth(p), width))
			}
			continue
		}
		dst = append(dst, padTo(mdIndent+l, len(mdIndent)+w, width))
	}
	return dst
}

// highlight colours code of a known language, one self-contained line per
// source line (every line opens and closes its own styles, so any window of
// lines shows right); nil when it cannot, or when the colours would change
// a single character of the text.
func (r *mdRenderer) highlight(code, lang string) []string {
	if r.st.plain || lang == "" || r.chroma == nil {
		return nil
	}
	lang, _, _ = strings.Cut(lang, " ")
	lx := lexers.Get(lang)
	if lx == nil {
		return nil
	}
	it, err := chroma.Coalesce(lx).Tokenise(nil, code)
	if err != nil {
		return nil
	}
	want := strings.Split(code, "\n")
	lines := make([]string, 0, len(want)+1)
	var b strings.Builder
	for tok := it(); tok != chroma.EOF; tok = it() {
		l := r.tokLook(tok.Type)
		for i, piece := range strings.Split(tok.Value, "\n") {
			if i > 0 {
				lines = append(lines, b.String())
				b.Reset()
			}
			if piece != "" {
				b.WriteString(l.pre + piece + l.post)
			}
		}
	}
	lines = append(lines, b.String())
	if len(lines) > len(want) && strings.TrimSpace(ansi.Strip(strings.Join(lines[len(want):], ""))) == "" {
		lines = lines[:len(want)] // the lexer's own final newline
	}
	if len(lines) != len(want) {
		return nil
	}
	for i := range lines {
		if ansi.Strip(lines[i]) != want[i] {
			return nil
		}
	}
	return lines
}

func (r *mdRenderer) tokLook(tt chroma.TokenType) look {
	if l, ok := r.toks[tt]; ok {
		return l
	}
	e := r.chroma.Get(tt)
	st := lipgloss.NewStyle()
	if e.Colour.IsSet() {
		st = st.Foreground(lipgloss.Color(e.Colour.String()))
	}
	if e.Bold == chroma.Yes {
		st = st.Bold(true)
	}
	if e.Italic == chroma.Yes {
		st = st.Italic(true)
	}
	if e.Underline == chroma.Yes {
		st = st.Underline(true)
	}
	l := newLook(st)
	r.toks[tt] = l
	return l
}

// numericRef matches a numeric character reference as glamour reads one:
// &#27; &#x1b;, also without the semicolon (&#27, as HTML reads it).
var numericRef = regexp.MustCompile(`&#(?:[0-9]+|[xX][0-9a-fA-F]+);?`)

// refMark is the first of the private-use characters protectRefs puts in
// place of references (Supplementary Private Use Area-A).
const refMark = 0xF0000

// protectRefs replaces the numeric character references in s that name a
// character termtext would not let through (ESC, BEL, C1 controls, bidi
// overrides) by private-use characters, and returns what puts them back,
// as text, into the rendered lines: glamour decodes &#27; into an ESC, so a
// reply could write escape sequences through it (&#27;[2J cleared the
// screen). Such a reference then shows as it was written, also in a code
// span. Should s hold those private-use characters itself, the references
// become U+FFFD.
func protectRefs(s string) (string, func(string) string) {
	none := func(s string) string { return s }
	if !strings.Contains(s, "&#") {
		return s, none
	}
	own := strings.ContainsFunc(s, func(r rune) bool { return r >= refMark && r <= refMark+0xFFFD })
	var pairs []string
	s = numericRef.ReplaceAllStringFunc(s, func(ref string) string {
		digits, base := strings.TrimSuffix(ref[2:], ";"), 10
		if digits[0]|0x20 == 'x' {
			digits, base = digits[1:], 16
		}
		n, err := strconv.ParseInt(digits, base, 32)
		if err == nil && n > 0 && n <= utf8.MaxRune && termtext.Safe(string(rune(n)), true) {
			return ref // a safe character (a larger number wraps around in glamour: &#4294967323; was an ESC)
		}
		if own || len(pairs)/2 > 0xFFFD {
			return "\uFFFD"
		}
		mark := string(rune(refMark + len(pairs)/2))
		pairs = append(pairs, mark, ref)
		return mark
	})
	if pairs == nil {
		return s, none
	}
	return s, strings.NewReplacer(pairs...).Replace
}

// stripHyperlinks drops OSC 8 hyperlink sequences (the link text and the
// URL stay as text): not every terminal or multiplexer handles them.
func stripHyperlinks(s string) string {
	for {
		i := strings.Index(s, "\x1b]8;")
		if i < 0 {
			return s
		}
		j := i + 4
		end := -1
		for k := j; k < len(s); k++ {
			if s[k] == '\a' {
				end = k + 1
				break
			}
			if s[k] == '\x1b' && k+1 < len(s) && s[k+1] == '\\' {
				end = k + 2
				break
			}
		}
		if end < 0 {
			return s[:i]
		}
		s = s[:i] + s[end:]
	}
}

// lastCodeBlock returns the last fenced code block of text, exactly as
// written between its fences.
func lastCodeBlock(text string) (string, bool) {
	var code string
	found := false
	for _, b := range splitMarkdown(strings.ReplaceAll(text, "\r\n", "\n")) {
		if b.code {
			code, found = b.src, true
		}
	}
	return code, found
}

package gpt2bpe

import (
	"fmt"
	"sort"
	"strings"
	"unicode"

	"chat/models/quote"
)

// Pre-tokenizers split text into words before BPE runs on each word.
// llama.cpp lists them as regular expressions per tokenizer.ggml.pre
// (llm_tokenizer_bpe in src/llama-vocab.cpp) and runs the GPT-2 and Llama-3
// ones as hand-written scanners (unicode_regex_split_custom_* in
// src/unicode.cpp); the rest go through std::regex. Go's regexp has no
// look-ahead, so every expression used here is a small scanner with the
// same leftmost-greedy result. Each step splits every current piece into
// its matches and the text between them.

type span struct{ start, end int }

// step splits the pieces of cpts.
type step func(cpts []rune, pieces []span) []span

// preTokenizers maps tokenizer.ggml.pre values to their steps.
var preTokenizers = map[string][]step{}

func init() {
	gpt2 := []step{splitGPT2}
	llama3 := []step{splitLlama3(3, false)}
	qwen2 := []step{splitLlama3(1, false)}
	for _, n := range []string{"gpt-2", "phi-2", "jina-es", "jina-de", "gigachat", "jina-v2-es", "jina-v2-de",
		"a.x-4.0", "mellum", "modern-bert", "exaone4", "mpt", "olmo", "jais", "trillion", "granite-docling",
		"jina-v1-en", "jina-v2-code", "roberta-bpe"} {
		preTokenizers[n] = gpt2
	}
	for _, n := range []string{"llama3", "llama-v3", "llama-bpe", "falcon3", "falcon-h1", "pixtral", "midm-2.0",
		"lfm2", "jina-v5-nano", "dbrx", "smaug-bpe", "glm4", "chatglm-bpe"} {
		preTokenizers[n] = llama3
	}
	for _, n := range []string{"qwen2", "deepseek-r1-qwen", "kormo", "f2llmv2", "stablelm2", "megrez", "hunyuan", "solar-open",
		"grok-2"} {
		preTokenizers[n] = qwen2
	}
	// Qwen3.5 lets combining marks join words: [\p{L}\p{M}]+ and
	// [^\s\p{L}\p{M}\p{N}]+ (std::regex in llama.cpp).
	preTokenizers["qwen35"] = []step{splitLlama3(1, true)}
	// "\p{N}" then the GPT-2 expression.
	for _, n := range []string{"starcoder", "refact", "command-r", "smollm", "codeshell", "exaone", "minerva-7b", "mellum2"} {
		preTokenizers[n] = []step{regexRun(false, isNumberC, true), splitGPT2}
	}
	preTokenizers["falcon"] = []step{
		regexRun(false, func(r rune) bool { return isPunctC(r) || isASCIISym(r, "$+<=>^~|`") }, false),
		splitGPT2,
		tripleDigits,
	}
	preTokenizers["default"] = []step{
		regexRun(false, func(r rune) bool { return isPunctC(r) || isASCIISym(r, "$+<=>^~|") }, false),
		splitGPT2,
		regexRun(false, isNumberC, false),
		tripleDigits,
	}
	cjk := func(r rune) bool {
		return (r >= 0x4E00 && r <= 0x9FA5) || (r >= 0x0800 && r <= 0x4E00) || (r >= 0xAC00 && r <= 0xD7FF)
	}
	// DeepSeek's classes contain non-ASCII characters, so llama.cpp runs
	// them with std::wregex on code points, after rewriting non-ASCII
	// whitespace to a vertical tab (which wideClass models).
	latin := wideClass(inRanges(deepseekLetters))
	punct := wideClass(parseClass("!-/:-~！-／：-～‘-‟　-。"))
	preTokenizers["deepseek-llm"] = []step{
		regexRun(false, func(r rune) bool { return r == '\r' || r == '\n' }, true),
		regexRun(true, latin, false),
		regexRun(true, punct, false),
		trailingSpace,
		regexRun(false, wideClass(cjk), false),
		regexRun(false, isNumberC, false),
	}
	preTokenizers["deepseek-coder"] = []step{
		regexRun(false, func(r rune) bool { return r == '\r' || r == '\n' }, true),
		regexRun(true, isLetterC, false),
		regexRun(true, isPunctC, false),
		regexRun(false, wideClass(cjk), false),
		regexRun(false, isNumberC, true),
	}
}

// deepseekLetters is the class of DeepSeek LLM's "\s?[A-Za-zµÀ-ÖØ-öø-ƺ...]+"
// as code point ranges: the cased letters (Lu, Ll, Lt). It is written out
// as numbers because the expression holds singletons such as U+212A KELVIN
// SIGN and U+1F7D that Unicode normalisation silently turns into K and
// U+03CE, which would make "K-ℭ" cover U+004B..U+212D.
var deepseekLetters = [][2]rune{
	{0x41, 0x5A}, {0x61, 0x7A}, {0xB5, 0xB5}, {0xC0, 0xD6}, {0xD8, 0xF6}, {0xF8, 0x1BA}, {0x1BC, 0x1BF},
	{0x1C4, 0x293}, {0x295, 0x2AF}, {0x370, 0x373}, {0x376, 0x377}, {0x37B, 0x37D}, {0x37F, 0x37F},
	{0x386, 0x386}, {0x388, 0x38A}, {0x38C, 0x38C}, {0x38E, 0x3A1}, {0x3A3, 0x3F5}, {0x3F7, 0x481},
	{0x48A, 0x52F}, {0x531, 0x556}, {0x10A0, 0x10C5}, {0x13A0, 0x13F5}, {0x13F8, 0x13FD},
	{0x1C90, 0x1CBA}, {0x1CBD, 0x1CBF}, {0x1D00, 0x1D2B}, {0x1D6B, 0x1D77}, {0x1D79, 0x1D9A},
	{0x1E00, 0x1F15}, {0x1F18, 0x1F1D}, {0x1F20, 0x1F45}, {0x1F48, 0x1F4D}, {0x1F50, 0x1F57},
	{0x1F59, 0x1F59}, {0x1F5B, 0x1F5B}, {0x1F5D, 0x1F5D}, {0x1F5F, 0x1F7D}, {0x1F80, 0x1FB4},
	{0x1FB6, 0x1FBC}, {0x1FBE, 0x1FBE}, {0x1FC2, 0x1FC4}, {0x1FC6, 0x1FCC}, {0x1FD0, 0x1FD3},
	{0x1FD6, 0x1FDB}, {0x1FE0, 0x1FEC}, {0x1FF2, 0x1FF4}, {0x1FF6, 0x1FFC}, {0x2102, 0x2102},
	{0x2107, 0x2107}, {0x210A, 0x2113}, {0x2115, 0x2115}, {0x2119, 0x211D}, {0x2124, 0x2124},
	{0x2126, 0x2126}, {0x2128, 0x2128}, {0x212A, 0x212D}, {0x212F, 0x2134}, {0x2139, 0x2139},
	{0x213C, 0x213F}, {0x2145, 0x2149}, {0x214E, 0x214E}, {0x2183, 0x2184}, {0x2C00, 0x2C7B},
	{0x2C7E, 0x2CE4}, {0x2CEB, 0x2CEE}, {0x2CF2, 0x2CF3}, {0xA640, 0xA66D}, {0xA680, 0xA69B},
	{0xA722, 0xA76F}, {0xA771, 0xA787}, {0xA78B, 0xA78E}, {0xAB70, 0xABBF}, {0xFB00, 0xFB06},
	{0xFB13, 0xFB17}, {0xFF21, 0xFF3A}, {0xFF41, 0xFF5A}, {0x10400, 0x1044F}, {0x104B0, 0x104D3},
	{0x104D8, 0x104FB}, {0x10C80, 0x10CB2}, {0x10CC0, 0x10CF2}, {0x118A0, 0x118DF}, {0x1E900, 0x1E943},
}

func inRanges(rs [][2]rune) func(rune) bool {
	return func(r rune) bool {
		for _, x := range rs {
			if r >= x[0] && r <= x[1] {
				return true
			}
		}
		return false
	}
}

// pretokenizer returns the steps for a tokenizer.ggml.pre value ("" means
// llama.cpp's default).
func pretokenizer(pre string) ([]step, error) {
	if pre == "" {
		pre = "default"
	}
	s, ok := preTokenizers[pre]
	if !ok {
		return nil, fmt.Errorf("gpt2bpe: pre-tokenizer %s (tokenizer.ggml.pre) is not supported; supported: %s", quote.Quote(pre), supportedPre())
	}
	return s, nil
}

// supportedPre lists the tokenizer.ggml.pre values known here.
func supportedPre() string {
	names := make([]string, 0, len(preTokenizers))
	for n := range preTokenizers {
		names = append(names, n)
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

func pretokenize(steps []step, cpts []rune) []span {
	pieces := []span{{0, len(cpts)}}
	for _, st := range steps {
		pieces = st(cpts, pieces)
	}
	return pieces
}

// Character classes as llama.cpp's std::regex fallback sees them: ASCII
// characters as themselves, other code points collapsed to their Unicode
// category, non-ASCII whitespace to a vertical tab.

func isSpaceC(r rune) bool {
	if r < 128 {
		return r == ' ' || (r >= '\t' && r <= '\r')
	}
	return unicode.IsSpace(r)
}

func isLetterC(r rune) bool {
	if r < 128 {
		return (r >= 'A' && r <= 'Z') || (r >= 'a' && r <= 'z')
	}
	return !unicode.IsSpace(r) && unicode.IsLetter(r)
}

func isNumberC(r rune) bool {
	if r < 128 {
		return r >= '0' && r <= '9'
	}
	return !unicode.IsSpace(r) && unicode.IsNumber(r)
}

// isPunctC is \p{P}; its ASCII part is llama.cpp's list !-#%-*,-/:-;?-@[-]_{}.
func isPunctC(r rune) bool {
	if r < 128 {
		switch {
		case r >= '!' && r <= '#', r >= '%' && r <= '*', r >= ',' && r <= '/', r == ':' || r == ';',
			r == '?' || r == '@', r >= '[' && r <= ']', r == '_', r == '{', r == '}':
			return true
		}
		return false
	}
	return !unicode.IsSpace(r) && unicode.IsPunct(r)
}

func isASCIISym(r rune, set string) bool {
	for _, c := range set {
		if r == c {
			return true
		}
	}
	return false
}

// splitter runs match at each position of each piece, leftmost first; a
// match (length > 0) becomes a piece, and so does the text between matches.
func splitter(match func(c []rune, pos, end int) int) step {
	return func(c []rune, pieces []span) []span {
		var out []span
		for _, p := range pieces {
			gap := p.start
			for pos := p.start; pos < p.end; {
				n := match(c, pos, p.end)
				if n == 0 {
					pos++
					continue
				}
				if pos > gap {
					out = append(out, span{gap, pos})
				}
				out = append(out, span{pos, pos + n})
				pos += n
				gap = pos
			}
			if gap < p.end {
				out = append(out, span{gap, p.end})
			}
		}
		return out
	}
}

// regexRun is `\s?[class]+` (optWS), `[class]+`, or `[class]` (single).
func regexRun(optWS bool, class func(rune) bool, single bool) step {
	return splitter(func(c []rune, pos, end int) int {
		start := pos
		if optWS && isSpaceC(c[pos]) && pos+1 < end && class(c[pos+1]) {
			pos++
		}
		if !class(c[pos]) {
			return 0
		}
		if single {
			return pos + 1 - start
		}
		for pos < end && class(c[pos]) {
			pos++
		}
		return pos - start
	})
}

// tripleDigits is `[0-9][0-9][0-9]`.
var tripleDigits = splitter(func(c []rune, pos, end int) int {
	if pos+3 <= end && isDigit(c[pos]) && isDigit(c[pos+1]) && isDigit(c[pos+2]) {
		return 3
	}
	return 0
})

func isDigit(r rune) bool { return r >= '0' && r <= '9' }

// flags are the code point properties the GPT-2 and Llama-3 scanners test;
// the zero value stands for a position outside the piece.
type flags struct{ in, letter, number, space, mark bool }

func flagsOf(c []rune, pos int, p span) flags {
	if pos < p.start || pos >= p.end {
		return flags{}
	}
	r := c[pos]
	return flags{in: true, letter: unicode.IsLetter(r), number: unicode.IsNumber(r), space: unicode.IsSpace(r),
		mark: r >= 0x300 && unicode.IsMark(r)}
}

const outOfRange = -1

func runeAt(c []rune, pos int, p span) rune {
	if pos < p.start || pos >= p.end {
		return outOfRange
	}
	return c[pos]
}

// scanner walks one piece, emitting spans up to given ends.
type scanner struct {
	out  []span
	prev int
}

func (s *scanner) emit(end int) {
	if end > s.prev {
		s.out = append(s.out, span{s.prev, end})
	}
	s.prev = end
}

// contraction matches 's 't 'm 'd 're 've 'll at pos, lower-casing the
// letters when fold is set; it returns the length or 0.
func contraction(c []rune, pos int, p span, fold bool) int {
	if c[pos] != '\'' || pos+1 >= p.end {
		return 0
	}
	lower := func(r rune) rune {
		if fold {
			return unicode.ToLower(r)
		}
		return r
	}
	a := lower(runeAt(c, pos+1, p))
	if a == 's' || a == 't' || a == 'm' || a == 'd' {
		return 2
	}
	if pos+2 < p.end {
		b := lower(runeAt(c, pos+2, p))
		if (a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l') {
			return 3
		}
	}
	return 0
}

// whitespace handles the tail shared by both scanners: \s+(?!\S) | \s+,
// and with newlines (Llama-3) \s*[\r\n]+ first.
func whitespace(c []rune, pos int, p span, s *scanner, newlines bool) int {
	n, lastNL := 0, 0
	for flagsOf(c, pos+n, p).space {
		if r := c[pos+n]; newlines && (r == '\r' || r == '\n') {
			lastNL = pos + n + 1
		}
		n++
	}
	switch {
	case lastNL > 0:
		pos = lastNL
	case n > 1 && runeAt(c, pos+n, p) != outOfRange:
		pos += n - 1 // leave the last space to prefix the next word
	case n > 0:
		pos += n
	default:
		pos++ // no match: the character stands alone
	}
	s.emit(pos)
	return pos
}

// splitGPT2 is 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// (unicode_regex_split_custom_gpt2).
func splitGPT2(c []rune, pieces []span) []span {
	var out []span
	for _, p := range pieces {
		s := &scanner{prev: p.start}
		for pos := p.start; pos < p.end; {
			if n := contraction(c, pos, p, false); n > 0 {
				pos += n
				s.emit(pos)
				continue
			}
			f := flagsOf(c, pos, p)
			f2 := f
			if c[pos] == ' ' {
				f2 = flagsOf(c, pos+1, p)
			}
			other := func(f flags) bool { return f.in && !f.space && !f.letter && !f.number }
			var same func(flags) bool
			switch {
			case f2.letter:
				same = func(f flags) bool { return f.letter }
			case f2.number:
				same = func(f flags) bool { return f.number }
			case other(f2):
				same = other
			}
			if same != nil {
				if c[pos] == ' ' {
					pos++
				}
				for same(flagsOf(c, pos, p)) {
					pos++
				}
				s.emit(pos)
				continue
			}
			pos = whitespace(c, pos, p, s, false)
		}
		out = append(out, s.out...)
	}
	return out
}

// splitLlama3 is (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,k}|
// ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ (unicode_regex_split_custom_llama3
// for k = 3; Qwen2's expression has \p{N} alone, k = 1). With marks, \p{M}
// counts as a letter in \p{L}+ and is excluded from [^\s\p{L}\p{N}] (Qwen3.5).
func splitLlama3(k int, marks bool) step {
	word := func(f flags) bool { return f.letter || marks && f.mark }
	return func(c []rune, pieces []span) []span {
		var out []span
		for _, p := range pieces {
			s := &scanner{prev: p.start}
			for pos := p.start; pos < p.end; {
				if n := contraction(c, pos, p, true); n > 0 {
					pos += n
					s.emit(pos)
					continue
				}
				r, f := c[pos], flagsOf(c, pos, p)
				if r != '\r' && r != '\n' && !f.number && (word(f) || word(flagsOf(c, pos+1, p))) {
					pos++
					for word(flagsOf(c, pos, p)) {
						pos++
					}
					s.emit(pos)
					continue
				}
				if f.number {
					ini := pos
					for flagsOf(c, pos, p).number {
						pos++
						if pos-ini >= k {
							s.emit(pos)
							ini = pos
						}
					}
					s.emit(pos)
					continue
				}
				f2 := f
				if r == ' ' {
					f2 = flagsOf(c, pos+1, p)
				}
				if f.in && !f2.space && !word(f2) && !f2.number {
					if r == ' ' {
						pos++
					}
					for f2.in && !f2.space && !word(f2) && !f2.number {
						pos++
						f2 = flagsOf(c, pos, p)
					}
					for r2 := runeAt(c, pos, p); r2 == '\r' || r2 == '\n'; r2 = runeAt(c, pos, p) {
						pos++
					}
					s.emit(pos)
					continue
				}
				pos = whitespace(c, pos, p, s, true)
			}
			out = append(out, s.out...)
		}
		return out
	}
}

// parseClass reads the inside of a bracket expression made of single
// characters and ranges a-b.
func parseClass(s string) func(rune) bool {
	var lo, hi []rune
	rs := []rune(s)
	for i := 0; i < len(rs); i++ {
		a, b := rs[i], rs[i]
		if i+2 < len(rs) && rs[i+1] == '-' {
			b = rs[i+2]
			i += 2
		}
		lo, hi = append(lo, a), append(hi, b)
	}
	return func(r rune) bool {
		for i := range lo {
			if r >= lo[i] && r <= hi[i] {
				return true
			}
		}
		return false
	}
}

// wideClass tests a class the way std::wregex sees the text in llama.cpp:
// non-ASCII whitespace has been replaced by a vertical tab.
func wideClass(class func(rune) bool) func(rune) bool {
	return func(r rune) bool {
		if r >= 128 && unicode.IsSpace(r) {
			r = '\v'
		}
		return class(r)
	}
}

// trailingSpace is `\s+$`: the whitespace that runs to the end of a piece.
var trailingSpace = splitter(func(c []rune, pos, end int) int {
	for i := pos; i < end; i++ {
		if !isSpaceC(c[i]) {
			return 0
		}
	}
	return end - pos
})

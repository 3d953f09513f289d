package gpt2bpe

import (
	"strings"
	"unicode"
)

// The pre-tokenizers below are the rest of llm_tokenizer_bpe's list in
// src/llama-vocab.cpp (source 80fb11ac, the llama.cpp node-llama-cpp
// 3.21.1 bundles), with the flags llama_vocab::impl::load sets for them
// (gpt2bpe.go). Most
// of their expressions have no hand-written scanner in src/unicode.cpp, so
// llama.cpp runs them through std::regex on the collapsed text (non-ASCII
// code points replaced by one byte per Unicode category, non-ASCII
// whitespace by \v). There \p{Lu}, \p{Ll}, \p{Lt}, \p{Lm} and \p{Lo} all
// become the one letter byte, and a look-ahead such as (?=[\p{L}])[^a-z]
// sees every non-ASCII letter as both upper and lower case: "ÉCOLE" splits
// into "É" and "COLE", unlike Python. std::regex (ECMAScript) takes the
// first alternative that matches at the leftmost position, not the longest;
// alternatives() below does the same, each matcher resolving its own
// backtracking.
//
// Left out: gemma4, granite-embed-multi-311m, sarvam-moe and whitespace
// run BPE on raw UTF-8 rather than GPT-2's byte alphabet (byte_encode
// false; the first three also rewrite spaces to U+2581), machinery this
// byte-level tokenizer does not have.

func init() {
	lead := func(r rune) bool { return r != '\r' && r != '\n' && !isLetterC(r) && !isNumberC(r) }
	other := func(r rune) bool { return !isSpaceC(r) && !isLetterC(r) && !isNumberC(r) }
	letterMark := func(r rune) bool { return isLetterC(r) || isMarkC(r) }
	whitespace := []matcher{mNewlines, mSpacesNotBeforeText, mRun(isSpaceC, 0)}

	// Tekken (Mistral NeMo, Ministral, Mistral Small 3):
	// [^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))*((?=[\p{L}])([^A-Z]))+|
	// [^\r\n\p{L}\p{N}]?((?=[\p{L}])([^a-z]))+((?=[\p{L}])([^A-Z]))*|
	// \p{N}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
	lowerAfterUpper, upperThenLower := casedWord(isLetterC, false)
	preTokenizers["tekken"] = []step{alternatives(append([]matcher{
		leadThen(lead, lowerAfterUpper), leadThen(lead, upperThenLower),
		mRun(isNumberC, 1), mSpaceThen(other, "\r\n/", 0)}, whitespace...)...)}

	// GPT-4o (o200k) and MiniMax-M2: Tekken's words with an optional
	// contraction, and \p{N}{1,3}.
	lowerAfterUpper, upperThenLower = casedWord(isLetterC, true)
	gpt4o := []step{alternatives(append([]matcher{
		leadThen(lead, lowerAfterUpper), leadThen(lead, upperThenLower),
		mRun(isNumberC, 3), mSpaceThen(other, "\r\n/", 0)}, whitespace...)...)}
	for _, n := range []string{"gpt-4o", "llama4", "kanana2", "talkie", "minimax-m2"} {
		preTokenizers[n] = gpt4o
	}
	// granite-embed-multi-97m: the same with (?=[\p{L}\p{M}]).
	lowerAfterUpper, upperThenLower = casedWord(letterMark, true)
	preTokenizers["granite-embed-multi-97m"] = []step{alternatives(append([]matcher{
		leadThen(lead, lowerAfterUpper), leadThen(lead, upperThenLower),
		mRun(isNumberC, 3), mSpaceThen(other, "\r\n/", 0)}, whitespace...)...)}

	// Tiny Aya: digits grouped by three from the right (the AFMoE scanner),
	// then [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(contraction)?|...
	// whose collapsed classes are both [\p{L}\p{M}].
	word := withContraction(mRun(letterMark, 0))
	tinyAya := []step{afmoeDigits, alternatives(append([]matcher{
		leadThen(lead, word), mRun(isNumberC, 3), mSpaceThen(other, "\r\n/", 0)}, whitespace...)...)}
	preTokenizers["tiny_aya"] = tinyAya
	preTokenizers["cohere2moe"] = tinyAya
	// Youtu: runs of Hangul, CJK punctuation, Bopomofo or CJK/kana first,
	// then Tiny Aya's expression with \p{N}.
	preTokenizers["youtu"] = []step{
		classRuns(
			inRanges([][2]rune{{0xAC00, 0xD7A3}, {0x3131, 0x318E}}),
			inRanges([][2]rune{{0xFF01, 0xFF01}, {0x2026, 0x2026}, {0x201C, 0x201D}, {0x2018, 0x2019}, {0x2014, 0x2014},
				{0xFF1A, 0xFF1B}, {0xFF0C, 0xFF0C}, {0x3001, 0x303F}, {0xFE30, 0xFE4F}}),
			inRanges([][2]rune{{0x3105, 0x312F}}),
			inRanges(cjkKana),
		),
		alternatives(append([]matcher{leadThen(lead, word), mRun(isNumberC, 1), mSpaceThen(other, "\r\n/", 0)},
			whitespace...)...),
	}

	// DeepSeek V3 (also Hunyuan dense, JoyAI): \p{N}{1,3}, [一-龥぀-ゟ゠-ヿ]+, then
	// [!-/:-@\[-`{-~][A-Za-z]+|[^\r\n\p{L}\p{P}\p{S}]?[\p{L}\p{M}]+| ?[\p{P}\p{S}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
	punctSym := func(r rune) bool { return isPunctC(r) || isSymbolC(r) }
	dsLead := func(r rune) bool { return r != '\r' && r != '\n' && !isLetterC(r) && !punctSym(r) }
	dsMain := alternatives(append([]matcher{
		asciiPunctWord, leadThen(dsLead, mRun(letterMark, 0)), mSpaceThen(punctSym, "\r\n", 0)}, whitespace...)...)
	deepseekV3 := []step{alternatives(mRun(isNumberC, 3)), regexRun(false, wideClass(inRanges(cjkKana)), false), dsMain}
	for _, n := range []string{"deepseek-v3", "hunyuan-dense", "joyai-llm"} {
		preTokenizers[n] = deepseekV3
	}
	// AFMoE: its digit scanner, a class of CJK and South-East Asian scripts
	// (the source's "豈" is U+8C48 after normalisation, so the range starts
	// there), then DeepSeek V3's main expression.
	preTokenizers["afmoe"] = []step{afmoeDigits, regexRun(false, wideClass(inRanges([][2]rune{
		{0x4E00, 0x9FFF}, {0x3400, 0x4DBF}, {0x8C48, 0xFAFF}, {0x3040, 0x309F}, {0x30A0, 0x30FF}, {0xFF65, 0xFF9F},
		{0x2F00, 0x2FDF}, {0x0E40, 0x0E7F}, {0x0E80, 0x0EFF}, {0x1780, 0x17FF}, {0x1000, 0x109F}, {0xAA60, 0xAA7F},
		{0xA9E0, 0xA9FF}, {0xAC00, 0xD7AF}, {0x1100, 0x11FF}})), false), dsMain}

	// Kimi K2: its own scanner in unicode.cpp.
	preTokenizers["kimi-k2"] = []step{splitKimiK2}

	// Bailing MoE: '(?:[sSdDmMtT]|[lL][lL]|[vV][eE]|[rR][eE])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}|
	// ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]|\s+(?!\S)|\s+ — through std::regex, but
	// it splits as Qwen2's scanner: \s*[\r\n] also ends at the last newline.
	for _, n := range []string{"bailingmoe", "bailingmoe2", "llada-moe"} {
		preTokenizers[n] = []step{splitLlama3(1, false)}
	}
	// Seed-Coder: Qwen2's expression, but punctuation takes no newlines:
	// ?[^\s\p{L}\p{N}\r\n]+.
	preTokenizers["seed-coder"] = []step{alternatives(append([]matcher{mContraction, leadThen(lead, mRun(isLetterC, 0)),
		mRun(isNumberC, 1), mSpaceThen(other, "", 0)}, whitespace...)...)}
	// EXAONE MoE: words run on over single spaces,
	// [^\r\n\p{L}\p{N}]?(?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+, punctuation takes at
	// most one of [\r\n/], and \s*[\r\n] (which ends at the last newline).
	preTokenizers["exaone-moe"] = []step{alternatives(append([]matcher{mContraction, leadThen(lead, exaoneWords),
		mRun(isNumberC, 1), mSpaceThen(other, "\r\n/", 1)}, whitespace...)...)}
	// Jais 2: Llama 3's expression with whitespace cut into runs of
	// 512, 256, ..., 4, then 2 or 1 (\s{512}(?!\S)|...|\s{1,2}(?!\S)|\s{1}).
	jais2 := []matcher{mContraction, leadThen(lead, mRun(isLetterC, 0)), mRun(isNumberC, 3),
		mSpaceThen(other, "\r\n", 0), mNewlines}
	for _, k := range []int{512, 256, 128, 64, 32, 16, 8, 4, 2, 1} {
		jais2 = append(jais2, mSpacesExact(k))
	}
	preTokenizers["jais-2"] = []step{alternatives(append(jais2, mRun(isSpaceC, 1))...)}
	// MiniCPM5: \p{N}{1,3} first, then Llama 3's expression with \p{N}+
	// (digits are alone in their pieces by then).
	preTokenizers["minicpm5"] = []step{alternatives(mRun(isNumberC, 3)), splitLlama3(3, false)}
	// Laguna: lines and runs of newlines ([^\n]+|[\n]+), then Qwen2's.
	preTokenizers["laguna"] = []step{splitNewlines, splitLlama3(1, false)}

	// BLOOM, GPT-3 Finnish, Poro: " ?[^(\s|.,!?…。，、।۔،)]+" (std::wregex);
	// Viking adds \p{N}.
	notStop := wideClass(func(r rune) bool { return !isSpaceC(r) && !strings.ContainsRune("(|.,!?…。，、।۔،)", r) })
	bloom := []step{alternatives(mSpaceThen(notStop, "", 0))}
	for _, n := range []string{"bloom", "gpt3-finnish", "poro-chat"} {
		preTokenizers[n] = bloom
	}
	preTokenizers["viking"] = []step{bloom[0], regexRun(false, isNumberC, true)}

	// Chameleon: <sentinel:[0-9]+>, (IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z,
	// ([\t\n]|    |  ), \p{N}, [\p{P}!-/:-@\[-`{-~], then GPT-2's expression.
	preTokenizers["chameleon"] = []step{
		alternatives(sentinel), alternatives(imageToken), alternatives(chameleonSpace),
		regexRun(false, isNumberC, true),
		regexRun(false, func(r rune) bool {
			return isPunctC(r) || r < 128 && unicode.IsPunct(r) || r < 128 && unicode.IsSymbol(r)
		}, true),
		splitGPT2,
	}

	// SuperBPE: \p{N}+, then (?=(\d{3})+(?!\d)): digits split in threes
	// from the right.
	preTokenizers["superbpe"] = []step{regexRun(false, isNumberC, false), thousands}
}

// cjkKana is [一-龥぀-ゟ゠-ヿ]: CJK ideographs to U+9FA5, hiragana, katakana.
var cjkKana = [][2]rune{{0x4E00, 0x9FA5}, {0x3040, 0x309F}, {0x30A0, 0x30FF}}

// isMarkC is \p{M} in the collapsed text (no ASCII marks).
func isMarkC(r rune) bool { return r >= 128 && !unicode.IsSpace(r) && unicode.IsMark(r) }

// isSymbolC is \p{S}; its ASCII part is llama.cpp's list $+<=>^`|~.
func isSymbolC(r rune) bool {
	if r < 128 {
		return isASCIISym(r, "$+<=>^`|~")
	}
	return !unicode.IsSpace(r) && unicode.IsSymbol(r)
}

// matcher is one alternative of an expression: the length of its match at
// pos in c[:end], 0 for none.
type matcher func(c []rune, pos, end int) int

// alternatives splits by an expression made of alternatives tried in order
// at each position; text no alternative matches stays between the matches.
func alternatives(ms ...matcher) step {
	return splitter(func(c []rune, pos, end int) int {
		for _, m := range ms {
			if n := m(c, pos, end); n > 0 {
				return n
			}
		}
		return 0
	})
}

// runLen is the length of the run of class at pos.
func runLen(c []rune, pos, end int, class func(rune) bool) int {
	return runMax(c, pos, end, class, end-pos)
}

// runMax is runLen, but at most max: matchers that take a bounded run
// look no further, which keeps long runs linear.
func runMax(c []rune, pos, end int, class func(rune) bool, max int) int {
	n := 0
	for n < max && pos+n < end && class(c[pos+n]) {
		n++
	}
	return n
}

// mRun is [class]+, or [class]{1,max} when max > 0.
func mRun(class func(rune) bool, max int) matcher {
	return func(c []rune, pos, end int) int {
		if max > 0 {
			return runMax(c, pos, end, class, max)
		}
		return runLen(c, pos, end, class)
	}
}

// leadThen is [lead]?word: the optional character is taken when word
// matches after it, else word is tried at pos.
func leadThen(lead func(rune) bool, word matcher) matcher {
	return func(c []rune, pos, end int) int {
		if lead(c[pos]) && pos+1 < end {
			if n := word(c, pos+1, end); n > 0 {
				return n + 1
			}
		}
		return word(c, pos, end)
	}
}

// mSpaceThen is " ?[class]+" followed by [tail]* (max 0) or up to max
// characters of tail.
func mSpaceThen(class func(rune) bool, tail string, max int) matcher {
	return func(c []rune, pos, end int) int {
		start := pos
		if c[pos] == ' ' && pos+1 < end && class(c[pos+1]) {
			pos++
		}
		n := runLen(c, pos, end, class)
		if n == 0 {
			return 0
		}
		pos += n
		for k := 0; pos < end && strings.ContainsRune(tail, c[pos]) && (max == 0 || k < max); k++ {
			pos++
		}
		return pos - start
	}
}

// mContraction is (?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD]).
func mContraction(c []rune, pos, end int) int {
	if c[pos] != '\'' || pos+1 >= end {
		return 0
	}
	low := func(r rune) rune {
		if r >= 'A' && r <= 'Z' {
			return r + 'a' - 'A'
		}
		return r
	}
	switch a := low(c[pos+1]); {
	case a == 's' || a == 't' || a == 'm' || a == 'd':
		return 2
	case pos+2 < end:
		b := low(c[pos+2])
		if (a == 'r' || a == 'v') && b == 'e' || a == 'l' && b == 'l' {
			return 3
		}
	}
	return 0
}

// withContraction adds an optional contraction to word's match.
func withContraction(word matcher) matcher {
	return func(c []rune, pos, end int) int {
		n := word(c, pos, end)
		if n > 0 && pos+n < end {
			n += mContraction(c, pos+n, end)
		}
		return n
	}
}

// casedWord gives ((?=[letter])([^a-z]))*((?=[letter])([^A-Z]))+ and
// ((?=[letter])([^a-z]))+((?=[letter])([^A-Z]))*, each with an optional
// contraction when contr is set. Non-ASCII letters are in both classes.
func casedWord(letter func(rune) bool, contr bool) (lowerAfterUpper, upperThenLower matcher) {
	upper := func(r rune) bool { return letter(r) && (r < 'a' || r > 'z') }
	lower := func(r rune) bool { return letter(r) && (r < 'A' || r > 'Z') }
	lowerAfterUpper = func(c []rune, pos, end int) int {
		// The upper run gives back characters until a lower one follows.
		for k := runLen(c, pos, end, upper); k >= 0; k-- {
			if pos+k < end && lower(c[pos+k]) {
				return k + runLen(c, pos+k, end, lower)
			}
		}
		return 0
	}
	upperThenLower = func(c []rune, pos, end int) int {
		k := runLen(c, pos, end, upper)
		if k == 0 {
			return 0
		}
		return k + runLen(c, pos+k, end, lower)
	}
	if contr {
		return withContraction(lowerAfterUpper), withContraction(upperThenLower)
	}
	return lowerAfterUpper, upperThenLower
}

// mNewlines is \s*[\r\n]+ (and \s*[\r\n]): up to the last newline of the
// whitespace at pos.
func mNewlines(c []rune, pos, end int) int {
	n := 0
	for i := pos; i < end && isSpaceC(c[i]); i++ {
		if c[i] == '\r' || c[i] == '\n' {
			n = i + 1 - pos
		}
	}
	return n
}

// mSpacesNotBeforeText is \s+(?!\S): all the whitespace at the end of the
// piece, else all but the last.
func mSpacesNotBeforeText(c []rune, pos, end int) int {
	n := runLen(c, pos, end, isSpaceC)
	if pos+n == end || n == 0 {
		return n
	}
	return n - 1
}

// mSpacesExact is \s{k}(?!\S).
func mSpacesExact(k int) matcher {
	return func(c []rune, pos, end int) int {
		n := runMax(c, pos, end, isSpaceC, k+1)
		if n > k || n == k && pos+n == end {
			return k
		}
		return 0
	}
}

// asciiPunctWord is [!-/:-@\[-`{-~][A-Za-z]+.
func asciiPunctWord(c []rune, pos, end int) int {
	r := c[pos]
	if r >= 128 || !(unicode.IsPunct(r) || unicode.IsSymbol(r)) {
		return 0
	}
	n := runLen(c, pos+1, end, func(r rune) bool { return r >= 'A' && r <= 'Z' || r >= 'a' && r <= 'z' })
	if n == 0 {
		return 0
	}
	return n + 1
}

// exaoneWords is (?:\p{L}\p{M}*(?: \p{L}\p{M}*)*)+: letters with their
// marks, run on over single spaces before a letter.
func exaoneWords(c []rune, pos, end int) int {
	i := pos
	for {
		switch {
		case i < end && isLetterC(c[i]):
			i++
		case i == pos:
			return 0
		case i+1 < end && c[i] == ' ' && isLetterC(c[i+1]):
			i += 2
		default:
			return i - pos
		}
		i += runLen(c, i, end, isMarkC)
	}
}

// classRuns is [a]+|[b]+|...: the run of the first class the character at
// pos is in.
func classRuns(classes ...func(rune) bool) step {
	ms := make([]matcher, len(classes))
	for i, cl := range classes {
		ms[i] = mRun(wideClass(cl), 0)
	}
	return alternatives(ms...)
}

// sentinel is <sentinel:[0-9]+>.
func sentinel(c []rune, pos, end int) int {
	const pre = "<sentinel:"
	i := pos
	for _, r := range pre {
		if i >= end || c[i] != r {
			return 0
		}
		i++
	}
	n := runLen(c, i, end, isDigit)
	if n == 0 || i+n >= end || c[i+n] != '>' {
		return 0
	}
	return i + n + 1 - pos
}

// imageToken is (IMGIMG)((A|B|C|D|E|F|G|H|I){1,4})Z.
func imageToken(c []rune, pos, end int) int {
	i := pos
	for _, r := range "IMGIMG" {
		if i >= end || c[i] != r {
			return 0
		}
		i++
	}
	n := runLen(c, i, end, func(r rune) bool { return r >= 'A' && r <= 'I' })
	if n == 0 || n > 4 || i+n >= end || c[i+n] != 'Z' {
		return 0
	}
	return i + n + 1 - pos
}

// chameleonSpace is ([\t\n]|    |  ).
func chameleonSpace(c []rune, pos, end int) int {
	if c[pos] == '\t' || c[pos] == '\n' {
		return 1
	}
	n := runMax(c, pos, end, func(r rune) bool { return r == ' ' }, 4)
	switch {
	case n >= 4:
		return 4
	case n >= 2:
		return 2
	}
	return 0
}

// thousands is (?=(\d{3})+(?!\d)) (std::wregex, so \d is 0-9): an empty
// match, hence a cut, before every run of ASCII digits whose length is a
// multiple of three and that runs to a non-digit or the piece's end.
func thousands(c []rune, pieces []span) []span {
	var out []span
	var cuts []int
	for _, p := range pieces {
		// From the right, run is the length of the digit run at pos.
		cuts = cuts[:0]
		run := 0
		for pos := p.end - 1; pos > p.start; pos-- {
			if run++; !isDigit(c[pos]) {
				run = 0
			}
			if run >= 3 && run%3 == 0 {
				cuts = append(cuts, pos)
			}
		}
		prev := p.start
		for i := len(cuts) - 1; i >= 0; i-- {
			out = append(out, span{prev, cuts[i]})
			prev = cuts[i]
		}
		out = append(out, span{prev, p.end})
	}
	return out
}

// splitNewlines is [^\n]+|[\n]+ (unicode_regex_split_custom_newlines).
func splitNewlines(c []rune, pieces []span) []span {
	var out []span
	for _, p := range pieces {
		for pos := p.start; pos < p.end; {
			nl := c[pos] == '\n'
			n := runLen(c, pos, p.end, func(r rune) bool { return (r == '\n') == nl })
			out = append(out, span{pos, pos + n})
			pos += n
		}
	}
	return out
}

// afmoeDigits is unicode_regex_split_custom_afmoe, used for \p{AFMoE_digits}
// and Tiny Aya's \d{1,3}(?=(?:\d{3})*\b): each run of \p{N} splits into
// its first len%3 digits, then threes; the first of these pieces starts
// where the previous one ended, so it carries the text before the run.
func afmoeDigits(c []rune, pieces []span) []span {
	var out []span
	for _, p := range pieces {
		s := &scanner{prev: p.start}
		for pos := p.start; pos < p.end; {
			if !flagsOf(c, pos, p).number {
				pos++
				continue
			}
			n := 0
			for flagsOf(c, pos+n, p).number {
				n++
			}
			cur := pos
			if r := n % 3; r > 0 {
				cur += r
				s.emit(cur)
			}
			for cur < pos+n {
				cur += 3
				s.emit(cur)
			}
			pos += n
		}
		s.emit(p.end)
		out = append(out, s.out...)
	}
	return out
}

// isHan is unicode_cpt_is_han: the CJK ideograph blocks.
var isHan = inRanges([][2]rune{{0x4E00, 0x9FFF}, {0x3400, 0x4DBF}, {0x20000, 0x2A6DF}, {0x2A700, 0x2B73F},
	{0x2B740, 0x2B81F}, {0x2B820, 0x2CEAF}, {0x2CEB0, 0x2EBEF}, {0xF900, 0xFAFF}, {0x2F800, 0x2FA1F}})

// splitKimiK2 is unicode_regex_split_custom_kimi_k2: [\p{Han}]+, then
// Llama 3's expression with words of non-Han letters and an optional
// contraction after them.
func splitKimiK2(c []rune, pieces []span) []span {
	var out []span
	for _, p := range pieces {
		s := &scanner{prev: p.start}
		han := func(pos int) bool { return runeAt(c, pos, p) != outOfRange && isHan(c[pos]) }
		letter := func(pos int) bool { return flagsOf(c, pos, p).letter && !han(pos) }
		for pos := p.start; pos < p.end; {
			r, f := c[pos], flagsOf(c, pos, p)
			if han(pos) {
				for han(pos) {
					pos++
				}
				s.emit(pos)
				continue
			}
			leading := !(r == '\r' || r == '\n' || f.letter || f.number)
			if letter(pos) || leading && letter(pos+1) {
				if leading {
					pos++
				}
				for letter(pos) {
					pos++
				}
				if runeAt(c, pos, p) == '\'' && pos+1 < p.end {
					a := unicode.ToLower(c[pos+1])
					if a == 's' || a == 't' || a == 'm' || a == 'd' {
						pos += 2
					} else if pos+2 < p.end {
						b := unicode.ToLower(c[pos+2])
						if (a == 'r' || a == 'v') && b == 'e' || a == 'l' && b == 'l' {
							pos += 3
						}
					}
				}
				s.emit(pos)
				continue
			}
			if f.number {
				ini := pos
				for flagsOf(c, pos, p).number {
					pos++
					if pos-ini >= 3 {
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
			if f2.in && !f2.space && !f2.letter && !f2.number {
				if r == ' ' {
					pos++
				}
				for f2.in && !f2.space && !f2.letter && !f2.number {
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

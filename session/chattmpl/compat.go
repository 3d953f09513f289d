package chattmpl

import (
	"fmt"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/parser"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// Jinja constructs of Hugging Face chat templates that gonja lacks, added
// through its extension points.

// generationTag is transformers' {% generation %}...{% endgeneration %}
// (AssistantTracker): it marks the assistant's tokens for training masks
// and renders its body unchanged.
type generationTag struct {
	location *tokens.Token
	wrapper  *nodes.Wrapper
}

func (g *generationTag) Position() *tokens.Token { return g.location }
func (g *generationTag) String() string {
	return fmt.Sprintf("generation(Line=%d Col=%d)", g.location.Line, g.location.Col)
}

func (g *generationTag) Execute(r *exec.Renderer, _ *nodes.ControlStructureBlock) error {
	return r.ExecuteWrapper(g.wrapper)
}

func generationParser(p *parser.Parser, args *parser.Parser) (nodes.ControlStructure, error) {
	g := &generationTag{location: p.Current()}
	if !args.End() {
		return nil, args.Error("generation takes no arguments", nil)
	}
	wrapper, endargs, err := p.WrapUntil("endgeneration")
	if err != nil {
		return nil, err
	}
	if !endargs.End() {
		return nil, endargs.Error("Arguments not allowed here.", nil)
	}
	g.wrapper = wrapper
	return g, nil
}

// strMethodNames are gonja's str methods (its set cannot be listed).
var strMethodNames = strings.Fields(`capitalize capwords casefold center count encode endswith
	expandtabs find format format_map isalnum isalpha isascii isdecimal isdigit islower isnumeric
	isprintable isspace istitle isupper join ljust lower lstrip partition removeprefix removesuffix
	replace rfind rjust rpartition rsplit rstrip split splitlines startswith strip swapcase title
	upper zfill`)

// strMethods is gonja's str methods with Python's own replace, strip,
// lstrip, rstrip, split and rsplit: gonja makes replace's count required,
// fails lstrip(), rstrip() and split() without arguments (its default is the
// rune ' ', "32 is not a string"), and strips or splits on spaces only where
// Python takes any whitespace.
func strMethods(base *exec.MethodSet[string]) *exec.MethodSet[string] {
	m := map[string]exec.Method[string]{}
	for _, name := range strMethodNames {
		if f, ok := base.Get(name); ok {
			m[name] = f
		}
	}
	m["strip"] = stripMethod(true, true)
	m["lstrip"] = stripMethod(true, false)
	m["rstrip"] = stripMethod(false, true)
	m["split"] = splitMethod(false)
	m["rsplit"] = splitMethod(true)
	m["replace"] = func(self string, _ *exec.Value, p *exec.VarArgs) (any, error) {
		if len(p.Args) < 2 || len(p.Args) > 3 || !p.Args[0].IsString() || !p.Args[1].IsString() {
			return nil, exec.ErrInvalidCall(fmt.Errorf("replace expects (old, new[, count]) with strings"))
		}
		count := -1
		if len(p.Args) == 3 {
			if !p.Args[2].IsInteger() {
				return nil, exec.ErrInvalidCall(fmt.Errorf("replace count must be an integer"))
			}
			count = p.Args[2].Integer()
		}
		return strings.Replace(self, p.Args[0].String(), p.Args[1].String(), count), nil
	}
	return exec.NewMethodSet(m)
}

// condFunc is the conditional the rewrite below calls: __chattmpl_if(c, a,
// b). After parsing, guardTree moves a and b out of the call (the call keeps
// an index into jinjaTemplate.branches), so that only the branch taken is
// evaluated, as in Python.
const condFunc = "__chattmpl_if"

// condValue is condFunc for a template whose branches are given.
func condValue(branches [][2]nodes.Expression) func(*exec.Evaluator, *exec.VarArgs) (*exec.Value, error) {
	return func(e *exec.Evaluator, p *exec.VarArgs) (*exec.Value, error) {
		if len(p.Args) != 2 || !p.Args[1].IsInteger() || p.Args[1].Integer() < 0 || p.Args[1].Integer() >= len(branches) {
			return nil, fmt.Errorf("%s: bad call", condFunc)
		}
		b := branches[p.Args[1].Integer()]
		x := b[1]
		if p.Args[0].IsTrue() {
			x = b[0]
		}
		v := e.Eval(x)
		if v.IsError() {
			return nil, v.Interface().(error)
		}
		return v, nil
	}
}

// rewriteConditionals makes gonja run conditional expressions ("a if c else
// b") where it cannot: gonja parses them only as a whole {{ }} or {% set %}
// expression. In parentheses, as Gemma 3's template writes
//
//	'<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else "")
//
// it fails to parse; as a call's argument, as Kimi K3's writes
//
//	open_tag('think' if thinking else 'response')
//
// it silently parses as five arguments; in a tuple or list it does not
// parse; and it wants the else of {% set x = a if c %}, which gets "else
// none" (jinja2's undefined, which gonja does not tell from none). Each
// group "(a if c else b)" and element "a if c else b" becomes __chattmpl_if((c), (a), (b)), which
// keeps the grouping. Conditionals nested in such groups are rewritten
// first, one level per pass. It returns src unchanged when there is nothing
// to rewrite.
func rewriteConditionals(src string, cfg *config.Config) string {
	for pass := 0; pass < 8; pass++ {
		next := rewriteInnermost(src, cfg)
		if next == src {
			break
		}
		src = next
	}
	return src
}

func rewriteInnermost(src string, cfg *config.Config) string {
	// A conditional found: src[start:end] is "a if c else b", with "if"
	// at ifPos and "else" at elsePos (-1: none); paren: it is the inside
	// of a parenthesised group that src[start-1] and src[end] enclose.
	// insert: text to insert at start instead.
	type rewrite struct {
		start, end, ifPos, elsePos int
		paren                      bool
		insert                     string
	}
	// A group is a parenthesis or bracket; a call's arguments, a tuple's
	// or list's items and a subscript are its elements.
	type group struct {
		elements       bool // not a plain parenthesis (a call, tuple, list or subscript)
		nested         int  // braces opened inside
		colon          bool // the current element is a slice or dict item: left alone
		start          int  // of the current element or the group
		ifPos, elsePos int  // in the current element or the group
		inner          bool // the current element or group holds a conditional still to rewrite
	}
	var stack []group
	var rewrites []rewrite
	var prev *tokens.Token
	// A {% set x = a if c %} tag: gonja wants its else.
	var set struct {
		in, assign     bool
		ifPos, elsePos int
	}
	// closeElement ends the current element of the top group at end.
	closeElement := func(g *group, end int) {
		if g.ifPos >= 0 && !g.inner && !g.colon {
			rewrites = append(rewrites, rewrite{start: g.start, end: end, ifPos: g.ifPos, elsePos: g.elsePos})
		}
		if g.ifPos >= 0 && len(stack) > 1 {
			stack[len(stack)-2].inner = true
		}
	}
	stream := tokens.LexAll(src, cfg)
	for !stream.End() && !stream.IsError() {
		tok := stream.Next()
		if tok == nil || tok.Type == tokens.EOF || tok.Type == tokens.Error {
			break
		}
		top := len(stack) - 1
		switch tok.Type {
		case tokens.Whitespace:
			continue
		case tokens.VariableBegin, tokens.VariableEnd, tokens.BlockBegin, tokens.BlockEnd, tokens.Data:
			stack = stack[:0]
			if tok.Type == tokens.BlockEnd && set.in && set.assign && set.ifPos >= 0 && set.elsePos < 0 {
				rewrites = append(rewrites, rewrite{start: tok.Pos, insert: " else none "})
			}
			set.in = false
		case tokens.LeftParenthesis:
			call := prev != nil && (prev.Type == tokens.RightParenthesis || prev.Type == tokens.RightBracket ||
				prev.Type == tokens.Name && prev.Val != "if" && prev.Val != "else" && prev.Val != "and" &&
					prev.Val != "or" && prev.Val != "not" && prev.Val != "in" && prev.Val != "is")
			stack = append(stack, group{start: tok.Pos + 1, elements: call, ifPos: -1, elsePos: -1})
		case tokens.LeftBracket:
			stack = append(stack, group{start: tok.Pos + 1, elements: true, ifPos: -1, elsePos: -1})
		case tokens.LeftBrace:
			if top >= 0 {
				stack[top].nested++
			}
		case tokens.RightBrace:
			if top >= 0 && stack[top].nested > 0 {
				stack[top].nested--
			}
		case tokens.Comma:
			if top < 0 || stack[top].nested > 0 {
				break
			}
			g := &stack[top]
			g.elements = true
			closeElement(g, tok.Pos)
			g.start, g.ifPos, g.elsePos, g.inner, g.colon = tok.Pos+1, -1, -1, false, false
		case tokens.Colon:
			if top >= 0 && stack[top].nested == 0 {
				stack[top].colon = true
			}
		case tokens.Assign:
			if top < 0 && set.in {
				set.assign = true
			}
			if top >= 0 && stack[top].elements && stack[top].nested == 0 {
				stack[top].start = tok.Pos + 1 // a keyword argument's value
			}
		case tokens.Name:
			if prev != nil && prev.Type == tokens.BlockBegin && tok.Val == "set" {
				set.in, set.assign, set.ifPos, set.elsePos = true, false, -1, -1
			}
			if top < 0 && set.in && set.assign {
				if tok.Val == "if" && set.ifPos < 0 {
					set.ifPos = tok.Pos
				} else if tok.Val == "else" && set.ifPos >= 0 {
					set.elsePos = tok.Pos
				}
			}
			if top < 0 || stack[top].nested > 0 {
				break
			}
			g := &stack[top]
			if tok.Val == "if" && g.ifPos < 0 {
				g.ifPos = tok.Pos
			} else if tok.Val == "else" && g.ifPos >= 0 && g.elsePos < 0 {
				g.elsePos = tok.Pos
			}
		case tokens.RightParenthesis, tokens.RightBracket:
			if top < 0 {
				break
			}
			g := stack[top]
			switch {
			case g.elements:
				closeElement(&g, tok.Pos)
			case g.ifPos >= 0:
				if !g.inner {
					rewrites = append(rewrites, rewrite{start: g.start, end: tok.Pos, ifPos: g.ifPos, elsePos: g.elsePos, paren: true})
				}
				if top > 0 {
					stack[top-1].inner = true
				}
			}
			stack = stack[:top]
		}
		prev = tok
	}
	var b strings.Builder
	last := 0
	for _, r := range rewrites { // in source order, disjoint
		if r.insert != "" {
			if r.start < last || r.start > len(src) {
				return src
			}
			b.WriteString(src[last:r.start] + r.insert)
			last = r.start
			continue
		}
		open, end := r.start, r.end
		if r.paren {
			open, end = r.start-1, r.end+1
		}
		if open < last || r.end >= len(src) || r.paren && (src[open] != '(' || src[r.end] != ')') ||
			!strings.HasPrefix(src[r.ifPos:], "if") || r.elsePos >= 0 && !strings.HasPrefix(src[r.elsePos:], "else") {
			return src // positions are not byte offsets: leave the template alone
		}
		a, c, e := src[r.start:r.ifPos], src[r.ifPos+2:r.end], "none"
		if r.elsePos >= 0 {
			c, e = src[r.ifPos+2:r.elsePos], src[r.elsePos+4:r.end]
		}
		b.WriteString(src[last:open])
		b.WriteString(condFunc + "((" + c + "), (" + a + "), (" + e + "))")
		last = end
	}
	b.WriteString(src[last:])
	return b.String()
}

// pyArgs are a method call's arguments by position or keyword, with
// Python's defaults: a missing or None argument is nil.
func pyArgs(p *exec.VarArgs, names ...string) ([]*exec.Value, error) {
	if len(p.Args) > len(names) {
		return nil, exec.ErrInvalidCall(fmt.Errorf("takes at most %d arguments (%d given)", len(names), len(p.Args)))
	}
	out := make([]*exec.Value, len(names))
	copy(out, p.Args)
	for k, v := range p.KwArgs {
		i := slices.Index(names, k)
		if i < 0 || out[i] != nil {
			return nil, exec.ErrInvalidCall(fmt.Errorf("unexpected keyword argument %q", k))
		}
		out[i] = v
	}
	for i, v := range out {
		if v != nil && v.IsNil() {
			out[i] = nil
		}
	}
	return out, nil
}

// isPySpace is Python's str.isspace for one character: Go's unicode.IsSpace
// and the separators \x1c-\x1f.
func isPySpace(r rune) bool { return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f }

// stripMethod is str.strip (left, right), lstrip (left) or rstrip (right):
// whitespace by default, else any of the given characters.
func stripMethod(left, right bool) exec.Method[string] {
	return func(self string, _ *exec.Value, p *exec.VarArgs) (any, error) {
		a, err := pyArgs(p, "chars")
		if err != nil {
			return nil, err
		}
		cut := isPySpace
		if a[0] != nil {
			if !a[0].IsString() {
				return nil, exec.ErrInvalidCall(fmt.Errorf("strip arg must be None or str"))
			}
			chars := a[0].String()
			cut = func(r rune) bool { return strings.ContainsRune(chars, r) }
		}
		if left {
			self = strings.TrimLeftFunc(self, cut)
		}
		if right {
			self = strings.TrimRightFunc(self, cut)
		}
		return self, nil
	}
}

// splitMethod is str.split, or str.rsplit (from the right): on runs of
// whitespace without empty items by default, else on the separator; at most
// maxsplit splits when it is not negative.
func splitMethod(fromRight bool) exec.Method[string] {
	return func(self string, _ *exec.Value, p *exec.VarArgs) (any, error) {
		a, err := pyArgs(p, "sep", "maxsplit")
		if err != nil {
			return nil, err
		}
		limit := -1
		if a[1] != nil {
			if !a[1].IsInteger() {
				return nil, exec.ErrInvalidCall(fmt.Errorf("maxsplit must be an integer"))
			}
			limit = a[1].Integer()
		}
		if a[0] == nil {
			return splitSpace(self, limit, fromRight), nil
		}
		if !a[0].IsString() || a[0].String() == "" {
			return nil, exec.ErrInvalidCall(fmt.Errorf("separator must be a non-empty string"))
		}
		sep := a[0].String()
		if limit < 0 {
			return toAny(strings.Split(self, sep)), nil
		}
		if !fromRight {
			return toAny(strings.SplitN(self, sep, limit+1)), nil
		}
		var out []string
		for ; limit > 0; limit-- {
			i := strings.LastIndex(self, sep)
			if i < 0 {
				break
			}
			out = append(out, self[i+len(sep):])
			self = self[:i]
		}
		out = append(out, self)
		slices.Reverse(out)
		return toAny(out), nil
	}
}

// splitSpace is split() without a separator.
func splitSpace(s string, limit int, fromRight bool) []any {
	out := []any{}
	if fromRight {
		for limit != 0 {
			s = strings.TrimRightFunc(s, isPySpace)
			i := strings.LastIndexFunc(s, isPySpace)
			if i < 0 {
				break
			}
			_, n := utf8.DecodeRuneInString(s[i:])
			out = append(out, s[i+n:])
			s = s[:i]
			limit--
		}
		if s = strings.TrimRightFunc(s, isPySpace); s != "" {
			out = append(out, s)
		}
		slices.Reverse(out)
		return out
	}
	for limit != 0 {
		s = strings.TrimLeftFunc(s, isPySpace)
		i := strings.IndexFunc(s, isPySpace)
		if i < 0 {
			break
		}
		out = append(out, s[:i])
		s = s[i:]
		limit--
	}
	if s = strings.TrimLeftFunc(s, isPySpace); s != "" {
		out = append(out, s)
	}
	return out
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, x := range s {
		out[i] = x
	}
	return out
}

// itemFunc is the subscript x[k] after the rewrite in guard.go: gonja's
// misses x[-1] on a one-item list (it wants len > 1), indexes strings by
// byte, and cannot look up a non-string key in a dict literal
// ({16384: ...}[16384]). Other subscripts (a Go map's, an attribute's)
// go to gonja's own.
const itemFunc = "__chattmpl_item"

func itemValue(e *exec.Evaluator, p *exec.VarArgs) (*exec.Value, error) {
	if len(p.Args) != 2 {
		return nil, fmt.Errorf("%s takes two arguments", itemFunc)
	}
	obj, key := p.Args[0], p.Args[1]
	switch {
	case key.IsInteger() && obj.IsList():
		if i, ok := pyIndex(key.Integer(), obj.Len()); ok {
			return obj.Index(i), nil
		}
		return exec.AsValue(nil), nil
	case key.IsInteger() && obj.IsString():
		r := []rune(obj.String())
		if i, ok := pyIndex(key.Integer(), len(r)); ok {
			return exec.AsValue(string(r[i])), nil
		}
		return exec.AsValue(nil), nil
	case !key.IsNil() && obj.IsDict():
		if d, ok := obj.Interface().(*exec.Dict); ok { // a literal or a message
			for _, pair := range d.Pairs {
				if pair.Key.EqualValueTo(key) {
					return pair.Value, nil
				}
			}
			return exec.AsValue(nil), nil
		}
	}
	return evalIn(e, map[string]any{"o": obj.Interface(), "k": key.Interface()},
		&nodes.GetItem{Location: &tokens.Token{}, Node: nameNode("o"), Arg: nameNode("k")})
}

// pyIndex is Python's index i into n items (negative from the end).
func pyIndex(i, n int) (int, bool) {
	if i < 0 {
		i += n
	}
	return i, i >= 0 && i < n
}

func nameNode(s string) *nodes.Name {
	return &nodes.Name{Name: &tokens.Token{Type: tokens.Name, Val: s}}
}

// evalIn evaluates x with gonja's own semantics, the given values bound.
func evalIn(e *exec.Evaluator, vars map[string]any, x nodes.Expression) (*exec.Value, error) {
	ctx := e.Environment.Context.Inherit()
	for k, v := range vars {
		ctx.Set(k, v)
	}
	env := *e.Environment
	env.Context = ctx
	sub := &exec.Evaluator{Config: e.Config, Environment: &env, Loader: e.Loader}
	v := sub.Eval(x)
	if v.IsError() {
		return nil, v.Interface().(error)
	}
	return v, nil
}

// testFunc is "x is defined", "x is undefined" or "x is none" of a variable
// x after the rewrite in guard.go: __chattmpl_test(x, "x", "defined").
// gonja has one value for none and undefined; a variable set to none (as
// transformers sets tools and documents, or {% set x = none %}) is in the
// context, and is defined and none, as in Python, where one never set is
// undefined and not none.
const testFunc = "__chattmpl_test"

// nameTests are the tests testFunc takes over.
var nameTests = map[string]bool{"defined": true, "undefined": true, "none": true}

func testValue(e *exec.Evaluator, p *exec.VarArgs) (bool, error) {
	if len(p.Args) != 3 {
		return false, fmt.Errorf("%s takes three arguments", testFunc)
	}
	v, name, test := p.Args[0], p.Args[1].String(), p.Args[2].String()
	defined := !v.IsNil() || e.Environment.Context.Has(name)
	switch test {
	case "defined":
		return defined, nil
	case "undefined":
		return !defined, nil
	}
	return defined && v.IsNil(), nil
}

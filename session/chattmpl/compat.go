package chattmpl

import (
	"fmt"
	"strings"

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

// strMethods is gonja's str methods with replace fixed: gonja makes its
// count argument required, Python does not ("a".replace("\n", " ")).
func strMethods(base *exec.MethodSet[string]) *exec.MethodSet[string] {
	m := map[string]exec.Method[string]{}
	for _, name := range strMethodNames {
		if f, ok := base.Get(name); ok {
			m[name] = f
		}
	}
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

// condFunc is the conditional the rewrite below calls.
const condFunc = "__chattmpl_if"

func condValue(_ *exec.Evaluator, p *exec.VarArgs) (*exec.Value, error) {
	if len(p.Args) != 3 {
		return nil, fmt.Errorf("%s takes three arguments", condFunc)
	}
	if p.Args[0].IsTrue() {
		return p.Args[1], nil
	}
	return p.Args[2], nil
}

// rewriteParenConditionals makes gonja run a conditional expression inside
// parentheses, as Gemma 3's template writes:
//
//	'<start_of_turn>' + role + '\n' + (first_user_prefix if loop.first else "")
//
// gonja parses "a if c else b" only as a whole {{ }} or {% set %}
// expression; elsewhere it fails to parse. Each parenthesised group
// "(a if c else b)" becomes a call __chattmpl_if((c), (a), (b)), which keeps
// the grouping. Both branches are evaluated: an error in the branch not
// taken fails the render, which then falls back to the built-in format, so
// the result is never silently wrong. Groups nested in such groups are
// rewritten first, one level per pass. It returns src unchanged when there
// is nothing to rewrite.
func rewriteParenConditionals(src string, cfg *config.Config) string {
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
	type group struct {
		open           int
		call           bool // the parenthesis opens a call's arguments
		nested         int  // brackets and braces opened inside
		ifPos, elsePos int
		comma          bool // a tuple, not a conditional
		inner          bool // holds a group still to rewrite
	}
	type rewrite struct{ open, close, ifPos, elsePos int }
	var stack []group
	var rewrites []rewrite
	var prev *tokens.Token
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
		case tokens.LeftParenthesis:
			call := prev != nil && (prev.Type == tokens.RightParenthesis || prev.Type == tokens.RightBracket ||
				prev.Type == tokens.Name && prev.Val != "if" && prev.Val != "else")
			stack = append(stack, group{open: tok.Pos, call: call, ifPos: -1, elsePos: -1})
		case tokens.LeftBracket, tokens.LeftBrace:
			if top >= 0 {
				stack[top].nested++
			}
		case tokens.RightBracket, tokens.RightBrace:
			if top >= 0 && stack[top].nested > 0 {
				stack[top].nested--
			}
		case tokens.Comma:
			if top >= 0 && stack[top].nested == 0 {
				stack[top].comma = true
			}
		case tokens.Name:
			if top < 0 || stack[top].nested > 0 {
				break
			}
			g := &stack[top]
			if tok.Val == "if" && g.ifPos < 0 {
				g.ifPos = tok.Pos
			} else if tok.Val == "else" && g.ifPos >= 0 && g.elsePos < 0 {
				g.elsePos = tok.Pos
			}
		case tokens.RightParenthesis:
			if top < 0 {
				break
			}
			g := stack[top]
			stack = stack[:top]
			if g.ifPos < 0 || g.call || g.comma {
				break
			}
			if !g.inner {
				rewrites = append(rewrites, rewrite{g.open, tok.Pos, g.ifPos, g.elsePos})
			}
			if len(stack) > 0 {
				stack[len(stack)-1].inner = true
			}
		}
		prev = tok
	}
	var b strings.Builder
	last := 0
	for _, r := range rewrites { // in source order, disjoint
		if r.open < last || r.close >= len(src) || src[r.open] != '(' || src[r.close] != ')' ||
			!strings.HasPrefix(src[r.ifPos:], "if") || r.elsePos >= 0 && !strings.HasPrefix(src[r.elsePos:], "else") {
			return src // positions are not byte offsets: leave the template alone
		}
		a, c, e := src[r.open+1:r.ifPos], src[r.ifPos+2:r.close], "none"
		if r.elsePos >= 0 {
			c, e = src[r.ifPos+2:r.elsePos], src[r.elsePos+4:r.close]
		}
		b.WriteString(src[last:r.open])
		b.WriteString(condFunc + "((" + c + "), (" + a + "), (" + e + "))")
		last = r.close + 1
	}
	b.WriteString(src[last:])
	return b.String()
}

package chattmpl

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/tokens"
)

// A chat template comes from the model file, so it is treated as hostile:
// it is bounded before it is parsed (size, nesting: gonja's parser and
// evaluator recurse on the Go stack, and a stack overflow kills the process
// beyond any recover), and every render runs on a budget the renderer
// enforces itself (guard.go routes each operation through it), so a
// template that tries to build a huge string or loop without end stops
// with an error instead of exhausting memory or leaving a goroutine behind.
const (
	maxTemplateBytes = 128 << 10 // the largest real chat templates are about 20 KB
	maxNesting       = 64        // open ( [ { in one expression, and nested {% block %} tags
	maxTagTokens     = 1024      // tokens in one {{ }} or {% %} (gonja's errors quote each sub-expression: quadratic)
	maxValueDepth    = 64        // lists and dicts within each other in one value
)

// renderLimits is the budget of one render; the fuzz test shrinks it so
// that each input stays cheap.
var renderLimits = struct {
	steps        int           // template nodes, loop turns, operators, filter and method calls
	value, alloc int64         // one value's size, and all values and output built, in bytes, beyond the messages' text (×2, ×16)
	deadline     time.Duration // then the render stops itself
}{1 << 17, 16 << 20, 64 << 20, 2 * time.Second}

// checkSource refuses templates that are too large or too deeply nested to
// parse safely. It runs gonja's lexer (linear, no recursion) over src.
func checkSource(src string, cfg *config.Config) error {
	if len(src) > maxTemplateBytes {
		return fmt.Errorf("chattmpl: chat template of %d bytes is larger than the %d allowed", len(src), maxTemplateBytes)
	}
	stream := tokens.LexAll(src, cfg)
	depth, blocks, inTag := 0, 0, 0
	afterBlockBegin := false
	for !stream.End() {
		tok := stream.Next()
		if tok == nil || tok.Type == tokens.EOF {
			break
		}
		if tok.Type == tokens.Error {
			return nil // the parser reports it with its position
		}
		if tok.Type == tokens.Whitespace {
			continue
		}
		inTag++
		if inTag > maxTagTokens {
			return fmt.Errorf("chattmpl: chat template has a tag of more than %d tokens (line %d)", maxTagTokens, tok.Line)
		}
		switch tok.Type {
		case tokens.LeftParenthesis, tokens.LeftBracket, tokens.LeftBrace:
			depth++
			if depth > maxNesting {
				return fmt.Errorf("chattmpl: chat template nests brackets more than %d deep (line %d)", maxNesting, tok.Line)
			}
		case tokens.RightParenthesis, tokens.RightBracket, tokens.RightBrace:
			depth = max(depth-1, 0)
		case tokens.VariableBegin, tokens.VariableEnd, tokens.BlockBegin, tokens.BlockEnd, tokens.Data:
			depth, inTag = 0, 0
		case tokens.Name:
			if strings.HasPrefix(tok.Val, guardName) {
				return fmt.Errorf("chattmpl: chat template uses the reserved name %s (line %d)", tok.Val, tok.Line)
			}
			if afterBlockBegin {
				switch {
				case refusedTags[tok.Val]:
					return fmt.Errorf("chattmpl: chat template uses {%% %s %%} (line %d); chat templates may not load other templates", tok.Val, tok.Line)
				case blockTags[tok.Val]:
					blocks++
					if blocks > maxNesting {
						return fmt.Errorf("chattmpl: chat template nests {%% %s %%} blocks more than %d deep (line %d)", tok.Val, maxNesting, tok.Line)
					}
				case strings.HasPrefix(tok.Val, "end"):
					blocks = max(blocks-1, 0)
				}
			}
		}
		afterBlockBegin = tok.Type == tokens.BlockBegin
	}
	return nil
}

// blockTags open a body that an {% end... %} tag closes. ("set" only does
// in its block form; counting every set over-counts, which is harmless at
// this bound.)
var blockTags = map[string]bool{"if": true, "for": true, "macro": true, "call": true, "filter": true,
	"with": true, "block": true, "autoescape": true, "trans": true, "generation": true}

// refusedTags would read other templates (the template's own name among
// them, which recurses).
var refusedTags = map[string]bool{"extends": true, "include": true, "import": true, "from": true}

// budget is what one render may still spend. A template's renders are
// serialised (jinjaTemplate.mu), so one budget per template is reset at the
// start of each.
type budget struct {
	steps     int
	alloc     int64 // bytes still to build
	maxValue  int64 // the largest value (by weight) an operation may return
	deadline  time.Time
	rangeLeft int // range() items still allowed
	err       error
}

func (b *budget) reset(content int) {
	l := renderLimits
	*b = budget{
		steps:     l.steps,
		alloc:     l.alloc + 16*int64(content),
		maxValue:  l.value + 2*int64(content),
		deadline:  time.Now().Add(l.deadline),
		rangeLeft: maxRangeItems,
	}
}

// step charges one operation; it fails once the steps or the time are used
// up. The first failure sticks, so a template that catches an error value
// and goes on still stops.
func (b *budget) step() error {
	if b.err != nil {
		return b.err
	}
	b.steps--
	if b.steps < 0 {
		b.err = fmt.Errorf("chattmpl: chat template takes more than %d steps", renderLimits.steps)
	} else if b.steps%64 == 0 && time.Now().After(b.deadline) {
		b.err = errTimeout
	}
	return b.err
}

// spend charges n bytes about to be built.
func (b *budget) spend(n int64) error {
	if err := b.step(); err != nil {
		return err
	}
	b.alloc -= n
	if b.alloc < 0 {
		b.err = errors.New("chattmpl: chat template builds more data than allowed")
	}
	return b.err
}

// fits checks that a value of n bytes (by weight) may be built, then
// charges it.
func (b *budget) fits(n int64) error {
	if n > b.maxValue {
		if b.err == nil {
			b.err = fmt.Errorf("chattmpl: chat template builds a value of more than %d bytes", b.maxValue)
		}
		return b.err
	}
	return b.spend(n)
}

// weight is a bound on the bytes v takes when written out: string lengths
// plus 16 per item, through nested lists and dicts. It stops counting past
// limit, and fails on nesting deeper than maxValueDepth (which includes a
// value that contains itself).
func weight(v *exec.Value, limit int64) (int64, error) {
	if v == nil {
		return 16, nil
	}
	w := int64(0)
	err := addWeight(v.Val, 0, limit, &w)
	return w, err
}

var (
	valueType = reflect.TypeFor[*exec.Value]()
	dictType  = reflect.TypeFor[exec.Dict]() // a dict literal's, or a message's
)

func addWeight(v reflect.Value, depth int, limit int64, w *int64) error {
	if depth > maxValueDepth {
		return fmt.Errorf("chattmpl: chat template value is nested more than %d deep (or contains itself)", maxValueDepth)
	}
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
		if v.IsNil() {
			break
		}
		if v.Type() == valueType {
			v = v.Interface().(*exec.Value).Val
			continue
		}
		v = v.Elem()
	}
	*w += 16
	if *w > limit || !v.IsValid() {
		return nil
	}
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() != dictType {
			break
		}
		for _, p := range v.Interface().(exec.Dict).Pairs {
			if err := addWeight(reflect.ValueOf(p.Key), depth+1, limit, w); err != nil {
				return err
			}
			if err := addWeight(reflect.ValueOf(p.Value), depth+1, limit, w); err != nil {
				return err
			}
		}
	case reflect.String:
		*w += int64(v.Len())
	case reflect.Slice, reflect.Array:
		for i := 0; i < v.Len() && *w <= limit; i++ {
			if err := addWeight(v.Index(i), depth+1, limit, w); err != nil {
				return err
			}
		}
	case reflect.Map:
		it := v.MapRange()
		for *w <= limit && it.Next() {
			if err := addWeight(it.Key(), depth+1, limit, w); err != nil {
				return err
			}
			if err := addWeight(it.Value(), depth+1, limit, w); err != nil {
				return err
			}
		}
	}
	return nil
}

// reaches reports whether v holds the map target (by identity), at any depth
// up to maxValueDepth; seen skips containers already searched.
func reaches(v reflect.Value, target uintptr, depth int, seen map[uintptr]bool) bool {
	if depth > maxValueDepth {
		return true
	}
	for v.IsValid() && (v.Kind() == reflect.Pointer || v.Kind() == reflect.Interface) {
		if v.IsNil() {
			return false
		}
		if v.Type() == valueType {
			v = v.Interface().(*exec.Value).Val
			continue
		}
		v = v.Elem()
	}
	if v.IsValid() && v.Type() == dictType {
		if v.CanAddr() {
			if seen[v.Addr().Pointer()] {
				return false
			}
			seen[v.Addr().Pointer()] = true
		}
		for _, p := range v.Interface().(exec.Dict).Pairs {
			if reaches(reflect.ValueOf(p.Value), target, depth+1, seen) {
				return true
			}
		}
		return false
	}
	if !v.IsValid() || (v.Kind() != reflect.Map && v.Kind() != reflect.Slice) || v.IsNil() {
		return false
	}
	p := uintptr(v.UnsafePointer())
	if v.Kind() == reflect.Map && p == target {
		return true
	}
	if seen[p] {
		return false
	}
	seen[p] = true
	if v.Kind() == reflect.Map {
		it := v.MapRange()
		for it.Next() {
			if reaches(it.Value(), target, depth+1, seen) {
				return true
			}
		}
		return false
	}
	for i := 0; i < v.Len(); i++ {
		if reaches(v.Index(i), target, depth+1, seen) {
			return true
		}
	}
	return false
}

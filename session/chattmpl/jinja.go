package chattmpl

import (
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	"chat/models/quote"

	"github.com/nikolalohinski/gonja/v2"
	"github.com/nikolalohinski/gonja/v2/builtins"
	controlStructures "github.com/nikolalohinski/gonja/v2/builtins/control_structures"
	"github.com/nikolalohinski/gonja/v2/config"
	"github.com/nikolalohinski/gonja/v2/exec"
	"github.com/nikolalohinski/gonja/v2/loaders"
	"github.com/nikolalohinski/gonja/v2/nodes"
	"github.com/nikolalohinski/gonja/v2/parser"
)

// Limits that keep a hostile or broken template from hanging the chat: a
// render that outgrows them fails and the built-in format is used. The
// render budget itself is in limits.go.
const (
	maxRangeItems = 1 << 16         // items all range() calls of one render may produce
	maxMacroDepth = 200             // nested macro calls (unbounded recursion kills the process)
	maxOutput     = 8 << 20         // bytes of output beyond the content itself
	renderGrace   = 3 * time.Second // the backstop's wait beyond the budget's deadline (renderLimits.deadline), which ends a render sooner
)

var errTimeout = errors.New("chattmpl: chat template took too long to render")

const templateName = "/chat_template.jinja"

// jinjaTemplate is a parsed chat template with its own environment, whose
// guards spend budget.
type jinjaTemplate struct {
	mu       sync.Mutex // one render at a time: the budget and the macro depth are per template
	tpl      *exec.Template
	branches [][2]nodes.Expression // of the rewritten conditionals (compat.go)
	budget   budget
	depth    int // nested macro calls of the current render
}

// controlStructures are gonja's, without the ones that load other templates
// (refused by checkSource first, with a clearer message).
var controlStructureNames = strings.Fields(`autoescape block filter for if macro raw set with do break continue trans call`)

// newEnvironment is gonja's default environment with Hugging Face's
// additions (tojson as json.dumps writes it, {% generation %}), every filter,
// method and operator charging j's budget (guard.go), and macros that fail
// beyond maxMacroDepth.
func (j *jinjaTemplate) newEnvironment() *exec.Environment {
	cs := exec.NewControlStructureSet(map[string]parser.ControlStructureParser{})
	for _, name := range controlStructureNames {
		if p, ok := builtins.ControlStructures.Get(name); ok {
			_ = cs.Register(name, p)
		}
	}
	_ = cs.Register("generation", generationParser)
	if orig, ok := cs.Get("macro"); ok {
		_ = cs.Replace("macro", func(p, args *parser.Parser) (nodes.ControlStructure, error) {
			node, err := orig(p, args)
			if err != nil {
				return nil, err
			}
			if m, ok := node.(*controlStructures.MacroControlStructure); ok {
				return &guardedMacro{m, &j.depth}, nil
			}
			return node, nil
		})
	}
	methods := builtins.Methods
	methods.Str = strMethods(builtins.Methods.Str)
	ctx := gonja.DefaultContext.Inherit()
	ctx.Set("lipsum", func(*exec.VarArgs) (string, error) { return "", errors.New("lipsum is not available") })
	for name, fn := range guardFuncs(&j.budget) {
		ctx.Set(name, fn)
	}
	ctx.Set(loopFunc, guardedLoop(&j.depth))
	return &exec.Environment{
		Context:           ctx,
		Filters:           guardFilters(baseFilters(), &j.budget),
		Tests:             builtins.Tests,
		ControlStructures: cs,
		Methods:           guardMethods(methods, &j.budget),
	}
}

// guardedMacro defines a macro whose calls fail beyond maxMacroDepth: gonja
// recurses on the Go stack, and a template that recurses without end would
// otherwise overflow it, which no recover can catch.
type guardedMacro struct {
	*controlStructures.MacroControlStructure
	depth *int
}

func (g *guardedMacro) Execute(r *exec.Renderer, tag *nodes.ControlStructureBlock) error {
	if err := g.MacroControlStructure.Execute(r, tag); err != nil {
		return err
	}
	v, _ := r.Environment.Context.Get(g.Name)
	fn, ok := v.(exec.Macro)
	if !ok {
		return fmt.Errorf("macro %s: cannot guard its recursion", g.Name)
	}
	depth := g.depth
	r.Environment.Context.Set(g.Name, exec.Macro(func(p *exec.VarArgs) *exec.Value {
		if *depth >= maxMacroDepth {
			return exec.AsValue(fmt.Errorf("macro %s: more than %d nested calls", g.Name, maxMacroDepth))
		}
		*depth++
		defer func() { *depth-- }()
		return fn(p)
	}))
	return nil
}

// guardedLoop is loopFunc, which every read of the name loop goes through
// (guardTree): in a recursive for loop, loop is a function that renders the
// body for the items it is given, on the Go stack and in a context one
// level deeper each time, so that a template calling it without end
// (loop([m, m]) for each m) ran past the render's deadline, each level's
// lookups and errors slower than the last. It is wrapped so that its calls
// share the macros' count of nested calls; any other value (a plain loop's
// loop.index ...) is returned as it is.
func guardedLoop(depth *int) func(p *exec.VarArgs) (*exec.Value, error) {
	return func(p *exec.VarArgs) (*exec.Value, error) {
		if len(p.Args) != 1 {
			return nil, fmt.Errorf("%s takes one argument", loopFunc)
		}
		fn, ok := p.Args[0].Interface().(func(*exec.VarArgs) *exec.Value)
		if !ok {
			return p.Args[0], nil
		}
		return exec.AsValue(func(a *exec.VarArgs) *exec.Value {
			if *depth >= maxMacroDepth {
				return exec.AsValue(fmt.Errorf("loop: more than %d nested calls", maxMacroDepth))
			}
			*depth++
			defer func() { *depth-- }()
			return fn(a)
		}), nil
	}
}

// compileJinja parses a template the way transformers configures Jinja2:
// trim_blocks and lstrip_blocks on. The source is bounded first
// (checkSource), and the parsed tree is rewritten to charge the render
// budget (guardTree). Templates are read from memory only, and the tags that
// load other templates are refused.
func compileJinja(src string) (j *jinjaTemplate, err error) {
	defer func() {
		if r := recover(); r != nil {
			j, err = nil, fmt.Errorf("chattmpl: chat template does not parse: %s", oneLine(fmt.Sprint(r), 300))
		}
	}()
	cfg := gonja.DefaultConfig.Inherit()
	cfg.TrimBlocks = true
	cfg.LeftStripBlocks = true
	if err := checkSource(src, cfg); err != nil {
		return nil, err
	}
	// The conditionals gonja cannot parse are rewritten first (compat.go);
	// should the rewritten text not parse, the template's own text tells why.
	src2 := rewriteConditionals(src, cfg)
	j, err = parseJinja(src2, cfg)
	if err != nil && src2 != src {
		j, err = parseJinja(src, cfg)
	}
	if err != nil {
		return nil, fmt.Errorf("chattmpl: chat template does not parse: %s", shortErr(err))
	}
	return j, nil
}

func parseJinja(src string, cfg *config.Config) (*jinjaTemplate, error) {
	loader, err := loaders.NewMemoryLoader(map[string]string{templateName: src})
	if err != nil {
		return nil, err
	}
	j := &jinjaTemplate{}
	tpl, err := exec.NewTemplate(templateName, cfg, loader, j.newEnvironment())
	if err != nil {
		return nil, err
	}
	j.branches = guardTree(tpl.Root())
	j.tpl = tpl
	return j, nil
}

// execute renders msgs. The render budget ends a runaway render from
// inside; should some path escape it, execute still returns errTimeout
// renderGrace after the budget's deadline (5 s in all) and the render goes
// on in the background until it ends, so the caller must not run this
// template again. The backstop follows the deadline: a test that lifts the
// deadline (to measure budgets, not time) lifts it too.
func (j *jinjaTemplate) execute(msgs []Message, generation bool, bos, eos string, now func() time.Time) (string, error) {
	type result struct {
		out string
		err error
	}
	done := make(chan result, 1)
	go func() {
		j.mu.Lock()
		defer j.mu.Unlock()
		var r result
		defer func() {
			if p := recover(); p != nil {
				r = result{err: fmt.Errorf("chattmpl: chat template crashed the renderer: %s", oneLine(fmt.Sprint(p), 300))}
			}
			done <- r
		}()
		r.out, r.err = j.run(msgs, generation, bos, eos, now)
	}()
	timer := time.NewTimer(renderBackstop())
	defer timer.Stop()
	select {
	case r := <-done:
		return r.out, r.err
	case <-timer.C:
		return "", errTimeout
	}
}

// renderBackstop is how long execute waits for a render.
func renderBackstop() time.Duration { return renderLimits.deadline + renderGrace }

func (j *jinjaTemplate) run(msgs []Message, generation bool, bos, eos string, now func() time.Time) (string, error) {
	list := make([]any, len(msgs))
	size := 0
	for i, m := range msgs {
		// A dict in order, role before content, as transformers' callers
		// write messages (tojson shows the order).
		list[i] = &exec.Dict{Pairs: []*exec.Pair{
			{Key: exec.AsValue("role"), Value: exec.AsValue(m.Role)},
			{Key: exec.AsValue("content"), Value: exec.AsValue(m.Content)},
		}}
		size += len(m.Content)
	}
	var raised string
	j.budget.reset(size)
	j.depth = 0
	ctx := exec.NewContext(map[string]any{
		condFunc:                condValue(j.branches),
		itemFunc:                itemValue,
		testFunc:                testValue,
		"messages":              list,
		"add_generation_prompt": generation,
		"tools":                 nil, // as transformers passes them without tools or documents
		"documents":             nil,
		"bos_token":             bos,
		"eos_token":             eos,
		"raise_exception": func(_ *exec.Evaluator, p *exec.VarArgs) (string, error) {
			raised = "raise_exception()"
			if len(p.Args) > 0 {
				raised = p.Args[0].String()
			}
			return "", errors.New(raised)
		},
		"strftime_now": func(_ *exec.Evaluator, p *exec.VarArgs) (string, error) {
			if len(p.Args) != 1 || !p.Args[0].IsString() {
				return "", errors.New("strftime_now takes one format string")
			}
			return strftime(now(), p.Args[0].String()), nil
		},
		"range": func(_ *exec.Evaluator, p *exec.VarArgs) ([]int, error) {
			if err := j.budget.step(); err != nil {
				return nil, err
			}
			return rangeList(p, &j.budget.rangeLeft)
		},
	})
	var b strings.Builder
	w := &limitWriter{w: &b, left: maxOutput + 4*size}
	if err := j.tpl.Execute(w, ctx); err != nil {
		switch {
		case raised != "":
			return "", fmt.Errorf("chattmpl: chat template raised an exception: %s", oneLine(raised, 200))
		case j.budget.err != nil:
			return "", j.budget.err
		case w.left < 0:
			return "", fmt.Errorf("chattmpl: chat template output exceeds %d bytes", maxOutput+4*size)
		}
		return "", fmt.Errorf("chattmpl: chat template failed: %s", shortErr(err))
	}
	return b.String(), nil
}

// shortErr keeps the innermost part of gonja's nested error messages and
// caps the length (parse errors quote the whole template), on one line
// (oneLine).
func shortErr(err error) string { return oneLine(err.Error(), 300) }

// oneLine is s, its middle cut when it is longer than n bytes, as one line
// of printable text: messages quote the template's text and the values it
// raises, which come from the model file, so a newline, an escape sequence
// or invalid UTF-8 in them is shown as Go escapes it.
func oneLine(s string, n int) string {
	if len(s) > n {
		tail := len(s) - n/2
		for tail < len(s) && !utf8.RuneStart(s[tail]) {
			tail++
		}
		s = quote.Cut(s, n/2) + " " + s[tail:]
	}
	if utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) && r != ' ' }) < 0 {
		return s
	}
	q := strconv.Quote(s)
	return q[1 : len(q)-1]
}

// limitWriter fails once more than left bytes are written.
type limitWriter struct {
	w    io.Writer
	left int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	l.left -= len(p)
	if l.left < 0 {
		return 0, errors.New("output too long")
	}
	return l.w.Write(p)
}

// rangeList is Python's range as a list, charged against the render's budget
// (gonja's own range feeds a channel from a goroutine that leaks when a loop
// breaks early, and has no bound).
func rangeList(p *exec.VarArgs, budget *int) ([]int, error) {
	var a [3]int
	if len(p.Args) < 1 || len(p.Args) > 3 {
		return nil, errors.New("range expects [start, ]stop[, step]")
	}
	for i, v := range p.Args {
		if !v.IsInteger() {
			return nil, errors.New("range arguments must be integers")
		}
		a[i] = v.Integer()
	}
	start, stop, step := 0, a[0], 1
	if len(p.Args) >= 2 {
		start, stop = a[0], a[1]
	}
	if len(p.Args) == 3 {
		step = a[2]
	}
	if step == 0 {
		return nil, errors.New("range step must not be zero")
	}
	var n int
	if step > 0 && stop > start {
		n = (stop - start + step - 1) / step
	} else if step < 0 && start > stop {
		n = (start - stop - step - 1) / -step
	}
	if n > *budget {
		return nil, fmt.Errorf("range too long (more than %d items in one render)", maxRangeItems)
	}
	*budget -= n
	out := make([]int, n)
	for i := range out {
		out[i] = start + i*step
	}
	return out, nil
}

// strftime formats t with the C directives chat templates use ("%d %b %Y").
func strftime(t time.Time, f string) string {
	var b strings.Builder
	for i := 0; i < len(f); i++ {
		if f[i] != '%' || i+1 == len(f) {
			b.WriteByte(f[i])
			continue
		}
		i++
		switch f[i] {
		case 'd':
			b.WriteString(t.Format("02"))
		case 'e':
			b.WriteString(t.Format("_2"))
		case 'm':
			b.WriteString(t.Format("01"))
		case 'y':
			b.WriteString(t.Format("06"))
		case 'Y':
			b.WriteString(t.Format("2006"))
		case 'b', 'h':
			b.WriteString(t.Format("Jan"))
		case 'B':
			b.WriteString(t.Format("January"))
		case 'a':
			b.WriteString(t.Format("Mon"))
		case 'A':
			b.WriteString(t.Format("Monday"))
		case 'H':
			b.WriteString(t.Format("15"))
		case 'I':
			b.WriteString(t.Format("03"))
		case 'M':
			b.WriteString(t.Format("04"))
		case 'S':
			b.WriteString(t.Format("05"))
		case 'p':
			b.WriteString(t.Format("PM"))
		case 'j':
			fmt.Fprintf(&b, "%03d", t.YearDay())
		case 'Z':
			b.WriteString(t.Format("MST"))
		case 'z':
			b.WriteString(t.Format("-0700"))
		case '%':
			b.WriteByte('%')
		default:
			b.WriteByte('%')
			b.WriteByte(f[i])
		}
	}
	return b.String()
}

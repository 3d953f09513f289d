package chattmpl

import (
	"cmp"
	"runtime"
	"strings"
	"testing"
	"time"

	"chat/models/testmodels"
)

// hostileTemplates are templates a model file could carry to crash, hang or
// exhaust the app (issue 16), each with a word of the error it must give.
// Each is refused before parsing or stopped by the render budget; the
// conversation then renders with the built-in format.
var hostileTemplates = []struct{ name, src, want string }{
	{"parens", "{{ " + strings.Repeat("(", 100000) + "1" + strings.Repeat(")", 100000) + " }}", "larger"},
	{"brackets", "{{ " + strings.Repeat("[", 2000000) + " }}", "larger"},
	{"long-tag", "{{ a" + strings.Repeat(".b", 2000) + " }}", "tokens"},
	{"parens-small", "{{ " + strings.Repeat("(", 30000) + "1" + strings.Repeat(")", 30000) + " }}", "nests"},
	{"lists", "{{ " + strings.Repeat("[", 1000) + strings.Repeat("]", 1000) + " }}", "nests"},
	{"dicts", "{{ " + strings.Repeat("{'a':", 1000) + "1" + strings.Repeat("}", 1000) + " }}", "nests"},
	{"blocks", strings.Repeat("{% if true %}", 2000) + "x" + strings.Repeat("{% endif %}", 2000), "nests"},
	{"extends", "{% extends '/chat_template.jinja' %}", "extends"},
	{"include", "{% include '/chat_template.jinja' %}", "include"},
	{"import", "{% import '/chat_template.jinja' as t %}", "import"},
	{"from", "{% from '/chat_template.jinja' import m %}", "from"},
	{"reserved", "{{ __chattmpl_enter(-1000000000) }}", "reserved"},
	{"string-multiply", "{% set a = 'a'*16 * 1000000 %}{% set b = a * 1000 %}{{ b }}", "value"},
	{"string-multiply-str", "{{ 'a' * '1e12' }}", "value"},
	// gonja's lexer keeps a control byte in the operator's text ("\a*"),
	// and evaluates it by its type: found by FuzzTemplate.
	{"string-multiply-bel", "{{ 'a'\a* '1e12' }}", "value"},
	{"string-add-bel", "{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s\a+ ns.s %}{% endfor %}", "value"},
	{"extends-bel", "{%\aextends '/chat_template.jinja' %}", ""},
	{"include-bel", "{% include\a '/chat_template.jinja' %}", ""},
	{"doubling", "{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s }}", "value"},
	{"tilde-doubling", "{% set ns = namespace(s='ab') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}", "value"},
	{"list-doubling", "{% set ns = namespace(l=['x'*1000]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l }}", "value"},
	{"many-vars", "{% set a = 'x' * 10000000 %}" + strings.Repeat("{% set b = a + 'y' %}", 40), "more data"},
	{"center", "{{ 'x' | center(2000000000) }}", "value"},
	{"indent", "{{ ('x\n' * 1000) | indent(1000000) }}", "value"},
	{"ljust", "{{ 'x'.ljust(2000000000) }}", "value"},
	// Arguments whose sum wrapped negative passed the bound: indent built
	// its 300M-space lines (572 MB) before it checked its arguments.
	{"wrapped-bound", "{{ 'x\nx' | indent(300000000, 4611686018427387904, 4611686018427387904) }}", "value"},
	{"replace", "{% set ns = namespace(s='x' * 100) %}{% for i in range(10) %}{% set ns.s = ns.s.replace('x', ns.s) %}{% endfor %}", "value"},
	{"join", "{{ range(60000) | join('x' * 100000) }}", "value"},
	{"format", "{{ '%2000000000s' | format('x') }}", "value"},
	{"list-chars", "{{ ('x' * 10000000) | list | length }}", "data"},
	{"self-namespace", "{% set ns = namespace(a=1) %}{% set ns.a = ns %}{{ ns }}", "contains itself"},
	{"self-list", "{% set ns = namespace(a=1) %}{% set ns.a = [1, [ns]] %}{{ ns | tojson }}", "contains itself"},
	{"self-dict", "{% set ns = namespace(a=1) %}{% set ns.a = {'k': [ns]} %}{{ ns }}", "contains itself"},
	{"dict-doubling", "{% set ns = namespace(l={}) %}{% for i in range(50) %}{% set ns.l = {'a': ns.l, 'b': ns.l} %}{% endfor %}{{ ns.l }}", "value"},
	{"deep-value", "{% set ns = namespace(l=[]) %}{% for i in range(1000) %}{% set ns.l = [ns.l] %}{% endfor %}{{ ns.l }}", "nested"},
	{"nested-loops", "{% for a in range(60000) %}{% for b in range(60000) %}{% endfor %}{% endfor %}", "more data"},
	{"long-loop", "{% set l = 'x' * 5000000 %}{% for c in l %}{% for d in l %}{% endfor %}{% endfor %}", "steps"},
	{"data-loop", "{% for a in range(65000) %}" + strings.Repeat("x", 60000) + "{% endfor %}", "more data"},
	{"macro-recursion", "{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "nested calls"},
	// A recursive loop's loop() was not counted: each level deeper made
	// the lookups and errors of all below it slower, so that it ran until
	// the render's 5 s backstop and on in the background.
	{"loop-recursion", "{% for m in messages recursive %}{{ loop([m, m]) }}{% endfor %}", "nested calls"},
	{"loop-recursion-set", "{% for m in messages recursive %}{% set x = loop([m]) %}{% endfor %}", "nested calls"},
	{"loop-recursion-alias", "{% for m in messages recursive %}{% set f = loop %}{% set x = f([m]) %}{% endfor %}", "nested calls"},
	{"append", "{% set l = [] %}{% do l.append(l) %}{{ l }}", "unknown method"},
	{"update", "{% set d = {} %}{% do d.update({'a': d}) %}{{ d }}", "unknown method"},
	{"lipsum", "{{ lipsum(100000000) }}", "lipsum"},
	{"shared-lists", "{% set a = [1] %}" + strings.Repeat("{% set a = [a, a] %}", 40) + "{{ a | tojson }}", "value"},
	{"shared-lists-sort", "{% set a = [1] %}" + strings.Repeat("{% set a = [a, a] %}", 40) + "{{ a | sort | length }}", "value"},
	{"shared-lists-loop", "{% set a = [1] %}" + strings.Repeat("{% set a = [a, a] %}", 40) + "{% for x in a recursive %}{{ loop(x) if x is iterable }}{% endfor %}", "value"},
	// A value shared 2^30 times cost nothing to build, and operators and
	// errors outside the guards walked it: the render's deadline left them
	// running in the background, into gigabytes.
	{"shared-equal", "{% set ns = namespace(d=[]) %}{% for i in range(30) %}{% set ns.d = [ns.d, ns.d] %}{% endfor %}{{ ns.d == ns.d }}", "value"},
	{"shared-in", "{% set ns = namespace(d={}) %}{% for i in range(30) %}{% set ns.d = {'a': ns.d, 'b': ns.d} %}{% endfor %}{{ ns.d in [ns.d] }}", "value"},
	{"shared-error", "{% set ns = namespace(d=[]) %}{% for i in range(30) %}{% set ns.d = (ns.d, ns.d) %}{% endfor %}{{ ns.d.upper() }}", "value"},
	{"shared-dict", "{% set ns = namespace(d=[]) %}{% for i in range(30) %}{% set ns.d = dict(a=ns.d, b=ns.d) %}{% endfor %}{{ raise_exception(ns.d) }}", "value"},
	{"slices", "{% set a = 'x' * 10000000 %}" + strings.Repeat("{% set b = a[::-1] %}", 40), "more data"},
}

func TestHostileTemplates(t *testing.T) {
	v := vocabs()["chatml"]
	msgs := []Message{{"system", "s"}, {"user", "hi"}}
	want := New(v.tok, Options{Family: "chatml", EOS: v.eos}).Render(msgs, true)
	// The render's wall-clock deadline is a backstop; here the budgets must
	// stop each template, whatever else the machine is doing (on a loaded
	// machine shared-lists-loop's 2^17 steps can outlast the 2 s deadline
	// and fail with the wrong error). Bounded still catches a hang.
	saved := renderLimits
	t.Cleanup(func() { renderLimits = saved })
	renderLimits.deadline = time.Minute
	for _, c := range hostileTemplates {
		t.Run(c.name, func(t *testing.T) {
			var tp *Template
			var ids []int
			testmodels.Bounded(t, c.name, func() error {
				tp = New(v.tok, Options{Template: c.src, EOS: v.eos})
				ids = tp.Render(msgs, true)
				return nil
			})
			err := tp.Err()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one containing %q", err, c.want)
			}
			if s := err.Error(); len(s) > 400 || strings.Contains(s, "\n") {
				t.Errorf("error is not one short line: %q", s)
			}
			if !equalIDs(ids, want) {
				t.Errorf("rendered %d ids; want the built-in chatml's %d", len(ids), len(want))
			}
		})
	}
}

// A real template still renders on a long conversation: the budget scales
// with the messages' text.
func TestBudgetFitsLongConversations(t *testing.T) {
	v := vocabs()["chatml"]
	msgs := longConversation(300)
	msgs = append(msgs, Message{"assistant", strings.Repeat("long reply ", 20000)})
	tp := New(v.tok, Options{Template: tmplQwen25, EOS: v.eos})
	text := tp.Text(msgs, true)
	if err := tp.Err(); err != nil || tp.Name() != "jinja" {
		t.Fatalf("%s: %v", tp.Name(), err)
	}
	if !strings.Contains(text, "long reply long reply") {
		t.Errorf("the last message is missing")
	}
}

func equalIDs(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// Templates at the size limit, made of the constructs whose parsing or error
// messages cost the most per byte, stay within the limits too.
func TestLargeTemplatesWithinLimits(t *testing.T) {
	fill := func(x string) string { return strings.Repeat(x, maxTemplateBytes/len(x)) }
	chain := func(unit string, k int) string { return "{{ a" + strings.Repeat(unit, k) + " }}" }
	v := vocabs()["chatml"]
	for name, src := range map[string]string{
		"attributes": fill(chain(".b", 500)),
		"items":      fill(chain("[0]", 330)),
		"calls":      fill(chain("()", 500)),
		"plus":       fill(chain("+a", 500)),
		"tilde":      fill(chain("~'a'", 500)),
		"filters":    fill(chain("|e", 500)),
		"parens":     fill("{{ " + strings.Repeat("-(", 60) + "1" + strings.Repeat(")", 60) + " }}"),
		"outputs":    fill("{{a}}x"),
		"ifs":        fill("{% if a %}{% endif %}"),
		"elifs":      "{% if 1 %}" + fill("{% elif 1 %}") + "{% endif %}",
		"operators":  fill("{{a+a+a+a+a+a+a+a+a+a}}"),
	} {
		testmodels.Bounded(t, name, func() error {
			New(v.tok, Options{Template: src[:min(len(src), maxTemplateBytes)], EOS: v.eos}).Render([]Message{{"user", "hi"}}, true)
			return nil
		})
	}
}

// The filters and methods real templates call on a message's content
// (tojson for tool calls, trim, split, startswith) fit the budget on a long
// message: it is charged by what they allocate, and tojson on a string does
// not walk it byte by byte as it walks a list.
func TestFiltersOnLongContentFit(t *testing.T) {
	v := vocabs()["chatml"]
	msgs := []Message{{"user", strings.Repeat("a long message ", 100000)}} // 1.5 MB
	src := "{% for m in messages %}{{ m.content | tojson }}{{ m.content | trim | length }}" +
		"{{ m.content.split('</think>')[-1].lstrip('\n') }}{{ m.content.startswith('<tool') }}{{ m.content | string }}{% endfor %}"
	tp := New(v.tok, Options{Template: src, EOS: v.eos})
	tp.Text(msgs, true)
	if err := tp.Err(); err != nil || tp.Name() != "jinja" {
		t.Fatalf("%s: %v", tp.Name(), err)
	}
}

// guardArgs are arguments the filters and methods that need some are
// called with in TestGuardsChargeWhatTheyAllocate.
var guardArgs = map[string]string{"replace": "('x', 'yy')", "center": "(100)", "indent": "(4)", "join": "(',')",
	"wordwrap": "(10)", "batch": "(3)", "slice": "(3)", "truncate": "(10)", "attr": "('a')", "map": "('upper')",
	"select": "('odd')", "reject": "('odd')", "selectattr": "('a')", "rejectattr": "('a')", "groupby": "('a')",
	"count": "('x')", "endswith": "('x')", "startswith": "('x')", "find": "('y')", "rfind": "('y')",
	"ljust": "(10)", "rjust": "(10)", "zfill": "(10)", "partition": "('y')", "rpartition": "('y')",
	"removeprefix": "('x')", "removesuffix": "('x')", "split": "('x')", "rsplit": "('x')", "format_map": "({})"}

// Every filter and string method, on a long string and on long lists,
// allocates no more than the render's budget is charged for it: gonja walks
// a string a byte at a time with a value for each (sort allocated 126 bytes
// a byte, groupby 700), so a template could build near-limit values and
// filter them to gigabytes within its budget. Allocation is measured, not
// time.
func TestGuardsChargeWhatTheyAllocate(t *testing.T) {
	if testmodels.Race {
		t.Skip("the race detector's instrumentation allocates beside the filters (about a tenth more)")
	}
	// Memory is measured here, not time: on a loaded machine a filter over a
	// megabyte string outlasted the 2 s render deadline.
	saved := renderLimits
	t.Cleanup(func() { renderLimits = saved })
	renderLimits.deadline = time.Minute
	measure := func(set, expr string) (alloc, charged int64, err error) {
		j, err := compileJinja(set + "{% set t = " + expr + " %}")
		if err != nil {
			t.Fatal(err)
		}
		var m0, m1 runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&m0)
		_, err = j.execute([]Message{{"user", "hi"}}, true, "", "", time.Now)
		runtime.ReadMemStats(&m1)
		return int64(m1.TotalAlloc - m0.TotalAlloc), renderLimits.alloc + 16*2 - j.budget.alloc, err
	}
	const slack = 1 << 20 // the render's own allocations beside the filter's
	for _, in := range []struct{ name, set string }{
		{"string", "{% set s = 'Xx y' * 250000 %}"},
		{"strings", "{% set s = ('Xx y ' * 60000).split() %}"},
		{"numbers", "{% set s = range(60000) %}"},
		{"dicts", "{% set s = messages * 1 %}{% for i in range(12) %}{% set s = s + s %}{% endfor %}"},
	} {
		a0, c0, err := measure(in.set, "1")
		if err != nil {
			t.Fatalf("%s: %v", in.name, err)
		}
		check := func(expr string) {
			a, c, err := measure(in.set, expr)
			if a-a0 > c-c0+slack {
				t.Errorf("%s | %s: allocated %.1f MB, charged %.1f MB (%v)", in.name, expr, float64(a-a0)/1e6, float64(c-c0)/1e6, err)
			}
		}
		for _, f := range filterNames {
			check("s | " + f + guardArgs[f])
		}
		if in.name == "string" {
			for _, m := range strMethodNames {
				check("s." + m + cmp.Or(guardArgs[m], "()"))
			}
			check("s | replace('x', 'yy') | join(',') | tojson | center(100) | indent(4) | upper")
		}
	}
}

// The render's backstop lies beyond the budget's deadline, also when a test
// lifts the deadline: TestHostileTemplates lifted the deadline to a minute
// but execute still gave up at a fixed 5 s, which the race detector's
// slowdown reached (shared-lists-loop and six more failed with "took too
// long to render", and the abandoned renders raced with the cleanup that
// restored renderLimits).
func TestBackstopFollowsTheDeadline(t *testing.T) {
	saved := renderLimits
	t.Cleanup(func() { renderLimits = saved })
	if b := renderBackstop(); b <= renderLimits.deadline || b != 5*time.Second {
		t.Errorf("backstop %v for a %v deadline; want 5 s, beyond it", b, renderLimits.deadline)
	}
	renderLimits.deadline = time.Minute
	if b := renderBackstop(); b <= time.Minute {
		t.Errorf("backstop %v for a lifted deadline of a minute", b)
	}
}

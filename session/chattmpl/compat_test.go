package chattmpl

import (
	"strings"
	"testing"
)

// TestPythonSemantics checks constructs real chat templates use where gonja
// departs from Python's jinja2; each want is what jinja2 3.1 renders with
// transformers' settings (scripts/render-chat-template.py).
func TestPythonSemantics(t *testing.T) {
	msgs := []Message{{"user", "  a<b>&'\"é\n  "}, {"assistant", "x"}}
	checkRenders(t, msgs, []struct{ tmpl, want string }{
		// str methods without arguments strip and split on any whitespace.
		{`{{ ' \t a b \n'.strip() }}|{{ ' a '.lstrip() }}|{{ ' a '.rstrip() }}|{{ 'xxaxx'.strip('x') }}|{{ ''.lstrip('\n') }}|{{ ' a  b '.split() | join(',') }}|{{ 'a  b'.split(' ') | join(',') }}|{{ ' a b c '.split(none, 1) | join(',') }}|{{ ' a b c '.rsplit(none, 1) | join(',') }}|{{ 'a,b,c'.rsplit(',', 1) | join('|') }}`,
			"a b|a | a|a||a,b|a,,b|a,b c | a b,c|a,b|c"},
		// Subscripts: negative indexes of one-item lists, strings by character,
		// dict literals with integer keys.
		{`{{ messages[-1].role }}|{{ messages[-2]['role'] }}|{{ ['x'][-1] }}|{{ 'é日'[-1] }}|{{ 'é日'[0] }}|{{ {16384: 'k', 'a': 1}[16384] }}|{{ 'a'.split('b')[-1].lstrip('\n') }}|{{ messages[-1].get('role') }}`,
			"assistant|user|x|日|é|k|a|assistant"},
		// A method called on a parenthesised filter expression.
		{`{{ (messages[0].content | trim).replace('a', 'A') }}|{{ (messages[0].content | default('', true)).replace('<', '[').strip() }}`,
			"A<b>&'\"é|a[b>&'\"é"},
		// Conditionals in call arguments and parentheses; only the branch
		// taken is evaluated.
		{`{%- macro tag(t, attrs=[]) -%}<{{ t }}{% for a in attrs %} {{ a[0] }}={{ a[1] }}{% endfor %}>{%- endmacro -%}{{ tag('think' if messages|length > 5 else 'response') }}{{ tag('m', attrs=[('role', 'user' if true else 'x')]) }}{{ ('a' if false) }}|{{ (messages[9].content if messages|length > 9 else 'none') }}|{{ 'x'.replace('x', 'y' if true else messages[7].content.z) }}`,
			"<response><m role=user>|none|y"},
		// tojson as transformers': arguments (ensure_ascii, indent, separators,
		// sort_keys), dicts in their order, keys as json.dumps writes them.
		{`{{ {'b': 1, 'a': [2, 'é'], 3: none} | tojson }}|{{ {'b': 1, 'a': 2} | tojson(sort_keys=true) }}|{{ 'é' | tojson(true) }}|{{ [1, {'x': 2}] | tojson(false, 1) }}|{{ {'a': 1} | tojson(separators=(',', ':')) }}`,
			"{\"b\": 1, \"a\": [2, \"é\"], \"3\": null}|{\"a\": 2, \"b\": 1}|\"\\u00e9\"|[\n 1,\n {\n  \"x\": 2\n }\n]|{\"a\":1}"},
		// {% set %} with an if and no else. (y is none here, not undefined:
		// "y is defined" is true, where jinja2 says false.)
		{`{%- set x = (messages[0].role) if messages %}{%- set y = 1 if false %}{{ x }}|{{ y }}`, "user|"},
		// A variable set to none is defined, one never set is not none.
		{`{% set x = none %}{{ tools is defined }} {{ tools is none }} {{ x is defined }} {{ x is none }} {{ nosuch is defined }} {{ nosuch is none }} {{ nosuch is undefined }} {{ tools is not defined }} {{ documents is undefined }}`,
			"True True True True False False True False False"},
	})
	// transformers passes tools and documents as None: a loop over them
	// raises, as does + on an undefined value; ~ and if take them.
	for _, c := range []struct{ tmpl, want, fails string }{
		{"{% for t in tools %}x{% endfor %}", "", "NoneType"},
		{"{% macro f(tools) %}{% for t in tools %}x{% endfor %}{% endmacro %}{{ f(tools) }}", "", "NoneType"},
		{"{{ 'a' + nosuch }}", "", "unsupported operand"},
		{"{% for t in nosuch %}x{% endfor %}{{ 'a' ~ nosuch }}{% if tools %}t{% endif %}ok", "aok", ""},
	} {
		j, err := compileJinja(c.tmpl)
		if err != nil {
			t.Errorf("%q: %v", c.tmpl, err)
			continue
		}
		got, err := j.execute(msgs, true, "", "", fixedNow)
		if c.fails == "" && (err != nil || got != c.want) || c.fails != "" && (err == nil || !strings.Contains(err.Error(), c.fails)) {
			t.Errorf("%q: got %q, %v; want %q or an error with %q", c.tmpl, got, err, c.want, c.fails)
		}
	}
}

package gbnf

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"chat/models/testmodels"
)

func mustCompile(t testing.TB, src string) *Machine {
	t.Helper()
	g, err := Compile(src)
	if err != nil {
		t.Fatalf("Compile: %v\n%s", err, src)
	}
	return NewMachine(g)
}

func readGrammar(t testing.TB, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// pair is one random expression written both as GBNF and as a Go regexp.
type pair struct{ gbnf, re string }

// randomPair builds a random regular expression in both syntaxes, so the
// machine can be checked against Go's regexp on the same strings.
func randomPair(rng *rand.Rand, depth int) pair {
	if depth <= 0 || rng.IntN(3) == 0 {
		atoms := []pair{
			{`"a"`, `a`}, {`"bc"`, `bc`}, {`[a-c]`, `[a-c]`}, {`[^a\n]`, `[^a\n]`},
			{`"é"`, `é`}, {`[€-₿]`, `[€-₿]`}, {`.`, `(?s:.)`}, {`"\x41"`, `A`}, {`"\n"`, `\n`},
		}
		return atoms[rng.IntN(len(atoms))]
	}
	switch rng.IntN(5) {
	case 0:
		a, b := randomPair(rng, depth-1), randomPair(rng, depth-1)
		return pair{"(" + a.gbnf + " | " + b.gbnf + ")", "(?:" + a.re + "|" + b.re + ")"}
	case 1:
		ops := []string{"*", "+", "?", "{2}", "{1,3}", "{0,2}", "{2,}"}
		op := ops[rng.IntN(len(ops))]
		a := randomPair(rng, depth-1)
		return pair{"(" + a.gbnf + ")" + op, "(?:" + a.re + ")" + op}
	default:
		a, b := randomPair(rng, depth-1), randomPair(rng, depth-1)
		return pair{a.gbnf + " " + b.gbnf, a.re + b.re}
	}
}

// A regular grammar accepts exactly what the same expression does in Go's
// regexp, on random strings and on prefixes of matching ones.
func TestMatchesRegexp(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	pieces := []string{"a", "b", "c", "A", "é", "€", "₿", "\n", "x", "bc"}
	for range 300 {
		p := randomPair(rng, 4)
		src := "root ::= " + p.gbnf + "\n"
		g, err := Compile(src)
		if err != nil {
			if strings.Contains(err.Error(), "left recursion") {
				continue // (x?)* and the like, refused as llama.cpp does
			}
			t.Fatalf("%s: %v", src, err)
		}
		m := NewMachine(g)
		re := regexp.MustCompile(`^(?:` + p.re + `)$`)
		for range 100 {
			var b strings.Builder
			for range rng.IntN(7) {
				b.WriteString(pieces[rng.IntN(len(pieces))])
			}
			in := b.String()
			if got, want := m.Match([]byte(in)), re.MatchString(in); got != want {
				t.Fatalf("grammar %s regexp %s input %q: machine %v, regexp %v", p.gbnf, p.re, in, got, want)
			}
		}
	}
}

// Nesting is unbounded: the machine is a real pushdown recogniser.
func TestBalanced(t *testing.T) {
	m := mustCompile(t, `root ::= ( "(" root ")" | "[" root "]" )*`)
	ok := func(s string) bool {
		var st []byte
		for i := 0; i < len(s); i++ {
			switch c := s[i]; c {
			case '(', '[':
				st = append(st, c)
			default:
				if len(st) == 0 || (c == ')') != (st[len(st)-1] == '(') {
					return false
				}
				st = st[:len(st)-1]
			}
		}
		return len(st) == 0
	}
	rng := rand.New(rand.NewPCG(5, 6))
	for range 3000 {
		var b []byte
		for range rng.IntN(12) {
			b = append(b, "()[]"[rng.IntN(4)])
		}
		if got, want := m.Match(b), ok(string(b)); got != want {
			t.Fatalf("%q: %v, want %v", b, got, want)
		}
	}
	deep := strings.Repeat("([", 500) + strings.Repeat("])", 500)
	if !m.Match([]byte(deep)) {
		t.Fatal("1000-deep nesting rejected")
	}
}

// The JSON grammar accepts what encoding/json accepts (within its bounded
// whitespace and number lengths) and nothing it rejects.
func TestJSONGrammar(t *testing.T) {
	m := mustCompile(t, readGrammar(t, "json.gbnf"))
	good := []string{`{}`, `[]`, `0`, `-1.5e+10`, `"a\"b\\c\u00e9"`, `{"a": [1, 2, {"b": null}], "c": true}`,
		"[\n  1,\n  \"x\"\n]", `"日本"`, `{"k":"v"}`}
	bad := []string{``, `{`, `[1,]`, `01`, `{"a" 1}`, `"\x"`, "\"\x01\"", `nul`, `{} `, ` {}`, `[1 2]`, `"\ud8"`}
	for _, s := range good {
		if !json.Valid([]byte(s)) || !m.Match([]byte(s)) {
			t.Errorf("%q: valid JSON rejected", s)
		}
	}
	for _, s := range bad {
		if m.Match([]byte(s)) {
			t.Errorf("%q: accepted", s)
		}
	}
	// Random mutations of a document: whatever the grammar accepts parses.
	rng := rand.New(rand.NewPCG(8, 9))
	doc := []byte(`{"name": "x", "tags": ["a", "b"], "n": -12.5e3, "ok": false, "sub": {"z": null}}`)
	for range 5000 {
		b := append([]byte(nil), doc...)
		for range 1 + rng.IntN(3) {
			i := rng.IntN(len(b))
			switch rng.IntN(3) {
			case 0:
				b = append(b[:i], b[i+1:]...)
			case 1:
				b = append(b[:i], append([]byte{`{}[]",: 0a-e.`[rng.IntN(13)]}, b[i:]...)...)
			default:
				b[i] = `{}[]",: 0a-e.`[rng.IntN(13)]
			}
		}
		if m.Match(b) && !json.Valid(b) {
			t.Fatalf("%q accepted but not valid JSON", b)
		}
	}
}

func TestTestdataGrammars(t *testing.T) {
	for name, cases := range map[string]map[string]bool{
		"arithmetic.gbnf": {"a+1=b\n": true, "(x *2) = y\n": true, "(x * 2) = y\n": false, "a+=b\n": false},
		"list.gbnf":       {"- one\n- two\n": true, "- \n": false, "- a": false},
		"moves.gbnf":      {"1. e4 e5\n2. Nf3 Nc6\n": true, "1. e4 e5\n": false, "1. O-O-O Qxd8#\n2. a1 a2\n": true},
	} {
		m := mustCompile(t, readGrammar(t, name))
		for in, want := range cases {
			if got := m.Match([]byte(in)); got != want {
				t.Errorf("%s %q: %v, want %v", name, in, got, want)
			}
		}
	}
}

func TestSyntax(t *testing.T) {
	src := "root ::= a | b | # comment\n" +
		"  \"\\u00e9\\U0001F600\\t\\x41\"\n" +
		"a ::= (\n  \"x\"\n  | \"y\"\n){2}\n" +
		"b ::= [\\]\\-a] [^\\n]? \".\"\r\n"
	m := mustCompile(t, src)
	for in, want := range map[string]bool{"xy": true, "é😀\tA": true, "]z.": true, "-.": true, "x": false, "a\n.": false} {
		if got := m.Match([]byte(in)); got != want {
			t.Errorf("%q: %v, want %v", in, got, want)
		}
	}
}

var generated = regexp.MustCompile(`[a-z]-[0-9]+\b`)

func TestErrors(t *testing.T) {
	for src, want := range map[string]string{
		"root ::= \"a":                `line 1, col 10: expected '"' to close this string`,
		"root ::= [a-":                "line 1, col 10: expected ']'",
		"root ::= (\"a\"":             "line 1, col 14: expected ')' to close the '(' at line 1, col 10",
		"root := \"a\"":               "line 1, col 6: expected '::=' after the rule name",
		"root ::= x":                  `line 1, col 10: rule "x" is used but never defined`,
		"a ::= \"x\"":                 "expected a rule named root",
		"root ::= root \"a\" | \"b\"": `left recursion: "root" → "root"`,
		"root ::= (\"a\"?)*":          `line 1, col 10: left recursion: "root"'s repeat at line 1, col 10 → "root"'s repeat at line 1, col 10`,
		"root ::= x\nx ::= \"(\" (\"b\"? \"c\"?)+ \")\"": `line 2, col 11: left recursion: "x"'s repeat at line 2, col 11`,
		"root ::= \"a\" root":                            `rule "root" can never finish`,
		"root ::= \"a\"\nroot ::= \"b\"":                 `line 2, col 1: rule "root" is defined twice (first at line 1, col 1)`,
		"root ::= \"\\q\"":                               `line 1, col 11: unknown escape "\\q"`,
		"root ::= \"a\"{3,1}":                            "repeat {3,1} has its maximum below its minimum",
		"root ::= \"a\"{99999}":                          "repeat count 99999 is over",
		"root ::= <[12]>":                                "token references",
		"root ::= * \"a\"":                               "expected something before '*' to repeat",
		"root ::= \"a\" )":                               `expected the end of the line (or '|'), found ")"`,
		"root ::= [z-a]":                                 `range 'z'-'a' is reversed`,
		"root ::= \"a\"**":                               "a second repeat",
		"root ::= \"\\uD800\"":                           `line 1, col 11: \uD800 is not a Unicode scalar value`,
	} {
		_, err := Compile(src)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Compile(%q) = %v, want an error containing %q", src, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("Compile(%q): multi-line error %q", src, err)
		}
		if err != nil && !strings.Contains(err.Error(), "line ") {
			t.Errorf("Compile(%q): error %q names no position", src, err)
		}
		// The rules the lowering makes (root-2) are nowhere in the
		// grammar: an error names the user's rule and where in it.
		if err != nil && generated.MatchString(err.Error()) {
			t.Errorf("Compile(%q): error %q names a generated rule", src, err)
		}
	}
}

// A grammar's names in an error are cut: a 100 KB name gave a 100 KB line.
func TestLongNamesCut(t *testing.T) {
	long := strings.Repeat("x", 100000)
	for _, src := range []string{"root ::= " + long, long + " := \"a\"", "root ::= \"a\"\n" + long + " ::= \"a\"\n" + long + " ::= \"b\""} {
		_, err := Compile(src)
		if err == nil || len(err.Error()) > 300 || !strings.Contains(err.Error(), "xxx…") {
			t.Errorf("error of %d bytes, want one short line: %.200s", len(fmt.Sprint(err)), err)
		}
	}
}

func TestAmbiguityBounded(t *testing.T) {
	// Each x can be one "a" from either alternative: 2^n parses in flight
	// without the interning; with it, the parses of one state collapse.
	m := mustCompile(t, "root ::= x*\nx ::= \"a\" | \"a\" | \"aa\"\n")
	if !m.Match([]byte(strings.Repeat("a", 200))) {
		t.Fatal("rejected")
	}
	if n := m.States(); n > 10 {
		t.Errorf("%d states for a* written ambiguously", n)
	}
}

func FuzzCompile(f *testing.F) {
	for _, name := range []string{"json.gbnf", "arithmetic.gbnf", "list.gbnf", "moves.gbnf"} {
		b, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(string(b), []byte(`{"a": [1]}`))
	}
	f.Add("root ::= [a-z]{2,5} (\",\" root)?", []byte("ab,cd"))
	f.Fuzz(func(t *testing.T, src string, in []byte) {
		if len(src) > 512 || len(in) > 64 {
			return
		}
		g, err := Compile(src)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		m := NewMachine(g)
		m.Match(in)
		if m.Err() == nil && m.States() > 100_000 {
			t.Fatalf("%d states", m.States())
		}
	})
}

// The grammars of llama.cpp's grammars/ folder, as node-llama-cpp bundles
// it, all compile (CHAT_LLAMACPP=1, after ../shared/bench/llamacpp.sh
// --install).
func TestLlamaCppGrammars(t *testing.T) {
	_, cache := testmodels.NeedLlamaCpp(t)
	files, err := filepath.Glob(filepath.Join(cache, "node_modules", "node-llama-cpp", "llama", "grammars", "*.gbnf"))
	if err != nil || len(files) < 8 {
		t.Fatalf("llama.cpp's grammars: %d files (%v)", len(files), err)
	}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := Compile(string(b)); err != nil {
			t.Errorf("%s: %v", filepath.Base(f), err)
		}
	}
}

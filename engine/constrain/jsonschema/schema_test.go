package jsonschema

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"chat/engine/constrain/gbnf"
	"chat/engine/constrain/regex"
	"chat/models/testmodels"

	sjs "github.com/santhosh-tekuri/jsonschema/v6"
)

func machine(t testing.TB, grammar string) *gbnf.Machine {
	t.Helper()
	g, err := gbnf.Compile(grammar)
	if err != nil {
		t.Fatalf("%v\n%s", err, grammar)
	}
	return gbnf.NewMachine(g)
}

// walk writes one random output of m: at each step a random byte class
// with a live transition (classes, not bytes, so that a closing quote is as
// likely as any letter), stopping at random once complete. It returns nil
// when the output grows past limit.
func walk(m *gbnf.Machine, rng *rand.Rand, limit int) []byte {
	classOf, nc := m.Classes()
	members := make([][]byte, nc)
	for b := range 256 {
		members[classOf[b]] = append(members[classOf[b]], byte(b))
	}
	var out []byte
	s := m.Start()
	for len(out) < limit {
		if m.Accepting(s) && rng.IntN(3) == 0 {
			return out
		}
		var live []int
		for c := range nc {
			if m.Next(s, members[c][0]) >= 0 {
				live = append(live, c)
			}
		}
		if len(live) == 0 {
			return out // complete, nothing may follow
		}
		c := live[rng.IntN(len(live))]
		b := members[c][rng.IntN(len(members[c]))]
		out = append(out, b)
		s = m.Next(s, b)
	}
	return nil
}

func validator(t testing.TB, schema []byte) *sjs.Schema {
	t.Helper()
	doc, err := sjs.UnmarshalJSON(bytes.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := sjs.NewCompiler()
	if err := c.AddResource("schema.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return sch
}

// validate reports why out does not validate, or "".
func validate(sch *sjs.Schema, out []byte) string {
	inst, err := sjs.UnmarshalJSON(bytes.NewReader(out))
	if err != nil {
		return "not JSON: " + err.Error()
	}
	if err := sch.Validate(inst); err != nil {
		return err.Error()
	}
	return ""
}

// Everything the compiled grammar of each fixture schema can produce (random
// walks through its machine) validates against the schema, and the walks
// reach every property.
func TestFixturesValidate(t *testing.T) {
	files, _ := filepath.Glob("testdata/*.json")
	if len(files) == 0 {
		t.Fatal("no fixtures")
	}
	for _, f := range files {
		schema, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		grammar, err := Grammar(schema)
		if err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		m := machine(t, grammar)
		sch := validator(t, schema)
		rng := rand.New(rand.NewPCG(1, uint64(len(f))))
		done := 0
		for range 2000 {
			out := walk(m, rng, 4000)
			if out == nil {
				continue
			}
			done++
			if why := validate(sch, out); why != "" {
				t.Fatalf("%s: generated %q does not validate: %s", f, out, why)
			}
		}
		if done < 1500 {
			t.Errorf("%s: only %d of 2000 walks finished", f, done)
		}
	}
}

// Hand-written documents: valid ones are accepted (within the whitespace
// policy and the property order), invalid ones refused.
func TestFixturesAccept(t *testing.T) {
	for file, cases := range map[string]map[string]bool{
		"person.json": {
			`{"name": "Ann", "age": 31}`:                                          true,
			"{\n  \"name\": \"Bo\",\n  \"age\": -2,\n  \"tags\": [\"b\\\"c\"]\n}": true,
			`{"name":"x","age":1,"email":"ab@cd.org","active":true,"score":null}`: true,
			`{"name": "x", "age": 1, "email": "AB@cd.org"}`:                       false,
			`{"age": 1, "name": "x"}`:                                             false, // order
			`{"name": "", "age": 1}`:                                              false, // minLength
			`{"name": "x"}`:                                                       false, // required
			`{"name": "x", "age": 1.5}`:                                           false,
			`{"name": "x", "age": 1, "extra": 1}`:                                 false,
			` {"name": "x", "age": 1}`:                                            false, // leading blank
		},
		"tree.json": {
			`{"value": 1, "children": [{"value": 2}, {"value": 3, "children": []}]}`: true,
			`{"value": 1, "children": [{"value": 2}, {"value": 3}, {"value": 4}]}`:   false,
		},
		"choice.json": {
			`"red"`: true, `null`: true, `{"x": 1e5, "y": [1,{"z":"w"}]}`: true, `["12-A", "99-Z"]`: true,
			`"blue"`: false, `[]`: false, `["1-A"]`: false, `{"y": [1,{"z":"w"}]}`: false,
		},
	} {
		schema, err := os.ReadFile("testdata/" + file)
		if err != nil {
			t.Fatal(err)
		}
		grammar, err := Grammar(schema)
		if err != nil {
			t.Fatal(err)
		}
		m := machine(t, grammar)
		for in, want := range cases {
			if got := m.Match([]byte(in)); got != want {
				t.Errorf("%s %s: %v, want %v", file, in, got, want)
			}
		}
	}
}

// The generic JSON grammar's outputs are valid JSON.
func TestJSONWalks(t *testing.T) {
	m := machine(t, JSON())
	rng := rand.New(rand.NewPCG(2, 3))
	for range 3000 {
		out := walk(m, rng, 3000)
		if out != nil && !json.Valid(out) {
			t.Fatalf("%q is not valid JSON", out)
		}
	}
}

// A pattern compiled into a string grammar accepts exactly the JSON
// encodings (as quoteJSON writes them) of the strings the regex matches.
func TestPatternMatchesRegex(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 5))
	atoms := []string{"a", "b", `"`, `\\`, `\n`, "é", ".", "[a-c]", `[^a"]`, `\d`, "[\\x00-\\x1f]", " "}
	var gen func(int) string
	gen = func(d int) string {
		if d == 0 || rng.IntN(3) == 0 {
			return atoms[rng.IntN(len(atoms))]
		}
		switch rng.IntN(4) {
		case 0:
			return "(" + gen(d-1) + "|" + gen(d-1) + ")"
		case 1:
			return "(" + gen(d-1) + ")" + []string{"+", "?", "{1,3}", "{2}"}[rng.IntN(4)]
		}
		return gen(d-1) + gen(d-1)
	}
	inputs := []string{"a", "b", `"`, `\`, "\n", "é", "x", "0", "\x01", " ", "\t"}
	for range 200 {
		p := "^" + gen(3) + "$"
		d, err := regex.Compile(p)
		if err != nil {
			continue
		}
		budget := gbnf.MaxSource
		body, err := pattern(p, &budget)
		if err != nil {
			continue
		}
		m := machine(t, prelude+"root ::= \"\\\"\" "+body+" \"\\\"\"\n")
		for range 100 {
			var b strings.Builder
			for range rng.IntN(6) {
				b.WriteString(inputs[rng.IntN(len(inputs))])
			}
			s := b.String()
			if got, want := m.Match([]byte(quoteJSON(s))), d.Match([]byte(s)); got != want {
				t.Fatalf("pattern %q, value %q (JSON %s): grammar %v, regex %v", p, s, quoteJSON(s), got, want)
			}
		}
	}
	// Unanchored, as JSON Schema says.
	budget := gbnf.MaxSource
	body, err := pattern("b+", &budget)
	if err != nil {
		t.Fatal(err)
	}
	m := machine(t, prelude+"root ::= \"\\\"\" "+body+" \"\\\"\"\n")
	for in, want := range map[string]bool{`"abbc"`: true, `"b"`: true, `"ac"`: false, `"\u0062"`: false} {
		if got := m.Match([]byte(in)); got != want {
			t.Errorf("b+ on %s: %v, want %v", in, got, want)
		}
	}
}

func TestErrors(t *testing.T) {
	for src, want := range map[string]string{
		`{"type": "object", "properties": {"a": {"type": "strin"}}}`: `line 1, col 49 (/properties/a/type): expected one of object, array`,
		`{"type": "integer", "minimum": 3}`:                          `line 1, col 32 (/minimum): keyword "minimum" is not supported`,
		`{"type": "object",`:                                         "line 1, col 19: unexpected end of the schema",
		"{\n  \"a\": }":                                              "line 2, col 8: invalid character '}'",
		`{"$ref": "#/$defs/missing"}`:                                `"#/$defs/missing" names no schema`,
		`{"$ref": "http://example.com/s.json"}`:                      "only references to #",
		`{"type": "string", "pattern": "(a"}`:                        `(/pattern): regex: at byte 2: expected ')'`,
		`{"type": "string", "pattern": "a", "maxLength": 3}`:         "pattern together with minLength/maxLength",
		`{"type": "array", "minItems": 3, "maxItems": 2}`:            "maxItems 2 is below minItems 3",
		`{"enum": []}`:                                               "expected a non-empty array",
		`false`:                                                      "accepts no value",
		`{"type": "object", "properties": {}, "required": ["x"]}`:    `required property "x" is not in properties`,
		`{"type": "string", "enum": [1, 2]}`:                         "no enum value has the schema's type",
		`{"anyOf": [{"type": "string"}], "type": "string"}`:          "anyOf together with other keywords",
		`{"type": "string", "maxLength": 100000}`:                    "100000 is over the supported",
		`{"type": "string", "pattern": "(a*)*"}`:                     "can match nothing",
		`{"a": 1, "a": 2}`:                                           `key "a" appears twice`,
		`{"anyOf": [{"$ref": "#"}, {"type": "null"}]}`:               "refers back to itself before any object or array",
		`{} {}`: "expected the end of the schema",
	} {
		_, err := Grammar([]byte(src))
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("Grammar(%s) = %v, want an error containing %q", src, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "\n") {
			t.Errorf("Grammar(%s): multi-line error %q", src, err)
		}
		if err != nil && !strings.Contains(err.Error(), "line ") {
			t.Errorf("Grammar(%s): error %q names no position", src, err)
		}
	}
}

// A schema's keys and strings in an error are cut: a 100 KB key gave a
// 200 KB line (in the pointer and in the message).
func TestLongStringsCut(t *testing.T) {
	long := strings.Repeat("k", 100000)
	for _, src := range []string{
		`{"` + long + `": 1}`,
		`{"$ref": "#/$defs/` + long + `"}`,
		`{"type": "object", "properties": {}, "required": ["` + long + `"]}`,
		`{"a": 1, "` + long + `": 2, "` + long + `": 3}`,
	} {
		_, err := Grammar([]byte(src))
		if err == nil || len(err.Error()) > 400 || !strings.Contains(err.Error(), "kkk…") {
			t.Errorf("error of %d bytes, want one short line: %.200s", len(fmt.Sprint(err)), err)
		}
	}
}

// The grammar grows with the schema, not faster: many required properties
// were written out N²/2 times (1,000 of them, 19 MB), and an array's items
// or an object nested in the second of two properties doubled at every
// level (20 levels, megabytes; the 200 the decoder allows, without end).
func TestGrammarGrowsWithSchema(t *testing.T) {
	nest := func(depth int, wrap string) string {
		s := `{"type": "integer"}`
		for range depth {
			s = strings.Replace(wrap, "S", s, 1)
		}
		return s
	}
	var props, req []string
	var dots []string
	for i := range 40 {
		dots = append(dots, fmt.Sprintf(`"p%d": {"pattern": "%s"}`, i, strings.Repeat(".", 2000)))
	}
	for i := range 1000 {
		props = append(props, fmt.Sprintf(`"p%d": {"type": "string"}`, i))
		req = append(req, fmt.Sprintf(`"p%d"`, i))
	}
	for name, src := range map[string]string{
		"arrays":     nest(20, `{"type": "array", "items": S}`),
		"objects":    nest(20, `{"type": "object", "properties": {"a": {"type": "integer"}, "b": S}}`),
		"optional":   nest(20, `{"type": "object", "properties": {"a": {"type": "integer"}, "b": S}, "required": ["a", "b"]}`),
		"properties": `{"type": "object", "properties": {` + strings.Join(props, ", ") + `}, "required": [` + strings.Join(req, ", ") + `]}`,
		// 40 patterns of 2,000 dots: each dot's class with the escapes is
		// 420 bytes, the 34 MB a budget shared by the patterns refuses.
		"patterns": `{"type": "object", "properties": {` + strings.Join(dots, ", ") + `}}`,
	} {
		g, err := Grammar([]byte(src))
		if name == "patterns" {
			if err == nil || !strings.Contains(err.Error(), "over the 1048576 bytes a grammar may have") {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if len(g) > len(prelude)+20*len(src) {
			t.Errorf("%s: a grammar of %d bytes for a schema of %d", name, len(g), len(src))
		}
		machine(t, g)
	}
}

// An object of many keys is read in time linear in them: each key was
// looked up by a scan of those before it (in the check for a duplicate,
// and for each required name), and 100,000 took 44 s.
func TestManyKeys(t *testing.T) {
	var props, req []string
	for i := range 50000 {
		props = append(props, fmt.Sprintf(`"p%d": {}`, i))
		req = append(req, fmt.Sprintf(`"p%d"`, i))
	}
	src := `{"properties": {` + strings.Join(props, ", ") + `}, "required": [` + strings.Join(req, ", ") + `]}`
	err := testmodels.Bounded(t, "50,000 keys", func() error { _, err := Grammar([]byte(src)); return err })
	if err == nil || !strings.Contains(err.Error(), "bytes a grammar may have") {
		t.Errorf("%v; want the grammar refused as too large", err)
	}
}

func FuzzGrammar(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.json")
	for _, file := range files {
		b, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	f.Add([]byte(`{"type": ["string", "null"], "maxLength": 3}`))
	f.Fuzz(func(t *testing.T, src []byte) {
		if len(src) > 1024 {
			return
		}
		g, err := Grammar(src)
		if err != nil {
			if strings.Contains(err.Error(), "\n") {
				t.Fatalf("multi-line error %q", err)
			}
			return
		}
		// Whatever compiles is a grammar our GBNF compiler takes.
		if _, err := gbnf.Compile(g); err != nil {
			t.Fatalf("schema %s gave a grammar that does not compile: %v\n%s", src, err, g)
		}
	})
}

// TestLargeEnum: an enum of 9,000 strings sharing prefixes (and
// multi-byte runes, numbers, an object, a value twice) accepts each value
// and nothing else: it was "too ambiguous", over gbnf.MaxStacks parses
// after the opening quote, when its values were one alternation.
func TestLargeEnum(t *testing.T) {
	var vals []any
	for i := range 9000 {
		vals = append(vals, fmt.Sprintf("val-%04d", i))
	}
	vals = append(vals, "val-", "val-00", "é", "éa", "ê", 12, 123, map[string]any{"a": 1}, "val-0001")
	src, _ := json.Marshal(map[string]any{"enum": vals})
	g, err := Grammar(src)
	if err != nil {
		t.Fatal(err)
	}
	m := machine(t, g)
	for _, v := range vals {
		in, _ := json.Marshal(v)
		if !m.Match(in) {
			t.Errorf("%s not accepted: %v", in, m.Err())
		}
	}
	for _, in := range []string{`"val-9000"`, `"val-0"`, `"val"`, `"e"`, `1`, `1234`, `{"a":2}`, `"val-00000"`} {
		if m.Match([]byte(in)) {
			t.Errorf("%s accepted", in)
		}
	}
	if m.Err() != nil {
		t.Errorf("the machine failed: %v", m.Err())
	}
}

package constrain

import (
	"fmt"
	"path/filepath"
	"strings"

	"chat/engine/constrain/gbnf"
	"chat/engine/constrain/jsonschema"
	"chat/engine/constrain/regex"
	"chat/models/regular"
)

// Spec names a constraint the way the flags and /format do.
type Spec struct {
	Kind string // KindJSON, KindSchema, KindRegex or KindGrammar
	Arg  string // the regex; a schema file or inline JSON; a grammar file
}

// Kinds of Spec.
const (
	KindJSON    = "json"    // any JSON value (--format json)
	KindSchema  = "schema"  // --json-schema FILE|JSON
	KindRegex   = "regex"   // --regex R
	KindGrammar = "grammar" // --grammar FILE (GBNF)
)

// String is the short form the panel shows: "json", "regex [a-z]+",
// "schema person.json", "grammar list.gbnf".
func (s Spec) String() string {
	switch s.Kind {
	case KindJSON:
		return "json"
	case KindSchema:
		if inline(s.Arg) {
			return "schema (inline)"
		}
		return "schema " + filepath.Base(s.Arg)
	case KindGrammar:
		return "grammar " + filepath.Base(s.Arg)
	}
	return s.Kind + " " + s.Arg
}

// Flag is the command-line flag that gives s, to name it in an error.
func (s Spec) Flag() string {
	switch s.Kind {
	case KindJSON:
		return "--format json"
	case KindSchema:
		return "--json-schema"
	}
	return "--" + s.Kind
}

// inline reports whether a --json-schema argument is the schema itself
// rather than a file name.
func inline(arg string) bool {
	a := strings.TrimSpace(arg)
	return strings.HasPrefix(a, "{") || a == "true"
}

// maxFile bounds a schema or grammar file.
const maxFile = 1 << 20

// Compile reads the files s names and compiles it to an automaton. Errors
// are one line naming the position and what was expected.
func Compile(s Spec) (Automaton, error) {
	src, name, err := s.Source()
	if err != nil {
		return nil, err
	}
	p, err := CompileText(s.Kind, src)
	if err != nil {
		return nil, prefix(name, err)
	}
	return p.Automaton(), nil
}

// Source is the text of s: the regex, the schema, the grammar ("" for
// JSON), read from its file when it names one (then name is the file).
func (s Spec) Source() (src, name string, err error) {
	switch s.Kind {
	case KindJSON, KindRegex:
		return s.Arg, "", nil
	case KindSchema:
		if inline(s.Arg) {
			return s.Arg, "", nil
		}
	case KindGrammar:
	default:
		return "", "", fmt.Errorf("constrain: unknown kind %q (want json, schema, regex or grammar)", s.Kind)
	}
	b, err := regular.ReadFile(s.Arg, maxFile) // a FIFO or pipe too, without hanging
	return string(b), s.Arg, err
}

// Program is a compiled constraint not yet bound to a vocabulary. It is
// immutable, so one Program serves any number of replies at once; each
// needs its own Automaton (a grammar machine builds its states as it runs),
// which Automaton makes without compiling again.
type Program struct {
	dfa *regex.DFA
	g   *gbnf.Grammar
}

// CompileText compiles a constraint given as text — the regex, the JSON
// Schema, the GBNF grammar; nothing for KindJSON — and never reads a file
// (what a server's clients send). Errors are one line naming the position.
func CompileText(kind, text string) (*Program, error) {
	var src string
	switch kind {
	case KindRegex:
		d, err := regex.Compile(text)
		if err != nil {
			return nil, err
		}
		return &Program{dfa: d}, nil
	case KindJSON:
		src = jsonschema.JSON()
	case KindSchema:
		g, err := jsonschema.Grammar([]byte(text))
		if err != nil {
			return nil, err
		}
		src = g
	case KindGrammar:
		src = text
	default:
		return nil, fmt.Errorf("constrain: unknown kind %q (want json, schema, regex or grammar)", kind)
	}
	g, err := gbnf.Compile(src)
	if err != nil {
		return nil, err
	}
	return &Program{g: g}, nil
}

// Automaton is a fresh automaton of p: the shared DFA of a regex, or a new
// machine on the shared grammar.
func (p *Program) Automaton() Automaton {
	if p.dfa != nil {
		return p.dfa
	}
	return gbnf.NewMachine(p.g)
}

func prefix(name string, err error) error {
	if name == "" {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}

// Build compiles s and binds it to a vocabulary.
func Build(s Spec, v *Vocab) (*Matcher, error) {
	a, err := Compile(s)
	if err != nil {
		return nil, err
	}
	return New(a, v, s.String()), nil
}

package constrain

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"chat/engine/constrain/gbnf"
	"chat/engine/constrain/jsonschema"
	"chat/engine/constrain/regex"
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
	switch s.Kind {
	case KindRegex:
		return regex.Compile(s.Arg)
	case KindJSON:
		return grammar(jsonschema.JSON(), "")
	case KindSchema:
		src, name := []byte(s.Arg), ""
		if !inline(s.Arg) {
			var err error
			if src, err = readFile(s.Arg); err != nil {
				return nil, err
			}
			name = s.Arg
		}
		g, err := jsonschema.Grammar(src)
		if err != nil {
			return nil, prefix(name, err)
		}
		return grammar(g, "")
	case KindGrammar:
		src, err := readFile(s.Arg)
		if err != nil {
			return nil, err
		}
		return grammar(string(src), s.Arg)
	}
	return nil, fmt.Errorf("constrain: unknown kind %q (want json, schema, regex or grammar)", s.Kind)
}

func grammar(src, name string) (Automaton, error) {
	g, err := gbnf.Compile(src)
	if err != nil {
		return nil, prefix(name, err)
	}
	return gbnf.NewMachine(g), nil
}

func prefix(name string, err error) error {
	if name == "" {
		return err
	}
	return fmt.Errorf("%s: %w", name, err)
}

func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxFile {
		return nil, errors.New(path + ": larger than 1 MiB")
	}
	return b, nil
}

// Build compiles s and binds it to a vocabulary.
func Build(s Spec, v *Vocab) (*Matcher, error) {
	a, err := Compile(s)
	if err != nil {
		return nil, err
	}
	return New(a, v, s.String()), nil
}

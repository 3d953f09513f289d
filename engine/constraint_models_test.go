package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"chat/engine/constrain"
	"chat/engine/sampler"
	"chat/models"
	"chat/models/llama/randmodel"
	"chat/models/load"
	"chat/models/testmodels"

	sjs "github.com/santhosh-tekuri/jsonschema/v6"
)

// constrainedModels are the real models the generation tests run on:
// stories260K (SentencePiece, 512 ids), student.pt (the course BPE) and a
// random-weight Llama with the 32,000-id llama-spm vocabulary, written by
// randmodel into a temporary folder.
func constrainedModels(t *testing.T) map[string]models.Model {
	t.Helper()
	out := map[string]models.Model{}
	for name, rel := range map[string]string{"stories260K": "stories260K/stories260K.gguf", "student": "course/student.pt"} {
		m, err := load.Open(testmodels.Path(t, rel))
		if err != nil {
			t.Fatal(err)
		}
		out[name] = m
	}
	spec := randmodel.Spec{Name: "random-32k", Arch: "llama", Vocab: "ggml-vocab-llama-spm.gguf",
		Dim: 64, Layers: 2, FFN: 128, Heads: 4, KVHeads: 2, Context: 1024, Eps: 1e-5, Tied: true, Seed: 12, Std: 0.5}
	path, _, err := randmodel.WriteFile(t.TempDir(), spec, testmodels.Path(t, "vocab/ggml-vocab-llama-spm.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := load.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	out["random-32k"] = m
	return out
}

// fixture is one constraint of the generation tests and the check its
// outputs must pass.
type fixture struct {
	name  string
	spec  constrain.Spec
	check func(text []byte) error
}

func fixtures(t *testing.T) []fixture {
	t.Helper()
	var out []fixture
	for _, re := range []string{`[a-z]{1,8}@[a-z]{2,6}\.(com|org)`, `(yes|no|maybe), because [^.\n]{1,20}\.`} {
		ref := regexp.MustCompile(`^(?:` + re + `)$`)
		out = append(out, fixture{"regex " + re, constrain.Spec{Kind: constrain.KindRegex, Arg: re}, func(b []byte) error {
			if !ref.Match(b) {
				return fmt.Errorf("does not match")
			}
			return nil
		}})
	}
	for _, file := range []string{"person.json", "tree.json", "choice.json", "list.json"} {
		path := filepath.Join("constrain", "jsonschema", "testdata", file)
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		doc, err := sjs.UnmarshalJSON(bytes.NewReader(src))
		if err != nil {
			t.Fatal(err)
		}
		c := sjs.NewCompiler()
		if err := c.AddResource(file, doc); err != nil {
			t.Fatal(err)
		}
		sch, err := c.Compile(file)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, fixture{"schema " + file, constrain.Spec{Kind: constrain.KindSchema, Arg: path}, func(b []byte) error {
			inst, err := sjs.UnmarshalJSON(bytes.NewReader(b))
			if err != nil {
				return err
			}
			return sch.Validate(inst)
		}})
	}
	out = append(out, fixture{"json", constrain.Spec{Kind: constrain.KindJSON}, func(b []byte) error {
		var v any
		return json.Unmarshal(b, &v)
	}})
	gpath := filepath.Join("constrain", "testdata", "expr.gbnf")
	out = append(out, fixture{"grammar expr.gbnf", constrain.Spec{Kind: constrain.KindGrammar, Arg: gpath}, parseExprGBNF})
	return out
}

// parseExprGBNF checks b against expr.gbnf by hand, independently of the
// GBNF compiler: expr ::= term (" "? [-+*/] " "? term){0,3}; term ::=
// [0-9]{1,3} | "(" expr ")".
func parseExprGBNF(b []byte) error {
	i := 0
	var expr, term func() bool
	term = func() bool {
		if i < len(b) && b[i] == '(' {
			i++
			if !expr() || i >= len(b) || b[i] != ')' {
				return false
			}
			i++
			return true
		}
		n := 0
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9' && n < 3; i++ {
			n++
		}
		return n > 0
	}
	expr = func() bool {
		if !term() {
			return false
		}
		for k := 0; k < 3; k++ {
			j := i
			if i < len(b) && b[i] == ' ' {
				i++
			}
			if i >= len(b) || !strings.ContainsRune("-+*/", rune(b[i])) {
				i = j
				return true
			}
			i++
			if i < len(b) && b[i] == ' ' {
				i++
			}
			if !term() {
				return false
			}
		}
		return true
	}
	if !expr() || i != len(b) {
		return fmt.Errorf("not an expr.gbnf sentence (stopped at byte %d)", i)
	}
	return nil
}

// promptFor is a short story opening, with BOS for models that take one.
func promptFor(m models.Model) []int {
	tok := m.Tokenizer()
	ids := tok.Encode("Once upon a time")
	if b := tok.BOS(); b >= 0 {
		ids = append([]int{b}, ids...)
	}
	return ids
}

// accepts runs b through a fresh automaton of spec.
func accepts(t *testing.T, spec constrain.Spec, b []byte) bool {
	t.Helper()
	a, err := constrain.Compile(spec)
	if err != nil {
		t.Fatal(err)
	}
	classOf, nc := a.Classes()
	s := a.Start()
	for _, c := range b {
		next := a.Table()[int(s)*nc+int(classOf[c])]
		if next == constrain.Unknown {
			next = a.Resolve(s, c)
		}
		if next < 0 {
			return false
		}
		s = next
	}
	return a.Accepting(s)
}

// Sampled replies (T 1.0, distinct seeds) under each fixture constraint
// on stories260K, student.pt and a random-weight 32k-vocabulary Llama are
// all complete (they end with the end id) and all match the regex,
// validate against the schema (santhosh-tekuri/jsonschema), parse as JSON
// or parse under the grammar; the text is exactly the bytes of the ids the
// constraint saw. 10 replies per pair by default, 1,000 with
// CHAT_SLOW_TESTS=1.
func TestConstrainedGenerations(t *testing.T) {
	n := uint64(10)
	if os.Getenv("CHAT_SLOW_TESTS") == "1" {
		n = 1000
	}
	ms := constrainedModels(t)
	for _, mname := range []string{"stories260K", "student", "random-32k"} {
		m := ms[mname]
		prompt := promptFor(m)
		v := constrain.NewVocab(m.Tokenizer(), m.Info().VocabSize)
		e := New(m)
		for _, f := range fixtures(t) {
			c, err := constrain.Build(f.spec, v)
			if err != nil {
				t.Fatal(err)
			}
			for seed := range n {
				res := run(t, e, Request{Prompt: prompt, MaxTokens: 400, Sampler: sampler.Params{Temperature: 1, Seed: seed}, Constraint: c})
				var raw []byte
				for _, id := range res.IDs {
					raw = append(raw, m.Tokenizer().TokenBytes(id)...)
				}
				switch {
				case res.Reason != ReasonEOT:
					t.Fatalf("%s %s seed %d: ended by %s: %q", mname, f.name, seed, res.Reason, res.Text)
				case string(raw) != res.Text:
					t.Fatalf("%s %s seed %d: text %q is not the bytes of its ids %q", mname, f.name, seed, res.Text, raw)
				case !accepts(t, f.spec, raw):
					t.Fatalf("%s %s seed %d: %q is not accepted by the constraint", mname, f.name, seed, raw)
				}
				if f.check != nil {
					if err := f.check(raw); err != nil {
						t.Fatalf("%s %s seed %d: %q: %v", mname, f.name, seed, raw, err)
					}
				}
			}
		}
		e.Close()
	}
}

// Constrained greedy takes, at every step, the best id the constraint
// allows: the unconstrained argmax whenever that is allowed. Under a
// constraint that allows any text, the greedy reply is the unconstrained
// one, id for id.
func TestConstrainedGreedyRealModels(t *testing.T) {
	ms := constrainedModels(t)
	for _, mname := range []string{"stories260K", "student", "random-32k"} {
		m := ms[mname]
		prompt := promptFor(m)
		v := constrain.NewVocab(m.Tokenizer(), m.Info().VocabSize)
		ends := []int{m.Tokenizer().EOT()}
		e := New(m)
		greedy := sampler.Params{Greedy: true}
		free := run(t, e, Request{Prompt: prompt, MaxTokens: 60, Sampler: greedy, StopIDs: ends})
		anyText, err := constrain.Build(constrain.Spec{Kind: constrain.KindRegex, Arg: `[^\x00]*`}, v)
		if err != nil {
			t.Fatal(err)
		}
		got := run(t, e, Request{Prompt: prompt, MaxTokens: 60, Sampler: greedy, StopIDs: ends, Constraint: anyText})
		if !slices.Equal(got.IDs, free.IDs) {
			t.Errorf("%s: constrained greedy %v, unconstrained %v", mname, got.IDs, free.IDs)
		}
		agree, steps := 0, 0
		for _, f := range fixtures(t) {
			c, err := constrain.Build(f.spec, v)
			if err != nil {
				t.Fatal(err)
			}
			res := run(t, e, Request{Prompt: prompt, MaxTokens: 200, Sampler: greedy, StopIDs: ends, Constraint: c})
			agree += checkGreedy(t, m, c, ends, prompt, 200, res)
			steps += len(res.IDs) + 1
		}
		t.Logf("%s: the unconstrained argmax was allowed at %d of %d steps", mname, agree, steps)
		e.Close()
	}
}

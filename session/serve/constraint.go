package serve

import (
	"bytes"
	"container/list"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"chat/engine/constrain"
	"chat/models"
	"chat/models/quote"
)

// Constrained output, as each API's clients ask for it, mapped onto the
// engine's constraint (engine/constrain):
//
//	OpenAI        response_format {"type": "json_object"} (llama-server and
//	              Fireworks add an optional "schema") or {"type":
//	              "json_schema", "json_schema": {"name", "schema", "strict"}};
//	              "text" is none
//	llama-server  grammar (GBNF text), json_schema (a schema)
//	vLLM          guided_json, guided_regex, guided_grammar, guided_choice
//	              (before 0.12), structured_outputs {json, regex, grammar,
//	              choice, json_object} (since 0.10.2)
//	SGLang        regex, ebnf (GBNF, as its default backend reads it)
//	ollama        format: "json" or a schema
//
// A request may ask for one constraint. Each distinct one is compiled once
// (a bounded LRU of programs, with warm matchers kept for reuse), over a
// vocabulary trie built once for the model.

// consSpec is the constraint a request asks for.
type consSpec struct {
	kind  string // constrain.KindJSON, KindSchema, KindRegex or KindGrammar
	text  string // the schema (compact JSON), regex or grammar; "" for json
	param string // the field it came from, for errors
}

// consFields are the OpenAI-style requests' constraint fields, in every
// server's spelling.
type consFields struct {
	ResponseFormat    json.RawMessage `json:"response_format"`
	Grammar           *string         `json:"grammar"`
	JSONSchema        json.RawMessage `json:"json_schema"`
	GuidedJSON        json.RawMessage `json:"guided_json"`
	GuidedRegex       *string         `json:"guided_regex"`
	GuidedGrammar     *string         `json:"guided_grammar"`
	GuidedChoice      []string        `json:"guided_choice"`
	StructuredOutputs json.RawMessage `json:"structured_outputs"`
	Regex             *string         `json:"regex"`
	EBNF              *string         `json:"ebnf"`
}

// absent: a field not sent, null, or empty (as llama-server and vLLM treat
// an empty grammar or regex).
func absent(raw json.RawMessage) bool {
	t := bytes.TrimSpace(raw)
	return len(t) == 0 || string(t) == "null"
}

// spec is the one constraint the fields ask for (nil: none).
func (f *consFields) spec() (*consSpec, *errBody) {
	var o oneSpec
	o.add(responseFormat("response_format", f.ResponseFormat))
	o.add(strSpec(constrain.KindGrammar, "grammar", f.Grammar))
	o.add(schemaSpec("json_schema", f.JSONSchema))
	o.add(schemaSpec("guided_json", f.GuidedJSON))
	o.add(strSpec(constrain.KindRegex, "guided_regex", f.GuidedRegex))
	o.add(strSpec(constrain.KindGrammar, "guided_grammar", f.GuidedGrammar))
	o.add(choice("guided_choice", f.GuidedChoice))
	o.add(structuredOutputs(f.StructuredOutputs))
	o.add(strSpec(constrain.KindRegex, "regex", f.Regex))
	o.add(strSpec(constrain.KindGrammar, "ebnf", f.EBNF))
	return o.result("")
}

// oneSpec gathers what several fields ask for, of which at most one may
// be set.
type oneSpec struct {
	got []*consSpec
	err *errBody // the first field refused
}

func (o *oneSpec) add(c *consSpec, e *errBody) {
	switch {
	case o.err != nil:
	case e != nil:
		o.err = e
	case c != nil:
		o.got = append(o.got, c)
	}
}

// result is the one constraint gathered (nil: none), the first refusal, or
// an error when two are set, under param ("": the second field's own).
func (o *oneSpec) result(param string) (*consSpec, *errBody) {
	switch {
	case o.err != nil:
		return nil, o.err
	case len(o.got) == 0:
		return nil, nil
	case len(o.got) == 1:
		return o.got[0], nil
	}
	if param == "" {
		param = o.got[1].param
	}
	return nil, badRequest(param, fmt.Sprintf("give one constraint: %s and %s are both set", o.got[0].param, o.got[1].param))
}

// strSpec is a constraint given as text (a regex or a grammar); empty is
// none.
func strSpec(kind, param string, p *string) (*consSpec, *errBody) {
	if p == nil || *p == "" {
		return nil, nil
	}
	return &consSpec{kind: kind, text: *p, param: param}, nil
}

// responseFormat reads OpenAI's response_format, or the Responses API's
// text.format (param), which has the schema beside the type.
func responseFormat(param string, raw json.RawMessage) (*consSpec, *errBody) {
	if absent(raw) {
		return nil, nil
	}
	var rf struct {
		Type       string          `json:"type"`
		Schema     json.RawMessage `json:"schema"` // llama-server's json_object (or json_schema) with a schema
		JSONSchema *struct {
			Name   string          `json:"name"`
			Schema json.RawMessage `json:"schema"`
			Strict *bool           `json:"strict"`
		} `json:"json_schema"`
	}
	if err := json.Unmarshal(raw, &rf); err != nil {
		return nil, badRequest(param, param+` must be an object such as {"type": "json_object"}`)
	}
	switch rf.Type {
	case "text":
		return nil, nil
	case "json_object":
		if !absent(rf.Schema) {
			return schemaSpec(param+".schema", rf.Schema)
		}
		return &consSpec{kind: constrain.KindJSON, param: param}, nil
	case "json_schema":
		switch {
		case rf.JSONSchema != nil && !absent(rf.JSONSchema.Schema):
			return schemaSpec(param+".json_schema.schema", rf.JSONSchema.Schema)
		case rf.JSONSchema == nil && !absent(rf.Schema):
			return schemaSpec(param+".schema", rf.Schema)
		case rf.JSONSchema == nil && param == "response_format":
			return nil, badRequest(param+".json_schema", `response_format of type json_schema needs "json_schema": {"name": ..., "schema": {...}}`)
		case rf.JSONSchema == nil:
			return nil, badRequest(param+".schema", param+` of type json_schema needs "schema": {...}`)
		}
		return &consSpec{kind: constrain.KindJSON, param: param}, nil // no schema: any JSON
	}
	return nil, badRequest(param+".type", fmt.Sprintf("%s type %s is not supported (text, json_object or json_schema)", param, quote.Quote(rf.Type)))
}

// schemaSpec reads a JSON Schema: the JSON value itself, or a string
// holding it (as vLLM's guided_json and some clients send it).
func schemaSpec(param string, raw json.RawMessage) (*consSpec, *errBody) {
	if absent(raw) {
		return nil, nil
	}
	raw = bytes.TrimSpace(raw)
	if raw[0] == '"' {
		var s string
		if err := json.Unmarshal(raw, &s); err != nil || strings.TrimSpace(s) == "" {
			return nil, badRequest(param, param+" must be a JSON Schema")
		}
		raw = []byte(s)
	}
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return nil, badRequest(param, param+" is not valid JSON: "+err.Error())
	}
	if c := b.Bytes()[0]; c != '{' && c != 't' && c != 'f' {
		return nil, badRequest(param, param+" must be a JSON Schema object")
	}
	return &consSpec{kind: constrain.KindSchema, text: b.String(), param: param}, nil
}

// choice is vLLM's choice: the output is one of the strings, as a regex.
func choice(param string, opts []string) (*consSpec, *errBody) {
	if opts == nil {
		return nil, nil
	}
	if len(opts) == 0 {
		return nil, badRequest(param, param+" is an empty list")
	}
	alts := make([]string, len(opts))
	for i, o := range opts {
		alts[i] = regexp.QuoteMeta(o)
	}
	return &consSpec{kind: constrain.KindRegex, text: strings.Join(alts, "|"), param: param}, nil
}

// structuredOutputs reads vLLM's structured_outputs.
func structuredOutputs(raw json.RawMessage) (*consSpec, *errBody) {
	const param = "structured_outputs"
	if absent(raw) {
		return nil, nil
	}
	var so struct {
		JSON          json.RawMessage `json:"json"`
		Regex         *string         `json:"regex"`
		Choice        []string        `json:"choice"`
		Grammar       *string         `json:"grammar"`
		JSONObject    *bool           `json:"json_object"`
		StructuralTag json.RawMessage `json:"structural_tag"`
	}
	if err := json.Unmarshal(raw, &so); err != nil {
		return nil, badRequest(param, "structured_outputs must be an object with one of json, regex, choice, grammar or json_object")
	}
	if !absent(so.StructuralTag) {
		return nil, badRequest(param+".structural_tag", "structured_outputs.structural_tag is not supported (json, regex, choice, grammar, json_object are)")
	}
	var o oneSpec
	o.add(schemaSpec(param+".json", so.JSON))
	o.add(strSpec(constrain.KindRegex, param+".regex", so.Regex))
	o.add(choice(param+".choice", so.Choice))
	o.add(strSpec(constrain.KindGrammar, param+".grammar", so.Grammar))
	if so.JSONObject != nil && *so.JSONObject {
		o.add(&consSpec{kind: constrain.KindJSON, param: param + ".json_object"}, nil)
	}
	return o.result(param)
}

// ollamaFormat reads ollama's format: "json" or a schema.
func ollamaFormat(raw json.RawMessage) (*consSpec, *errBody) {
	if absent(raw) {
		return nil, nil
	}
	var s string
	if json.Unmarshal(raw, &s) == nil {
		switch s {
		case "":
			return nil, nil
		case "json":
			return &consSpec{kind: constrain.KindJSON, param: "format"}, nil
		}
		return nil, badRequest("format", fmt.Sprintf(`format must be "json" or a JSON Schema object, got %s`, quote.Quote(s)))
	}
	return schemaSpec("format", raw)
}

// Bounds on the compiled constraints kept.
const (
	maxPrograms     = 64        // distinct constraints compiled and kept
	maxIdlePerSpec  = 4         // warm matchers kept per constraint
	maxIdleBytes    = 256 << 20 // the masks idle matchers may hold in all
	maxMatcherBytes = 64 << 20  // a matcher holding more is not kept
	maxCompiles     = 2         // compilations at once, bounding their memory
)

// constraints compiles what requests ask for once per distinct constraint
// (an LRU of maxPrograms) and hands out matchers: a matcher serves one
// reply at a time (it caches masks and, for a grammar, builds states as it
// runs), so a reply takes an idle warm one or a new one over the shared
// program and the model's vocabulary trie, built once.
type constraints struct {
	m         models.Model
	vocabOnce sync.Once
	vocab     *constrain.Vocab

	slots chan struct{} // compilations at once (maxCompiles)

	mu        sync.Mutex
	lru       *list.List // of *program, the most recently used first
	byKey     map[[32]byte]*list.Element
	idleBytes int64
	compiles  int // programs compiled (tests read it)
}

// program is one compiled constraint (or the error compiling it gave).
type program struct {
	key   [32]byte
	kind  string
	ready chan struct{} // closed once p or err is set
	p     *constrain.Program
	err   error
	idle  []*constrain.Matcher
}

func newConstraints(m models.Model) *constraints {
	return &constraints{m: m, slots: make(chan struct{}, maxCompiles), lru: list.New(), byKey: map[[32]byte]*list.Element{}}
}

// acquire compiles c (or finds it compiled) and returns a matcher for one
// reply; give it back with release when the reply has finished.
func (cs *constraints) acquire(c *consSpec) (*program, *constrain.Matcher, *errBody) {
	key := sha256.Sum256([]byte(c.kind + "\x00" + c.text))
	cs.mu.Lock()
	el, ok := cs.byKey[key]
	if ok {
		cs.lru.MoveToFront(el)
	} else {
		el = cs.lru.PushFront(&program{key: key, kind: c.kind, ready: make(chan struct{})})
		cs.byKey[key] = el
		for cs.lru.Len() > maxPrograms {
			cs.drop(cs.lru.Back())
		}
		cs.compiles++
	}
	p := el.Value.(*program)
	cs.mu.Unlock()
	if !ok {
		cs.slots <- struct{}{} // a hostile regex takes ~0.5 s and 100+ MB to refuse
		p.p, p.err = constrain.CompileText(c.kind, c.text)
		<-cs.slots
		close(p.ready)
	}
	<-p.ready
	if p.err != nil {
		return nil, nil, badRequest(c.param, fmt.Sprintf("%s: %s", c.param, oneLine(p.err.Error())))
	}
	cs.mu.Lock()
	var m *constrain.Matcher
	if n := len(p.idle); n > 0 {
		m, p.idle = p.idle[n-1], p.idle[:n-1]
		cs.idleBytes -= m.CacheBytes()
	}
	cs.mu.Unlock()
	if m == nil {
		cs.vocabOnce.Do(func() { cs.vocab = constrain.NewVocab(cs.m.Tokenizer(), cs.m.Info().VocabSize) })
		m = constrain.New(p.p.Automaton(), cs.vocab, p.kind)
	}
	return p, m, nil
}

// release keeps a matcher whose reply has finished for the next request
// with the same constraint, within the bounds.
func (cs *constraints) release(p *program, m *constrain.Matcher) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	el, ok := cs.byKey[p.key]
	if !ok || el.Value != p || len(p.idle) >= maxIdlePerSpec || m.CacheBytes() > maxMatcherBytes {
		return // evicted meanwhile, or enough kept
	}
	p.idle = append(p.idle, m)
	cs.idleBytes += m.CacheBytes()
	for e := cs.lru.Back(); e != nil && cs.idleBytes > maxIdleBytes; e = e.Prev() {
		cs.forget(e.Value.(*program))
	}
}

// drop removes a program from the cache (under mu).
func (cs *constraints) drop(el *list.Element) {
	p := el.Value.(*program)
	cs.forget(p)
	cs.lru.Remove(el)
	delete(cs.byKey, p.key)
}

// forget lets a program's idle matchers go (under mu).
func (cs *constraints) forget(p *program) {
	for _, m := range p.idle {
		cs.idleBytes -= m.CacheBytes()
	}
	p.idle = nil
}

// oneLine keeps an error message on one line.
var oneLine = strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace

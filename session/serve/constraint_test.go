package serve

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"chat/config/settings"
	"chat/engine"
	"chat/engine/constrain"
	"chat/engine/speculative"
	"chat/models"
	"chat/models/load"
	"chat/models/testmodels"
	"chat/session"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/shared"
	"github.com/prometheus/client_golang/prometheus/testutil"
	sjs "github.com/santhosh-tekuri/jsonschema/v6"
)

var (
	studentOnce sync.Once
	student     models.Model
	studentErr  error
)

// studentModel is the course's student.pt (course BPE), loaded once.
func studentModel(t testing.TB) models.Model {
	path := testmodels.Path(t, "course/student.pt")
	studentOnce.Do(func() { student, studentErr = load.Open(path) })
	if studentErr != nil {
		t.Fatal(studentErr)
	}
	return student
}

// personSchema uses most of the subset: nesting, bounds, an enum, a
// pattern, optional and required properties.
const personSchema = `{"type":"object","properties":{"name":{"type":"string","minLength":1,"maxLength":12},` +
	`"age":{"type":"integer"},"pets":{"type":"array","items":{"enum":["cat","dog","bird"]},"maxItems":3},` +
	`"email":{"type":"string","pattern":"^[a-z]{1,8}@[a-z]{2,6}\\.(com|org)$"},` +
	`"home":{"type":"object","properties":{"city":{"type":"string","maxLength":10}},"required":["city"],"additionalProperties":false}},` +
	`"required":["name","age","home"],"additionalProperties":false}`

// listGrammar is GBNF for a short comma-separated list.
const listGrammar = "root ::= item (\", \" item){0,3}\nitem ::= [a-z]{1,6}\n"

var listRe = regexp.MustCompile(`^[a-z]{1,6}(, [a-z]{1,6}){0,3}$`)

// validator checks a text against a schema with an independent validator.
func validator(t testing.TB, schema string) func(string) error {
	t.Helper()
	doc, err := sjs.UnmarshalJSON(strings.NewReader(schema))
	if err != nil {
		t.Fatal(err)
	}
	c := sjs.NewCompiler()
	if err := c.AddResource("s.json", doc); err != nil {
		t.Fatal(err)
	}
	sch, err := c.Compile("s.json")
	if err != nil {
		t.Fatal(err)
	}
	return func(text string) error {
		inst, err := sjs.UnmarshalJSON(strings.NewReader(text))
		if err != nil {
			return err
		}
		return sch.Validate(inst)
	}
}

func isJSON(text string) error {
	if !json.Valid([]byte(text)) {
		return errors.New("not JSON")
	}
	return nil
}

func matching(re *regexp.Regexp) func(string) error {
	return func(text string) error {
		if !re.MatchString(text) {
			return fmt.Errorf("does not match %s", re)
		}
		return nil
	}
}

// headlessWith is `chat MODEL --chat -n N --prompt Q` with a constraint
// flag: greedy when seed is nil, else T 1 and top-p 0.95 with that seed.
func headlessWith(t *testing.T, m models.Model, q string, n int, spec constrain.Spec, seed *uint64) string {
	t.Helper()
	v := settings.Defaults("chat")
	v.Mode, v.MaxTokens = "chat", n
	if seed == nil {
		v.Sampler.Greedy = true
	} else {
		v.RandomSeed, v.Sampler.Seed, v.Sampler.Temperature, v.Sampler.TopP, v.Sampler.TopK, v.Sampler.MinP = false, *seed, 1, 0.95, 0, 0
	}
	s, err := session.New(m, session.Options{Settings: v, Constraint: spec})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Send(q); err != nil {
		t.Fatal(err)
	}
	res := s.Wait()
	if res.Err != nil {
		t.Fatal(res.Err)
	}
	return res.Text
}

func jsonObject() openai.ChatCompletionNewParamsResponseFormatUnion {
	return openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONObject: &shared.ResponseFormatJSONObjectParam{}}
}

func jsonSchema(schema string) openai.ChatCompletionNewParamsResponseFormatUnion {
	return openai.ChatCompletionNewParamsResponseFormatUnion{OfJSONSchema: &shared.ResponseFormatJSONSchemaParam{
		JSONSchema: shared.ResponseFormatJSONSchemaJSONSchemaParam{Name: "person", Schema: json.RawMessage(schema), Strict: openai.Bool(true)}}}
}

// TestResponseFormatMatchesHeadless: on stories260K and student.pt,
// response_format json_object and json_schema give JSON that parses and
// validates, greedy and sampled, streamed or not, and the same text as the
// headless --format json / --json-schema run for the same message and seed.
func TestResponseFormatMatchesHeadless(t *testing.T) {
	for name, m := range map[string]func(testing.TB) models.Model{"stories260K": storiesModel, "student": studentModel} {
		t.Run(name, func(t *testing.T) {
			model := m(t)
			_, _, c := startModel(t, model, Options{Engine: engine.Options{MaxSeqs: 4, MaxWaiting: 8}})
			ctx := context.Background()
			for _, tc := range []struct {
				name  string
				rf    openai.ChatCompletionNewParamsResponseFormatUnion
				spec  constrain.Spec
				check func(string) error
			}{
				{"json_object", jsonObject(), constrain.Spec{Kind: constrain.KindJSON}, isJSON},
				{"json_schema", jsonSchema(personSchema), constrain.Spec{Kind: constrain.KindSchema, Arg: personSchema}, validator(t, personSchema)},
			} {
				const q, n = "Tell me about a cat.", 120
				for _, seed := range []*uint64{nil, new(uint64(7)), new(uint64(8))} {
					p := greedyChat(q, n)
					p.Model, p.ResponseFormat = "", tc.rf
					if seed != nil {
						p.Temperature, p.TopP, p.Seed = openai.Float(1), openai.Float(0.95), openai.Int(int64(*seed))
					}
					r, err := c.Chat.Completions.New(ctx, p)
					if err != nil {
						t.Fatalf("%s: %v", tc.name, err)
					}
					got := r.Choices[0].Message.Content
					if err := tc.check(got); err != nil {
						t.Errorf("%s seed %v: %q: %v", tc.name, seed, got, err)
					}
					if want := headlessWith(t, model, q, n, tc.spec, seed); got != want {
						t.Errorf("%s seed %v: served %q, headless %q", tc.name, seed, got, want)
					}
					if seed != nil {
						continue
					}
					st := c.Chat.Completions.NewStreaming(ctx, p)
					var acc openai.ChatCompletionAccumulator
					for st.Next() {
						acc.AddChunk(st.Current())
					}
					if err := st.Err(); err != nil || acc.Choices[0].Message.Content != got {
						t.Errorf("%s streamed %q (%v), whole %q", tc.name, acc.Choices[0].Message.Content, err, got)
					}
				}
			}
		})
	}
}

// post sends a JSON body and decodes the JSON answer.
func post(t *testing.T, url, body string) (int, map[string]any) {
	t.Helper()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v map[string]any
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, v
}

// TestConstraintFields: llama-server's grammar and json_schema, vLLM's
// guided_* and structured_outputs, SGLang's regex and ebnf, on chat and
// text completions; every reply satisfies its constraint.
func TestConstraintFields(t *testing.T) {
	_, ts, c := start(t, Options{Engine: engine.Options{MaxSeqs: 4, MaxWaiting: 16}})
	ctx := context.Background()
	email := regexp.MustCompile(`^[a-z]{1,8}@[a-z]{2,6}\.(com|org)$`)
	choice := regexp.MustCompile(`^(yes|no|a.b)$`)
	person := validator(t, personSchema)
	for _, tc := range []struct {
		field string
		value any
		check func(string) error
	}{
		{"grammar", listGrammar, matching(listRe)},
		{"json_schema", json.RawMessage(personSchema), person},
		{"guided_json", personSchema, person}, // a string holding the schema
		{"guided_regex", email.String()[1 : len(email.String())-1], matching(email)},
		{"guided_grammar", listGrammar, matching(listRe)},
		{"guided_choice", []string{"yes", "no", "a.b"}, matching(choice)},
		{"structured_outputs", map[string]any{"regex": `[a-z]{1,8}@[a-z]{2,6}\.(com|org)`}, matching(email)},
		{"structured_outputs", map[string]any{"json": json.RawMessage(personSchema)}, person},
		{"structured_outputs", map[string]any{"json_object": true}, isJSON},
		{"structured_outputs", map[string]any{"choice": []string{"yes", "no"}}, matching(choice)},
		{"regex", `[a-z]{1,8}@[a-z]{2,6}\.(com|org)`, matching(email)},
		{"ebnf", listGrammar, matching(listRe)},
		{"response_format", map[string]any{"type": "json_object", "schema": json.RawMessage(personSchema)}, person},
		{"response_format", map[string]any{"type": "text"}, nil},
	} {
		r, err := c.Chat.Completions.New(ctx, greedyChat("Once upon a time", 100), option.WithJSONSet(tc.field, tc.value))
		if err != nil {
			t.Fatalf("%s %v: %v", tc.field, tc.value, err)
		}
		if got := r.Choices[0].Message.Content; tc.check != nil && tc.check(got) != nil {
			t.Errorf("%s %v: %q: %v", tc.field, tc.value, got, tc.check(got))
		}
	}
	// Text completions: response_format and the llama-server fields.
	for _, tc := range []struct {
		field string
		value any
		check func(string) error
	}{
		{"response_format", map[string]any{"type": "json_object"}, isJSON},
		{"response_format", map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "p", "schema": json.RawMessage(personSchema)}}, person},
		{"grammar", listGrammar, matching(listRe)},
		{"guided_regex", `[0-9]{3}-[0-9]{4}`, matching(regexp.MustCompile(`^[0-9]{3}-[0-9]{4}$`))},
	} {
		r, err := c.Completions.New(ctx, openai.CompletionNewParams{Model: "stories260K",
			Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")}, MaxTokens: openai.Int(100), Temperature: openai.Float(0)},
			option.WithJSONSet(tc.field, tc.value))
		if err != nil {
			t.Fatalf("completions %s: %v", tc.field, err)
		}
		if got := r.Choices[0].Text; tc.check(got) != nil {
			t.Errorf("completions %s: %q: %v", tc.field, got, tc.check(got))
		}
	}
	// A sampled grammar reply with nesting, checked by a fresh recogniser.
	const expr = "root ::= expr\nexpr ::= term (\" \"? [-+*/] \" \"? term){0,3}\nterm ::= [0-9]{1,3} | \"(\" expr \")\"\n"
	for seed := range 4 {
		code, v := post(t, ts.URL+"/v1/chat/completions", fmt.Sprintf(`{"messages":[{"role":"user","content":"Sum?"}],"max_tokens":60,"temperature":1,"seed":%d,"grammar":%q}`, seed, expr))
		if code != 200 {
			t.Fatalf("expr grammar: %d %v", code, v)
		}
		got := v["choices"].([]any)[0].(map[string]any)["message"].(map[string]any)["content"].(string)
		if !accepts(t, constrain.KindGrammar, expr, got) {
			t.Errorf("seed %d: %q is not in the grammar", seed, got)
		}
	}
}

// accepts runs text through a fresh automaton of the constraint.
func accepts(t *testing.T, kind, src, text string) bool {
	t.Helper()
	p, err := constrain.CompileText(kind, src)
	if err != nil {
		t.Fatal(err)
	}
	a := p.Automaton()
	classOf, nc := a.Classes()
	s := a.Start()
	for _, b := range []byte(text) {
		next := a.Table()[int(s)*nc+int(classOf[b])]
		if next == constrain.Unknown {
			next = a.Resolve(s, b)
		}
		if next < 0 {
			return false
		}
		s = next
	}
	return a.Accepting(s)
}

// TestOllamaFormat: ollama's format "json" on /api/chat (streamed lines)
// and a schema on /api/generate give JSON that parses and validates.
func TestOllamaFormat(t *testing.T) {
	_, ts, _ := start(t, Options{})
	resp, err := http.Post(ts.URL+"/api/chat", "application/json", strings.NewReader(
		`{"model":"stories260K","messages":[{"role":"user","content":"A cat, as JSON"}],"format":"json","options":{"temperature":1,"seed":3,"num_predict":80}}`))
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var l struct {
			Message struct{ Content string }
		}
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			t.Fatal(err)
		}
		text.WriteString(l.Message.Content)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || isJSON(text.String()) != nil {
		t.Errorf("/api/chat format json: %d %q", resp.StatusCode, text.String())
	}
	code, v := post(t, ts.URL+"/api/generate", `{"model":"stories260K","prompt":"A person","stream":false,"format":`+personSchema+`,"options":{"temperature":0,"num_predict":120}}`)
	got, _ := v["response"].(string)
	if code != 200 || validator(t, personSchema)(got) != nil {
		t.Errorf("/api/generate format schema: %d %q %v", code, got, v)
	}
	code, v = post(t, ts.URL+"/api/generate", `{"model":"stories260K","prompt":"A person","format":"xml"}`)
	if msg, _ := v["error"].(string); code != 400 || !strings.Contains(msg, `format must be "json"`) {
		t.Errorf("format xml: %d %v", code, v)
	}
}

// TestConstrainedMixBatched: 8 constrained and 8 free greedy requests at
// once are batched together and each gives what it gives alone (the
// headless run), with speculation off and on.
func TestConstrainedMixBatched(t *testing.T) {
	m := storiesModel(t)
	gpath := filepath.Join(t.TempDir(), "list.gbnf")
	if err := os.WriteFile(gpath, []byte(listGrammar), 0o600); err != nil {
		t.Fatal(err)
	}
	type req struct {
		field string
		value any
		spec  constrain.Spec
		check func(string) error
	}
	kinds := []req{
		{"response_format", map[string]any{"type": "json_object"}, constrain.Spec{Kind: constrain.KindJSON}, isJSON},
		{"response_format", map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "p", "schema": json.RawMessage(personSchema)}},
			constrain.Spec{Kind: constrain.KindSchema, Arg: personSchema}, validator(t, personSchema)},
		{"guided_regex", `(red|green|blue) [a-z]{2,5}`, constrain.Spec{Kind: constrain.KindRegex, Arg: `(red|green|blue) [a-z]{2,5}`},
			matching(regexp.MustCompile(`^(red|green|blue) [a-z]{2,5}$`))},
		{"grammar", listGrammar, constrain.Spec{Kind: constrain.KindGrammar, Arg: gpath}, matching(listRe)},
	}
	const n = 80
	want := make([]string, len(questions))
	for i, q := range questions {
		if i < 8 {
			want[i] = headlessWith(t, m, q, n, kinds[i%4].spec, nil)
		} else {
			want[i] = headless(t, q, n)
		}
	}
	for _, method := range []speculative.Method{speculative.Off, speculative.NGram} {
		t.Run(method.String(), func(t *testing.T) {
			s, _, c := start(t, Options{Engine: engine.Options{MaxSeqs: 16, MaxWaiting: 16, MaxBatchTokens: 32}})
			if err := s.Engine().SetSpeculation(speculative.Config{Method: method}); err != nil {
				t.Fatal(err)
			}
			ask := func(i int) (string, error) {
				var opts []option.RequestOption
				if i < 8 {
					opts = append(opts, option.WithJSONSet(kinds[i%4].field, kinds[i%4].value))
				}
				r, err := c.Chat.Completions.New(context.Background(), greedyChat(questions[i], n), opts...)
				if err != nil {
					return "", err
				}
				return r.Choices[0].Message.Content, nil
			}
			// One at a time first: speculation runs on a lone request.
			for i := range 4 {
				got, err := ask(i)
				if err != nil {
					t.Fatal(err)
				}
				if got != want[i] {
					t.Errorf("%q alone: %q, headless %q", questions[i], got, want[i])
				}
			}
			if drafts := testutil.ToFloat64(s.met.drafts); (method != speculative.Off) != (drafts > 0) {
				t.Errorf("speculation %s: %v rounds", method, drafts)
			}
			got := make([]string, len(questions))
			var wg sync.WaitGroup
			for i := range questions {
				wg.Add(1)
				go func() {
					defer wg.Done()
					var err error
					if got[i], err = ask(i); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			for i, q := range questions {
				if got[i] != want[i] {
					t.Errorf("%q among 16: %q, headless %q", q, got[i], want[i])
				}
				if i < 8 {
					if err := kinds[i%4].check(got[i]); err != nil {
						t.Errorf("%q: %q: %v", q, got[i], err)
					}
				}
			}

			// The same requests held at their first text until all 16 have
			// started, so they are surely decoded in shared passes.
			bodies := make([]string, len(questions))
			for i, q := range questions {
				extra := ""
				if i < 8 {
					v, _ := json.Marshal(kinds[i%4].value)
					extra = fmt.Sprintf(",%q:%s", kinds[i%4].field, v)
				}
				bodies[i] = fmt.Sprintf(`{"messages":[{"role":"user","content":%q}],"temperature":0,"max_tokens":%d%s}`, q, n, extra)
			}
			res, most := gated(t, s, bodies)
			for i, r := range res {
				if r.Text != want[i] {
					t.Errorf("%q gated: %q, headless %q", questions[i], r.Text, want[i])
				}
			}
			if most < 2 {
				t.Error("no constrained reply shared a forward pass")
			}
		})
	}
}

// gated runs chat request bodies on s's engine as run does, each held at
// its first text until all have started; it returns the results and the
// largest batch a constrained reply's last pass held.
func gated(t *testing.T, s *Server, bodies []string) ([]engine.Result, int) {
	t.Helper()
	gate := make(chan struct{})
	replies := make([]*engine.Reply, len(bodies))
	cons := make([]bool, len(bodies))
	for i, b := range bodies {
		var req chatRequest
		if err := json.Unmarshal([]byte(b), &req); err != nil {
			t.Fatal(err)
		}
		j, e := s.chatJob(&req)
		if e != nil {
			t.Fatal(e)
		}
		r := j.request()
		if j.cons != nil {
			p, m, e := s.cons.acquire(j.cons)
			if e != nil {
				t.Fatal(e)
			}
			defer s.cons.release(p, m)
			r.Constraint, cons[i] = m, true
		}
		r.OnText = func(string) { <-gate }
		var err error
		if replies[i], err = s.Engine().Start(r); err != nil {
			t.Fatal(err)
		}
	}
	close(gate)
	out := make([]engine.Result, len(bodies))
	most := 0
	for i, r := range replies {
		out[i] = r.Wait()
		if out[i].Err != nil {
			t.Fatal(out[i].Err)
		}
		if cons[i] {
			most = max(most, out[i].Stats.BatchSeqs)
		}
	}
	return out, most
}

// TestConstraintErrors: a bad regex, schema or grammar, an unsupported
// schema keyword, two constraints at once or an unknown response_format
// type is a 400 in the OpenAI shape, with one line that says what is wrong.
func TestConstraintErrors(t *testing.T) {
	_, ts, c := start(t, Options{})
	ctx := context.Background()
	for _, tc := range []struct {
		field string
		value any
		param string
		want  string
	}{
		{"guided_regex", "(a", "guided_regex", "regex: at byte 2"},
		{"grammar", "root ::= (", "grammar", "gbnf: line 1"},
		{"grammar", "item ::= \"a\"", "grammar", "root"},
		{"json_schema", json.RawMessage(`{"type":"integer","minimum":3}`), "json_schema", "minimum"},
		{"response_format", map[string]any{"type": "json_schema", "json_schema": map[string]any{"name": "x", "schema": map[string]any{"type": 7}}},
			"response_format.json_schema.schema", "json schema: line 1"},
		{"response_format", map[string]any{"type": "yaml"}, "response_format.type", `"yaml" is not supported`},
		{"response_format", map[string]any{"type": "json_schema"}, "response_format.json_schema", "needs"},
		{"response_format", "json", "response_format", "must be an object"},
		{"guided_json", "{not json", "guided_json", "not valid JSON"},
		{"guided_choice", []string{}, "guided_choice", "empty"},
		{"structured_outputs", map[string]any{"regex": "a", "grammar": "root ::= \"a\""}, "structured_outputs", "give one constraint"},
		{"structured_outputs", map[string]any{"structural_tag": "{}"}, "structured_outputs.structural_tag", "not supported"},
	} {
		_, err := c.Chat.Completions.New(ctx, greedyChat("hi", 20), option.WithJSONSet(tc.field, tc.value))
		var ae *openai.Error
		if !errors.As(err, &ae) {
			t.Fatalf("%s %v: %v", tc.field, tc.value, err)
		}
		if msg := ae.Message; ae.StatusCode != 400 || !strings.Contains(msg, tc.want) || strings.ContainsAny(msg, "\n\r") ||
			ae.Param != tc.param || ae.Type != "invalid_request_error" {
			t.Errorf("%s %v: %d %q (param %q), want 400 %q about %s", tc.field, tc.value, ae.StatusCode, msg, ae.Param, tc.want, tc.param)
		}
	}
	// Two fields of different servers at once.
	code, v := post(t, ts.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"response_format":{"type":"json_object"},"grammar":"root ::= \"a\""}`)
	if e, _ := v["error"].(map[string]any); code != 400 || !strings.Contains(fmt.Sprint(e["message"]), "give one constraint: response_format and grammar") {
		t.Errorf("two constraints: %d %v", code, v)
	}
	// The same on /v1/completions and ollama.
	code, v = post(t, ts.URL+"/v1/completions", `{"prompt":"hi","guided_regex":"a{2,1}"}`)
	if code != 400 || v["error"] == nil {
		t.Errorf("completions, a bad regex: %d %v", code, v)
	}
	code, v = post(t, ts.URL+"/api/chat", `{"messages":[{"role":"user","content":"hi"}],"format":{"type":"object","allOf":[]}}`)
	if msg, _ := v["error"].(string); code != 400 || !strings.Contains(msg, "allOf") {
		t.Errorf("ollama, an unsupported keyword: %d %v", code, v)
	}
}

// TestConstraintCache: a constraint is compiled once however many requests
// send it (in any server's field), a failing one too; warm matchers are
// reused; the cache keeps at most maxPrograms constraints.
func TestConstraintCache(t *testing.T) {
	s, ts, c := start(t, Options{Engine: engine.Options{MaxSeqs: 4, MaxWaiting: 16}})
	ctx := context.Background()
	for range 3 {
		for _, f := range []string{"guided_regex", "regex"} {
			if _, err := c.Chat.Completions.New(ctx, greedyChat("hi", 20), option.WithJSONSet(f, "[a-z]{3}")); err != nil {
				t.Fatal(err)
			}
		}
		post(t, ts.URL+"/v1/chat/completions", `{"messages":[{"role":"user","content":"hi"}],"guided_regex":"(a"}`)
	}
	if n := s.cons.compiles; n != 2 {
		t.Errorf("%d compilations for one good and one bad constraint", n)
	}
	spec := &consSpec{kind: constrain.KindRegex, text: "[a-z]{3}"}
	p, m1, e := s.cons.acquire(spec)
	if e != nil {
		t.Fatal(e)
	}
	_, m2, _ := s.cons.acquire(spec) // while m1 is in use: another matcher
	if m1 == m2 {
		t.Fatal("one matcher handed out twice at once")
	}
	s.cons.release(p, m2)
	if _, m3, _ := s.cons.acquire(spec); m3 != m2 {
		t.Error("a released matcher was not reused")
	}
	for i := range maxPrograms + 10 {
		if _, _, e := s.cons.acquire(&consSpec{kind: constrain.KindRegex, text: fmt.Sprintf("x{%d}", i+1)}); e != nil {
			t.Fatal(e)
		}
	}
	if n := s.cons.lru.Len(); n != maxPrograms || len(s.cons.byKey) != maxPrograms {
		t.Errorf("%d programs kept (%d keys), want %d", n, len(s.cons.byKey), maxPrograms)
	}
	s.cons.release(p, m1) // evicted meanwhile: dropped, not kept
	if len(p.idle) != 0 {
		t.Error("an evicted program kept a matcher")
	}
}

// FuzzConstraintFields: any JSON in the constraint fields of every API is
// read into one constraint or refused with a 400; none panics. (Only the
// reading: nothing is compiled.)
func FuzzConstraintFields(f *testing.F) {
	for _, s := range []string{
		`{"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{"type":"object"},"strict":true}}}`,
		`{"response_format":{"type":"json_object","schema":"{\"type\":\"string\"}"}}`, `{"response_format":{"type":"text"}}`,
		`{"grammar":"root ::= \"a\"","json_schema":{"type":"integer"}}`, `{"guided_json":"{}","guided_choice":["a","b"]}`,
		`{"structured_outputs":{"json_object":true,"regex":"a"}}`, `{"structured_outputs":{"choice":[]}}`,
		`{"regex":"[a-z]+","ebnf":""}`, `{"format":"json"}`, `{"format":{"type":"object"}}`, `{"format":7}`,
		`{"response_format":null,"guided_regex":null}`, `{"json_schema":true}`, `{"json_schema":[1]}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		var c consFields
		if json.Unmarshal([]byte(body), &c) == nil {
			check(t, c.spec)
		}
		var o struct {
			Format json.RawMessage `json:"format"`
		}
		if json.Unmarshal([]byte(body), &o) == nil {
			check(t, func() (*consSpec, *errBody) { return ollamaFormat(o.Format) })
		}
	})
}

func check(t *testing.T, spec func() (*consSpec, *errBody)) {
	c, e := spec()
	switch {
	case c != nil && e != nil:
		t.Fatalf("both a constraint and an error: %+v %v", c, e)
	case e != nil && (e.status != 400 || e.err.Message == "" || strings.ContainsAny(e.err.Message, "\n")):
		t.Fatalf("error %+v", e)
	case c != nil && c.param == "":
		t.Fatalf("a constraint from no field: %+v", c)
	case c != nil && c.kind == constrain.KindSchema && !json.Valid([]byte(c.text)):
		t.Fatalf("a schema that is not JSON: %q", c.text)
	}
}

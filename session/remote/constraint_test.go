package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fakeServer answers /v1/models with owned_by, the version endpoints the
// servers have, and a one-piece stream; it keeps the last request body.
func fakeServer(t *testing.T, ownedBy, vllmVersion string, ollama bool) (*httptest.Server, *map[string]any) {
	t.Helper()
	var last map[string]any
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `{"object":"list","data":[{"id":"m","object":"model","owned_by":%q}]}`, ownedBy)
	})
	if vllmVersion != "" {
		mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintf(w, `{"version":%q}`, vllmVersion) })
	}
	if ollama {
		mux.HandleFunc("GET /api/version", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `{"version":"0.12.3"}`) })
	}
	stream := func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		last = nil
		json.Unmarshal(b, &last)
		fmt.Fprint(w, "data: {\"choices\":[{\"delta\":{\"content\":\"{}\"},\"text\":null,\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}
	mux.HandleFunc("POST /v1/chat/completions", stream)
	mux.HandleFunc("POST /v1/completions", stream)
	ts := httptest.NewServer(mux)
	t.Cleanup(ts.Close)
	return ts, &last
}

// TestConstraintFields: after Identify, each server gets each kind of
// constraint in the field it reads, or a one-line error before anything
// is sent when it cannot take it.
func TestConstraintFields(t *testing.T) {
	const schema = `{"type":"object","properties":{"a":{"type":"integer"}}}`
	cons := map[string]Constraint{
		"json": {ConstraintJSON, ""}, "schema": {ConstraintSchema, schema},
		"regex": {ConstraintRegex, "[a-z]+"}, "grammar": {ConstraintGrammar, `root ::= "a"`},
	}
	rfJSON := `{"response_format":{"type":"json_object"}}`
	rfSchema := `{"response_format":{"json_schema":{"name":"reply","schema":` + schema + `,"strict":true},"type":"json_schema"}}`
	for _, tc := range []struct {
		server, ownedBy, vllm string
		ollama                bool
		want                  map[string]string // constraint → the fields sent, or "error: ..."
	}{
		{KindChat, "chat", "", true, map[string]string{"json": rfJSON, "schema": rfSchema,
			"regex": `{"guided_regex":"[a-z]+"}`, "grammar": `{"grammar":"root ::= \"a\""}`}},
		{KindVLLM, "vllm", "0.11.0", false, map[string]string{"json": rfJSON, "schema": rfSchema,
			"regex": `{"structured_outputs":{"regex":"[a-z]+"}}`, "grammar": `{"structured_outputs":{"grammar":"root ::= \"a\""}}`}},
		{KindVLLM, "vllm", "0.9.2", false, map[string]string{"json": rfJSON, "schema": rfSchema,
			"regex": `{"guided_regex":"[a-z]+"}`, "grammar": `{"guided_grammar":"root ::= \"a\""}`}},
		{KindSGLang, "sglang", "", false, map[string]string{"json": rfJSON, "schema": rfSchema,
			"regex": `{"regex":"[a-z]+"}`, "grammar": `{"ebnf":"root ::= \"a\""}`}},
		{KindLlamaCpp, "llamacpp", "", false, map[string]string{"json": `{"json_schema":{}}`, "schema": `{"json_schema":` + schema + `}`,
			"regex": "error: llama-server takes no regex constraint", "grammar": `{"grammar":"root ::= \"a\""}`}},
		{KindOllama, "library", "", true, map[string]string{"json": rfJSON, "schema": rfSchema,
			"regex": "error: ollama takes JSON constraints only", "grammar": "error: ollama takes JSON constraints only"}},
		{"", "someone", "", false, map[string]string{"json": rfJSON, "schema": rfSchema,
			"regex": "error: this server (not one this app knows) takes JSON constraints only"}},
	} {
		ts, last := fakeServer(t, tc.ownedBy, tc.vllm, tc.ollama)
		c, err := New(ts.URL, "")
		if err != nil {
			t.Fatal(err)
		}
		ms, err := c.Models(context.Background())
		if err != nil || len(ms) != 1 || ms[0].OwnedBy != tc.ownedBy {
			t.Fatalf("%s: models %v %+v", tc.server, err, ms)
		}
		if k := c.Identify(context.Background(), ms[0].OwnedBy); k != tc.server {
			t.Fatalf("owned_by %q: kind %q, want %q", tc.ownedBy, k, tc.server)
		}
		for name, want := range tc.want {
			con := cons[name]
			*last = nil
			st, err := c.Stream(context.Background(), Request{Model: "m", Messages: []Message{{"user", "hi"}}, Constraint: &con})
			if msg, isErr := strings.CutPrefix(want, "error: "); isErr {
				if err == nil || !strings.Contains(err.Error(), msg) || strings.Contains(err.Error(), "\n") || *last != nil {
					t.Errorf("%s %s %s: %v (sent %v), want an error %q", tc.server, tc.vllm, name, err, *last, msg)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s %s: %v", tc.server, name, err)
			}
			for st.Next() {
			}
			st.Close()
			var wantFields map[string]any
			if err := json.Unmarshal([]byte(want), &wantFields); err != nil {
				t.Fatal(err)
			}
			for k, v := range wantFields {
				got, _ := json.Marshal((*last)[k])
				exp, _ := json.Marshal(v)
				if string(got) != string(exp) {
					t.Errorf("%s %s %s: %s = %s, want %s", tc.server, tc.vllm, name, k, got, exp)
				}
			}
		}
	}
	// ollama reads response_format on chat completions only.
	ts, _ := fakeServer(t, "library", "", true)
	c, _ := New(ts.URL, "")
	c.Identify(context.Background(), "library")
	if _, err := c.Stream(context.Background(), Request{Model: "m", Prompt: "hi", Constraint: &Constraint{ConstraintJSON, ""}}); err == nil ||
		!strings.Contains(err.Error(), "chat replies only") {
		t.Errorf("ollama, raw text with a constraint: %v", err)
	}
}

func TestVersionBefore(t *testing.T) {
	for v, want := range map[string]bool{"0.9.1": true, "0.10.1.1": true, "0.10.2": false, "0.11.0rc1": false,
		"v0.8.5": true, "1.0": false, "0.10": true, "nonsense": false, "": false} {
		if got := versionBefore(v, 0, 10, 2); got != want {
			t.Errorf("%q before 0.10.2: %v", v, got)
		}
	}
}

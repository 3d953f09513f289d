package remote

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// Constrained output on a server: each server reads a constraint in its
// own fields, so the client first finds which server it talks to
// (Identify), then sends the constraint where that server reads it:
//
//	            JSON, JSON Schema     regex                  grammar (GBNF)
//	chat serve  response_format       guided_regex           grammar
//	vLLM        response_format       structured_outputs     structured_outputs
//	                                  (guided_regex < 0.10.2) (guided_grammar < 0.10.2)
//	SGLang      response_format       regex                  ebnf
//	llama.cpp   json_schema           —                      grammar
//	ollama      response_format       —                      —
//	(unknown)   response_format       —                      —
//
// ollama reads response_format on chat completions only. A constraint a
// server cannot take is an error before anything is sent.

// Server kinds, as their /v1/models (owned_by) and /metrics name them.
const (
	KindChat     = "chat"
	KindVLLM     = "vllm"
	KindSGLang   = "sglang"
	KindLlamaCpp = "llama.cpp"
	KindOllama   = "ollama"
)

// Kinds of Constraint (the engine's constrain.Kind* names).
const (
	ConstraintJSON    = "json"
	ConstraintSchema  = "schema"
	ConstraintRegex   = "regex"
	ConstraintGrammar = "grammar"
)

// Constraint limits a reply: Kind ConstraintJSON (any JSON value),
// ConstraintSchema (Text is the schema's JSON), ConstraintRegex (Text is
// the regex) or ConstraintGrammar (Text is GBNF, llama.cpp's format).
type Constraint struct {
	Kind, Text string
}

// Identify settles which server this is, from the owned_by of its model in
// /v1/models (chat serve, vLLM, SGLang and llama-server name themselves
// there), else ollama when /api/version answers; "" for another
// OpenAI-compatible server. For vLLM it reads /version, since its
// constraint fields changed in 0.10.2. It returns the kind.
func (c *Client) Identify(ctx context.Context, ownedBy string) string {
	switch ownedBy {
	case "chat":
		c.kind = KindChat
	case "vllm":
		c.kind = KindVLLM
		var v struct {
			Version string `json:"version"`
		}
		if c.getJSON(ctx, "/version", &v) == nil {
			c.legacyVLLM = versionBefore(v.Version, 0, 10, 2)
		}
	case "sglang":
		c.kind = KindSGLang
	case "llamacpp":
		c.kind = KindLlamaCpp
	default:
		var v struct {
			Version string `json:"version"`
		}
		if c.getJSON(ctx, "/api/version", &v) == nil && v.Version != "" {
			c.kind = KindOllama
		}
	}
	return c.kind
}

// Kind is the server's kind as Identify found it ("" when unknown).
func (c *Client) Kind() string { return c.kind }

func (c *Client) getJSON(ctx context.Context, path string, v any) error {
	resp, err := c.do(ctx, "GET", path, nil)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	return json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(v)
}

// versionBefore reports whether version ("0.9.1", "0.11.0rc1") is before
// major.minor.patch; an unreadable version is taken as recent.
func versionBefore(version string, want ...int) bool {
	parts := strings.SplitN(version, ".", 4)
	for i, w := range want {
		digits := "0" // 0.10 is 0.10.0
		if i < len(parts) {
			digits = strings.TrimPrefix(parts[i], "v")
		}
		end := strings.IndexFunc(digits, func(r rune) bool { return r < '0' || r > '9' })
		if end >= 0 {
			digits = digits[:end]
		}
		n, err := strconv.Atoi(digits)
		if err != nil {
			return false
		}
		if n != w {
			return n < w
		}
	}
	return false
}

// ConstraintFields are the request fields that ask this server for con on
// a chat completion (chat) or a text completion, or an error saying, in one
// line, that this server cannot take that kind of constraint.
func (c *Client) ConstraintFields(con Constraint, chat bool) (map[string]any, error) {
	name := c.kind
	if name == "" {
		name = "this server (not one this app knows)"
	}
	switch con.Kind {
	case ConstraintJSON, ConstraintSchema:
		if con.Kind == ConstraintSchema && !json.Valid([]byte(con.Text)) {
			return nil, fmt.Errorf("the JSON schema is not valid JSON")
		}
		switch {
		case c.kind == KindLlamaCpp: // its own field, read on every endpoint
			schema := json.RawMessage("{}")
			if con.Kind == ConstraintSchema {
				schema = json.RawMessage(con.Text)
			}
			return map[string]any{"json_schema": schema}, nil
		case c.kind == KindOllama && !chat:
			return nil, fmt.Errorf("ollama constrains chat replies only, not raw text completions")
		case con.Kind == ConstraintJSON:
			return map[string]any{"response_format": map[string]any{"type": "json_object"}}, nil
		}
		return map[string]any{"response_format": map[string]any{"type": "json_schema",
			"json_schema": map[string]any{"name": "reply", "schema": json.RawMessage(con.Text), "strict": true}}}, nil
	case ConstraintRegex:
		switch c.kind {
		case KindChat:
			return map[string]any{"guided_regex": con.Text}, nil
		case KindVLLM:
			if c.legacyVLLM {
				return map[string]any{"guided_regex": con.Text}, nil
			}
			return map[string]any{"structured_outputs": map[string]any{"regex": con.Text}}, nil
		case KindSGLang:
			return map[string]any{"regex": con.Text}, nil
		case KindLlamaCpp:
			return nil, fmt.Errorf("llama-server takes no regex constraint: write it as a GBNF grammar (--grammar, /format grammar)")
		}
		return nil, fmt.Errorf("%s takes JSON constraints only (--format json, --json-schema), not a regex", name)
	case ConstraintGrammar:
		switch c.kind {
		case KindChat, KindLlamaCpp:
			return map[string]any{"grammar": con.Text}, nil
		case KindVLLM:
			if c.legacyVLLM {
				return map[string]any{"guided_grammar": con.Text}, nil
			}
			return map[string]any{"structured_outputs": map[string]any{"grammar": con.Text}}, nil
		case KindSGLang:
			return map[string]any{"ebnf": con.Text}, nil
		}
		return nil, fmt.Errorf("%s takes JSON constraints only (--format json, --json-schema), not a grammar", name)
	}
	return nil, fmt.Errorf("remote: unknown constraint kind %q", con.Kind)
}

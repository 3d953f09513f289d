package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"chat/models/load"
	"chat/models/testmodels"

	"github.com/ollama/ollama/api"
)

// TestOllamaClient drives the server with ollama's own Go client the way
// `ollama run` and oterm do: a heartbeat, /api/show (oterm cannot start a
// chat without it), a chat without messages (the CLI's load request),
// then a streamed chat, and the listings.
func TestOllamaClient(t *testing.T) {
	s, ts, _ := start(t, Options{})
	win := s.e.Window()
	u, _ := url.Parse(ts.URL)
	c := api.NewClient(u, http.DefaultClient)
	ctx := context.Background()
	if err := c.Heartbeat(ctx); err != nil {
		t.Fatal("heartbeat:", err)
	}
	show, err := c.Show(ctx, &api.ShowRequest{Model: "stories260K:latest"})
	if err != nil {
		t.Fatal("show:", err)
	}
	if show.Details.Family != "llama" || len(show.Capabilities) != 1 || show.Capabilities[0] != "completion" ||
		show.ModelInfo["llama.context_length"] != float64(win) || !strings.Contains(show.Parameters, fmt.Sprint("num_ctx ", win)) {
		t.Errorf("show: %+v", show)
	}
	var load api.ChatResponse
	if err := c.Chat(ctx, &api.ChatRequest{Model: "stories260K"}, func(r api.ChatResponse) error { load = r; return nil }); err != nil || !load.Done || load.DoneReason != "load" {
		t.Errorf("load: %+v, %v", load, err)
	}
	var text strings.Builder
	var last api.ChatResponse
	req := &api.ChatRequest{Model: "stories260K", Messages: []api.Message{{Role: "user", Content: "Once upon a time"}},
		Options: map[string]any{"temperature": 0, "num_predict": 12}}
	if err := c.Chat(ctx, req, func(r api.ChatResponse) error {
		text.WriteString(r.Message.Content)
		last = r
		return nil
	}); err != nil {
		t.Fatal("chat:", err)
	}
	if !last.Done || last.DoneReason != "length" || last.EvalCount != 12 || text.Len() == 0 {
		t.Errorf("chat: %q, last %+v", text.String(), last)
	}
	var gen api.GenerateResponse
	no := false
	if err := c.Generate(ctx, &api.GenerateRequest{Model: "stories260K", Prompt: "Once upon a time", Raw: true, Stream: &no,
		Options: map[string]any{"temperature": 0, "num_predict": 8}}, func(r api.GenerateResponse) error { gen = r; return nil }); err != nil ||
		!gen.Done || gen.Response == "" || gen.EvalCount != 8 {
		t.Errorf("generate: %+v, %v", gen, err)
	}
	list, err := c.List(ctx)
	if err != nil || len(list.Models) != 1 || list.Models[0].Name != "stories260K:latest" {
		t.Errorf("list: %+v, %v", list, err)
	}
	ps, err := c.ListRunning(ctx)
	if err != nil || len(ps.Models) != 1 || ps.Models[0].Model != "stories260K:latest" || ps.Models[0].ContextLength != win {
		t.Errorf("ps: %+v, %v", ps, err)
	}
	if v, err := c.Version(ctx); err != nil || v == "" {
		t.Errorf("version: %q, %v", v, err)
	}
	_, err = c.Show(ctx, &api.ShowRequest{Model: "llama3"})
	var se api.StatusError
	if !errors.As(err, &se) || se.StatusCode != http.StatusNotFound || !strings.Contains(se.ErrorMessage, "llama3") {
		t.Errorf("show of another model: %v", err)
	}
}

// TestOllamaErrors: what ollamaJob and the field checks refuse (a knob out
// of range, a format, a field this server lacks, a prompt past the
// context) goes out through writeErr, in ollama's shape with the refusal's
// own status, on /api/chat and /api/generate alike.
func TestOllamaErrors(t *testing.T) {
	_, ts, _ := start(t, Options{})
	long := strings.Repeat("once upon a time ", 600) // past the context, but not so long that tooLong refuses it unread
	for _, c := range []struct{ fields, want string }{
		{`"options":{"temperature":5}`, "temperature must be between 0 and 2"},
		{`"format":"xml"`, "format must be"},
		{`"template":"{{.Prompt}}"`, "template is not supported"},
		{`"suffix":"x"`, "suffix (fill in the middle) is not supported"},
	} {
		for route, text := range map[string]string{
			"/api/chat":     `"messages":[{"role":"user","content":"hi"}]`,
			"/api/generate": `"prompt":"hi"`,
		} {
			code, v := post(t, ts.URL+route, `{"model":"stories260K",`+text+","+c.fields+"}")
			if msg, _ := v["error"].(string); code != http.StatusBadRequest || !strings.Contains(msg, c.want) || len(v) != 1 {
				t.Errorf("%s with %s: %d %v, want a 400 {\"error\": %q...}", route, c.fields, code, v, c.want)
			}
		}
	}
	code, v := post(t, ts.URL+"/api/generate", `{"model":"stories260K","raw":true,"prompt":"`+long+`"}`)
	if msg, _ := v["error"].(string); code != http.StatusBadRequest || !strings.Contains(msg, "maximum context length") || strings.Contains(msg, "at least") {
		t.Errorf("/api/generate past the context: %d %v", code, v)
	}
}

// /api/generate wrapped the prompt of a model without a chat template
// (stories260K, a pre-training checkpoint) in the fallback ChatML, so
// "Once upon a time" reached the model as 40-odd tokens of markup it never
// saw and the reply was noise, where ollama renders such a model's prompt
// with its default template, {{ .Prompt }}, and `chat run` continues the
// text. Such a model continues the prompt as raw: true does; a chat model
// still gets its template.
func TestOllamaGenerateRawModel(t *testing.T) {
	gen := func(ts string, body string) map[string]any {
		t.Helper()
		code, v := post(t, ts+"/api/generate", body)
		if code != 200 {
			t.Fatalf("%s: %d %v", body, code, v)
		}
		return v
	}
	_, ts, _ := start(t, Options{})
	plain := gen(ts.URL, `{"model":"stories260K","prompt":"Once upon a time","stream":false,"options":{"temperature":0,"num_predict":12}}`)
	raw := gen(ts.URL, `{"model":"stories260K","prompt":"Once upon a time","raw":true,"stream":false,"options":{"temperature":0,"num_predict":12}}`)
	if plain["response"] != raw["response"] || plain["prompt_eval_count"] != raw["prompt_eval_count"] || raw["prompt_eval_count"] != float64(5) {
		t.Errorf("stories260K: /api/generate %v, with raw: true %v", plain, raw)
	}

	chat, err := load.Open(testmodels.Path(t, "embed/student-chat.pt"))
	if err != nil {
		t.Fatal(err)
	}
	_, cts, _ := startModel(t, chat, Options{})
	plain = gen(cts.URL, `{"model":"student-chat","prompt":"Hi","stream":false,"options":{"temperature":0,"num_predict":4}}`)
	raw = gen(cts.URL, `{"model":"student-chat","prompt":"Hi","raw":true,"stream":false,"options":{"temperature":0,"num_predict":4}}`)
	if n, _ := plain["prompt_eval_count"].(float64); n <= raw["prompt_eval_count"].(float64) {
		t.Errorf("student-chat: the template was not applied: %v, raw %v", plain, raw)
	}
}

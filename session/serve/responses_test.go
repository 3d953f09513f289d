package serve

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"chat/engine"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
)

// greedyResponse asks for what greedyChat asks, as a response: instructions
// (when any) and a user message.
func greedyResponse(instructions, q string, n int64) responses.ResponseNewParams {
	p := responses.ResponseNewParams{Model: "stories260K", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(q)},
		Temperature: openai.Float(0), MaxOutputTokens: openai.Int(n)}
	if instructions != "" {
		p.Instructions = openai.String(instructions)
	}
	return p
}

// TestResponses: /v1/responses through openai-go's client gives the reply
// /v1/chat/completions gives for the same messages, greedy and with a
// seed, in the Responses shape; a conversation in input items (text parts,
// an assistant turn sent back) is the same conversation.
func TestResponses(t *testing.T) {
	_, _, c := start(t, Options{Engine: engine.Options{MaxSeqs: 4, MaxWaiting: 4}})
	ctx := context.Background()
	chat := greedyChat("Tom had a red ball", 48)
	chat.Messages = append([]openai.ChatCompletionMessageParamUnion{openai.SystemMessage("Be kind.")}, chat.Messages...)
	want, err := c.Chat.Completions.New(ctx, chat)
	if err != nil {
		t.Fatal(err)
	}
	r, err := c.Responses.New(ctx, greedyResponse("Be kind.", "Tom had a red ball", 48))
	if err != nil {
		t.Fatal(err)
	}
	if got := r.OutputText(); got != want.Choices[0].Message.Content || got == "" {
		t.Errorf("response %q, chat completion %q", got, want.Choices[0].Message.Content)
	}
	if !strings.HasPrefix(r.ID, "resp_") || r.Object != "response" || r.CreatedAt == 0 || r.Status != responses.ResponseStatusIncomplete ||
		r.Model != "stories260K" || r.Instructions.OfString != "Be kind." || r.MaxOutputTokens != 48 {
		t.Errorf("the response's fields: %s", r.RawJSON())
	}
	if len(r.Output) != 1 || r.Output[0].Type != "message" || r.Output[0].Role != "assistant" || !strings.HasPrefix(r.Output[0].ID, "msg_") ||
		r.Output[0].Status != "incomplete" || len(r.Output[0].Content) != 1 || r.Output[0].Content[0].Type != "output_text" ||
		r.Output[0].Content[0].JSON.Annotations.Raw() != "[]" {
		t.Errorf("the output: %s", r.RawJSON())
	}
	u := r.Usage
	if u.InputTokens != want.Usage.PromptTokens || u.OutputTokens != want.Usage.CompletionTokens || u.TotalTokens != u.InputTokens+u.OutputTokens {
		t.Errorf("usage %+v, the chat completion's %+v", u, want.Usage)
	}

	// A conversation as items; the same with a seed.
	chat = greedyChat("And then?", 32)
	chat.Messages = []openai.ChatCompletionMessageParamUnion{openai.DeveloperMessage("Be brief."), openai.UserMessage("Tom had a red ball"),
		openai.AssistantMessage("He liked it."), openai.UserMessage("And then?")}
	items := responses.ResponseInputParam{
		responses.ResponseInputItemParamOfMessage("Be brief.", responses.EasyInputMessageRoleDeveloper),
		responses.ResponseInputItemParamOfMessage(responses.ResponseInputMessageContentListParam{responses.ResponseInputContentParamOfInputText("Tom had a red ball")}, responses.EasyInputMessageRoleUser),
		responses.ResponseInputItemParamOfOutputMessage([]responses.ResponseOutputMessageContentUnionParam{{OfOutputText: &responses.ResponseOutputTextParam{Text: "He liked it."}}}, "msg_1", responses.ResponseOutputMessageStatusCompleted),
		responses.ResponseInputItemParamOfMessage("And then?", responses.EasyInputMessageRoleUser),
	}
	for _, seed := range []int64{-1, 7} {
		p := greedyResponse("", "", 32)
		p.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: items}
		var opts []option.RequestOption
		if seed >= 0 {
			chat.Temperature, chat.Seed = openai.Float(1), openai.Int(seed)
			p.Temperature = openai.Float(1)
			opts = append(opts, option.WithJSONSet("seed", seed))
		}
		want, err := c.Chat.Completions.New(ctx, chat)
		if err != nil {
			t.Fatal(err)
		}
		r, err := c.Responses.New(ctx, p, opts...)
		if err != nil {
			t.Fatal(err)
		}
		if r.OutputText() != want.Choices[0].Message.Content || r.Usage.InputTokens != want.Usage.PromptTokens {
			t.Errorf("seed %d: the items gave %q (%d prompt tokens), the messages %q (%d)", seed, r.OutputText(), r.Usage.InputTokens,
				want.Choices[0].Message.Content, want.Usage.PromptTokens)
		}
	}
}

// TestResponsesStream: the stream's events come in the Responses order,
// numbered from 0; the deltas make the text of the same request without
// streaming, which the done events and the final response hold. A reply
// that ends (at a stop string: stories260K writes on) is completed, one
// whose budget runs out incomplete, streamed or not.
func TestResponsesStream(t *testing.T) {
	_, _, c := start(t, Options{})
	ctx := context.Background()
	for _, n := range []int64{200, 3} {
		p := greedyResponse("", "Once upon a time", n)
		stop := option.WithJSONSet("stop", ".")
		whole, err := c.Responses.New(ctx, p, stop)
		if err != nil {
			t.Fatal(err)
		}
		status, reason := responses.ResponseStatusCompleted, ""
		if n == 3 {
			status, reason = responses.ResponseStatusIncomplete, "max_output_tokens"
		}
		if whole.Status != status || whole.IncompleteDetails.Reason != reason || whole.Output[0].Status != string(status) {
			t.Errorf("max_output_tokens %d: status %s, %q; want %s, %q", n, whole.Status, whole.IncompleteDetails.Reason, status, reason)
		}
		st := c.Responses.NewStreaming(ctx, p, stop)
		var types []string
		var deltas string
		var last responses.ResponseStreamEventUnion
		for st.Next() {
			ev := st.Current()
			if ev.SequenceNumber != int64(len(types)) {
				t.Errorf("event %d (%s) is numbered %d", len(types), ev.Type, ev.SequenceNumber)
			}
			types = append(types, ev.Type)
			switch ev.Type {
			case "response.output_text.delta":
				deltas += ev.Delta
			case "response.output_text.done":
				if ev.Text != whole.OutputText() {
					t.Errorf("output_text.done %q, want %q", ev.Text, whole.OutputText())
				}
			}
			last = ev
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		final := "response.completed"
		if n == 3 {
			final = "response.incomplete"
		}
		if len(types) < 9 {
			t.Fatalf("the events: %v", types)
		}
		open := []string{"response.created", "response.in_progress", "response.output_item.added", "response.content_part.added"}
		end := []string{"response.output_text.done", "response.content_part.done", "response.output_item.done", final}
		head, tail := types[:4], types[len(types)-4:]
		if strings.Join(head, " ") != strings.Join(open, " ") || strings.Join(tail, " ") != strings.Join(end, " ") {
			t.Errorf("the events: %v", types)
		}
		for _, ty := range types[4 : len(types)-4] {
			if ty != "response.output_text.delta" {
				t.Errorf("between the opening and closing events: %s", ty)
			}
		}
		if deltas != whole.OutputText() || last.Response.OutputText() != deltas || last.Response.Status != status || last.Response.Usage.OutputTokens != whole.Usage.OutputTokens {
			t.Errorf("max_output_tokens %d: deltas %q, final response %q (%s, %d tokens); not streamed %q (%d tokens)", n, deltas,
				last.Response.OutputText(), last.Response.Status, last.Response.Usage.OutputTokens, whole.OutputText(), whole.Usage.OutputTokens)
		}
	}
}

// TestResponsesFormat: text.format json_schema gives JSON that validates,
// the text /v1/chat/completions' response_format gives for the same schema
// (sent as is: a Go map would sort its properties, which the output
// follows); json_object gives JSON.
func TestResponsesFormat(t *testing.T) {
	_, _, c := start(t, Options{})
	ctx := context.Background()
	var schema map[string]any
	if err := json.Unmarshal([]byte(personSchema), &schema); err != nil {
		t.Fatal(err)
	}
	const q, n = "Tell me about a cat.", 120
	p := greedyResponse("", q, n)
	p.Text.Format = responses.ResponseFormatTextConfigUnionParam{OfJSONSchema: &responses.ResponseFormatTextJSONSchemaConfigParam{Name: "person", Schema: schema}}
	r, err := c.Responses.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if err := validator(t, personSchema)(r.OutputText()); err != nil {
		t.Errorf("json_schema: %q: %v", r.OutputText(), err)
	}
	if r.Text.Format.Type != "json_schema" || r.Text.Format.Name != "person" {
		t.Errorf("text.format is not repeated: %s", r.Text.RawJSON())
	}
	chat := greedyChat(q, n)
	chat.ResponseFormat = jsonSchema(personSchema)
	want, err := c.Chat.Completions.New(ctx, chat)
	if err != nil {
		t.Fatal(err)
	}
	asIs := option.WithJSONSet("text", map[string]any{"format": map[string]any{"type": "json_schema", "name": "person", "schema": json.RawMessage(personSchema)}})
	if r, err = c.Responses.New(ctx, greedyResponse("", q, n), asIs); err != nil {
		t.Fatal(err)
	}
	if r.OutputText() != want.Choices[0].Message.Content {
		t.Errorf("json_schema: response %q, chat completion %q", r.OutputText(), want.Choices[0].Message.Content)
	}
	p.Text.Format = responses.ResponseFormatTextConfigUnionParam{OfJSONObject: &responses.ResponseFormatJSONObjectParam{}}
	if r, err = c.Responses.New(ctx, p); err != nil {
		t.Fatal(err)
	}
	if err := isJSON(r.OutputText()); err != nil {
		t.Errorf("json_object: %q: %v", r.OutputText(), err)
	}
}

// TestResponsesRefusals: what the server cannot honour is a 400 naming the
// field, through the client; each field at its default passes.
func TestResponsesRefusals(t *testing.T) {
	_, ts, c := start(t, Options{})
	ctx := context.Background()
	p := func(edit func(*responses.ResponseNewParams)) responses.ResponseNewParams {
		q := greedyResponse("", "hi", 4)
		edit(&q)
		return q
	}
	for _, tc := range []struct {
		param string
		p     responses.ResponseNewParams
		opts  []option.RequestOption
	}{
		{"tools", p(func(q *responses.ResponseNewParams) {
			q.Tools = []responses.ToolUnionParam{responses.ToolParamOfFunction("f", map[string]any{"type": "object"}, false)}
		}), nil},
		{"previous_response_id", p(func(q *responses.ResponseNewParams) { q.PreviousResponseID = openai.String("resp_1") }), nil},
		{"store", p(func(q *responses.ResponseNewParams) { q.Store = openai.Bool(true) }), nil},
		{"background", p(func(q *responses.ResponseNewParams) { q.Background = openai.Bool(true) }), nil},
		{"reasoning", p(func(*responses.ResponseNewParams) {}), []option.RequestOption{option.WithJSONSet("reasoning", map[string]any{"effort": "high"})}},
		{"top_logprobs", p(func(q *responses.ResponseNewParams) { q.TopLogprobs = openai.Int(2) }), nil},
		{"n", p(func(*responses.ResponseNewParams) {}), []option.RequestOption{option.WithJSONSet("n", 2)}},
		{"max_output_tokens", p(func(q *responses.ResponseNewParams) { q.MaxOutputTokens = openai.Int(0) }), nil},
		{"temperature", p(func(q *responses.ResponseNewParams) { q.Temperature = openai.Float(3) }), nil},
		{"input[0].type", p(func(q *responses.ResponseNewParams) {
			q.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{responses.ResponseInputItemParamOfFunctionCallOutput("42")}}
		}), nil},
		{"input[0].content", p(func(q *responses.ResponseNewParams) {
			q.Input = responses.ResponseNewParamsInputUnion{OfInputItemList: responses.ResponseInputParam{responses.ResponseInputItemParamOfMessage(
				responses.ResponseInputMessageContentListParam{responses.ResponseInputContentParamOfInputImage(responses.ResponseInputImageDetailAuto)}, responses.EasyInputMessageRoleUser)}}
		}), nil},
		{"input[0].role", p(func(*responses.ResponseNewParams) {}), []option.RequestOption{option.WithJSONSet("input", []any{map[string]any{"role": "tool", "content": "x"}})}},
		{"text.format.type", p(func(*responses.ResponseNewParams) {}), []option.RequestOption{option.WithJSONSet("text", map[string]any{"format": map[string]any{"type": "yaml"}})}},
		{"text.format.schema", p(func(*responses.ResponseNewParams) {}), []option.RequestOption{option.WithJSONSet("text", map[string]any{"format": map[string]any{"type": "json_schema", "name": "x"}})}},
		{"input", p(func(q *responses.ResponseNewParams) { q.Input = responses.ResponseNewParamsInputUnion{} }), nil},
	} {
		_, err := c.Responses.New(ctx, tc.p, tc.opts...)
		var ae *openai.Error
		if !errors.As(err, &ae) || ae.StatusCode != http.StatusBadRequest || ae.Param != tc.param || strings.Contains(ae.Message, "\n") {
			t.Errorf("%s: %v, want a 400 naming it", tc.param, err)
		}
	}
	// What clients send at its default passes.
	code, v := post(t, ts.URL+"/v1/responses", `{"input":"hi","max_output_tokens":2,"store":false,"tools":[],"tool_choice":"auto",`+
		`"background":false,"previous_response_id":null,"reasoning":null,"include":[],"truncation":"disabled","n":1,"text":{"format":{"type":"text"}},"metadata":{"k":"v"}}`)
	if code != 200 || v["status"] != "incomplete" || v["metadata"].(map[string]any)["k"] != "v" {
		t.Errorf("the defaults: %d %v", code, v)
	}
	// One switch holds the refusal: a Responses field's comes before an
	// OpenAI route's, and either before the input is read.
	for body, param := range map[string]string{
		`{"previous_response_id":"resp_1","tools":[{"type":"function","name":"f"}]}`: "previous_response_id",
		`{"tools":[{"type":"function","name":"f"}]}`:                                 "tools",
	} {
		code, v := post(t, ts.URL+"/v1/responses", body)
		if e, _ := v["error"].(map[string]any); code != http.StatusBadRequest || e == nil || e["param"] != param {
			t.Errorf("%s: %d %v, want a 400 naming %s", body, code, v, param)
		}
	}
}

// TestOpenAIRefusedFields: every OpenAI route refuses logit_bias and tool
// calling with a 400 naming the field (they were ignored, the reply made
// without them), and takes them at their off values.
func TestOpenAIRefusedFields(t *testing.T) {
	_, ts, _ := start(t, Options{})
	routes := map[string]string{
		"/v1/chat/completions": `"messages":[{"role":"user","content":"hi"}],"max_tokens":2`,
		"/v1/completions":      `"prompt":"hi","max_tokens":2`,
		"/v1/responses":        `"input":"hi","max_output_tokens":2`,
	}
	for route, base := range routes {
		for _, f := range openaiOff {
			on := `{"x":1}`
			if f.name == "tools" || f.name == "functions" {
				on = `[{"type":"function","function":{"name":"f"}}]`
			}
			code, v := post(t, ts.URL+route, "{"+base+`,"`+f.name+`":`+on+"}")
			e, _ := v["error"].(map[string]any)
			if code != http.StatusBadRequest || e == nil || e["param"] != f.name {
				t.Errorf("%s with %s: %d %v, want a 400 naming it", route, f.name, code, v)
			}
		}
		code, v := post(t, ts.URL+route, "{"+base+`,"logit_bias":{},"tools":[],"tool_choice":"none","function_call":"auto"}`)
		if code != http.StatusOK {
			t.Errorf("%s with the fields off: %d %v", route, code, v)
		}
	}
}

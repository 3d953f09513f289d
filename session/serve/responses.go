package serve

import (
	"encoding/json"
	"fmt"
	"maps"
	"net/http"
	"time"

	"chat/engine"
	"chat/models/quote"
	"chat/session"
)

// OpenAI's Responses API, POST /v1/responses: the turn a chat completion
// generates, asked for and answered in the Responses shape (the OpenAI
// quickstart's first call). Nothing is stored, so a conversation goes
// whole in input, and what needs storage or tools is refused.

type responsesRequest struct {
	// temperature, top_p and stream; seed, stop and the other sampling
	// fields as on /v1/chat/completions
	knobs
	Model           string            `json:"model"`
	Input           json.RawMessage   `json:"input"`
	Instructions    *string           `json:"instructions"`
	MaxOutputTokens *int              `json:"max_output_tokens"`
	Metadata        map[string]string `json:"metadata"`
	Text            *struct {
		Format json.RawMessage `json:"format"`
	} `json:"text"`
}

// responsesOff are the Responses fields this server cannot honour, beside
// every OpenAI route's (openaiOff: tools among them).
var responsesOff = []offField{
	{"previous_response_id", "previous_response_id is not supported: responses are not stored; send the whole conversation in input", nil},
	{"conversation", "conversation is not supported: conversations are not stored; send the whole conversation in input", nil},
	{"store", "store is not supported: responses are not stored (send store: false, or leave it out)", nil},
	{"background", "background is not supported: send stream: true to read a long reply as it comes", nil},
	{"reasoning", "reasoning is not supported: the model's reply is all it writes", nil},
	{"include", "include is not supported: a response holds its text only", nil},
	{"top_logprobs", "top_logprobs is not supported here: /v1/chat/completions gives logprobs", nil},
	{"prompt", "prompt (a stored prompt template) is not supported: send the text in input", nil},
	{"truncation", `truncation "auto" is not supported: a conversation past the context is a 400`, []string{`"disabled"`}},
	{"n", "n is not supported here (a response has one output): /v1/chat/completions gives several replies", []string{"1"}},
	{"best_of", "best_of is not supported here (a response has one output): /v1/chat/completions has it", []string{"1"}},
	{"use_beam_search", "use_beam_search is not supported here: /v1/chat/completions has it", nil},
}

// readFields keeps the further sampler fields and finds a field set that
// this server cannot honour (decode calls it): knobs.off, the one switch,
// holds a Responses field's refusal before an OpenAI one's.
func (req *responsesRequest) readFields(all map[string]json.RawMessage) {
	req.knobs.readFields(all)
	if e := firstOn(all, responsesOff); e != nil {
		req.off = e
	}
}

// inputItem is an item of input: a message, with type "message" or none
// (as the docs' examples send it).
type inputItem struct {
	Type string `json:"type"`
	chatMessage
}

// responsesParts are the Responses API's text parts: input_text, and
// output_text in an assistant turn sent back.
var responsesParts = []string{"input_text", "output_text"}

// messages are input (a text: one user message), after instructions as a
// system message.
func (req *responsesRequest) messages() ([]session.Message, *errBody) {
	var items []chatMessage
	var text string
	switch {
	case absent(req.Input):
		return nil, badRequest("input", "input is required: a text or a list of messages")
	case json.Unmarshal(req.Input, &text) == nil:
		items = []chatMessage{{Role: "user", Content: req.Input}}
	default:
		var list []inputItem
		if err := json.Unmarshal(req.Input, &list); err != nil {
			return nil, badRequest("input", "input must be a text or a list of messages")
		}
		for i, it := range list {
			if it.Type != "" && it.Type != "message" {
				return nil, badRequest(fmt.Sprintf("input[%d].type", i),
					fmt.Sprintf("input items of type %s are not supported: this server reads messages", quote.Quote(it.Type)))
			}
			items = append(items, it.chatMessage)
		}
	}
	msgs, e := conversation("input", items, responsesParts)
	if e != nil || req.Instructions == nil || *req.Instructions == "" {
		return msgs, e
	}
	return append([]session.Message{{Role: session.System, Content: *req.Instructions}}, msgs...), nil
}

// responsesJob checks the request and renders its turn, as chatJob does.
func (s *Server) responsesJob(req *responsesRequest) (job, *errBody) {
	if req.off != nil {
		return job{}, req.off
	}
	if e := s.model(req.Model); e != nil {
		return job{}, e
	}
	msgs, e := req.messages()
	if e != nil {
		return job{}, e
	}
	n, e := budget("max_output_tokens", req.MaxOutputTokens)
	if e != nil {
		return job{}, e
	}
	cons, e := responseFormat("text.format", req.format())
	if e != nil {
		return job{}, e
	}
	return s.turnJob("input", msgs, n, &req.knobs, cons)
}

func (req *responsesRequest) format() json.RawMessage {
	if req.Text == nil {
		return nil
	}
	return req.Text.Format
}

// response is a response object as it stands: in progress, then finished
// with the engine's result.
type response struct {
	id, msgID string
	created   int64
	model     string
	echo      map[string]any // the request's settings, which a response repeats
	res       *engine.Result
}

func (s *Server) newResponse(req *responsesRequest) *response {
	num := func(p *float64) float64 {
		if p == nil {
			return 1 // the API's default temperature and top_p
		}
		return *p
	}
	format := any(map[string]string{"type": "text"})
	if f := req.format(); !absent(f) {
		format = f
	}
	meta := req.Metadata
	if meta == nil {
		meta = map[string]string{}
	}
	return &response{id: newID("resp_"), msgID: newID("msg_"), created: time.Now().Unix(), model: s.name, echo: map[string]any{
		"instructions": req.Instructions, "max_output_tokens": req.MaxOutputTokens, "temperature": num(req.Temperature),
		"top_p": num(req.TopP), "text": map[string]any{"format": format}, "metadata": meta,
		"tools": []any{}, "tool_choice": "none", "parallel_tool_calls": false, "store": false, "background": false,
		"previous_response_id": nil,
	}}
}

// status is the response's: in_progress, completed, incomplete (the
// budget or the context ran out) or failed.
func (o *response) status() string {
	switch {
	case o.res == nil:
		return "in_progress"
	case o.res.Err != nil:
		return "failed"
	case o.res.Reason == engine.ReasonLength:
		return "incomplete"
	}
	return "completed"
}

// part is the message's text part.
func (o *response) part(text string) map[string]any {
	return map[string]any{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": []any{}}
}

// message is the output item: empty while in progress.
func (o *response) message() map[string]any {
	content := []any{}
	if o.res != nil {
		content = append(content, o.part(o.res.Text))
	}
	st := o.status()
	if st == "failed" {
		st = "incomplete"
	}
	return map[string]any{"type": "message", "id": o.msgID, "status": st, "role": "assistant", "content": content}
}

// object is the response object.
func (o *response) object() map[string]any {
	b := map[string]any{"id": o.id, "object": "response", "created_at": o.created, "model": o.model, "status": o.status(),
		"error": nil, "incomplete_details": nil, "output": []any{}, "usage": nil}
	maps.Copy(b, o.echo)
	if o.res == nil {
		return b
	}
	st := o.res.Stats
	b["output"] = []any{o.message()}
	b["usage"] = map[string]any{"input_tokens": st.PromptTokens, "input_tokens_details": map[string]int{"cached_tokens": st.ReusedTokens},
		"output_tokens": st.GenTokens, "output_tokens_details": map[string]int{"reasoning_tokens": 0},
		"total_tokens": st.PromptTokens + st.GenTokens}
	switch o.status() {
	case "incomplete":
		b["incomplete_details"] = map[string]string{"reason": "max_output_tokens"}
	case "failed":
		b["error"] = map[string]string{"code": "server_error", "message": o.res.Err.Error()}
	}
	return b
}

func (s *Server) responses(w http.ResponseWriter, r *http.Request) {
	var req responsesRequest
	if e := decode(w, r, &req); e != nil {
		writeErr(w, r, e)
		return
	}
	j, e := s.responsesJob(&req)
	if e != nil {
		writeErr(w, r, e)
		return
	}
	o := s.newResponse(&req)
	if req.Stream {
		s.streamResponse(w, r, j, o)
		return
	}
	res, ok := s.whole(w, r, j, 1)
	if !ok {
		return
	}
	o.res = &res[0]
	writeJSON(w, http.StatusOK, o.object())
}

// streamResponse sends the reply as the Responses API's events: the
// response created and in progress, the message and its text part added,
// the text's deltas, then the text, part and message done and the
// response completed (or incomplete, or failed), each numbered in
// sequence. The opening events go with the first piece, so an error found
// before it (a full server) is still sent as an error response.
func (s *Server) streamResponse(w http.ResponseWriter, r *http.Request, j job, o *response) {
	sse := newSSE(w)
	seq := 0
	send := func(typ string, ev map[string]any) error {
		ev["type"], ev["sequence_number"] = typ, seq
		seq++
		return sse.event(typ, ev)
	}
	inPart := func(ev map[string]any) map[string]any {
		ev["item_id"], ev["output_index"], ev["content_index"] = o.msgID, 0, 0
		return ev
	}
	opened := false
	open := func() error {
		if opened {
			return nil
		}
		opened = true
		if err := send("response.created", map[string]any{"response": o.object()}); err != nil {
			return err
		}
		if err := send("response.in_progress", map[string]any{"response": o.object()}); err != nil {
			return err
		}
		if err := send("response.output_item.added", map[string]any{"output_index": 0, "item": o.message()}); err != nil {
			return err
		}
		return send("response.content_part.added", inPart(map[string]any{"part": o.part("")}))
	}
	res, e := s.run(r.Context(), j, func(p piece) error {
		if p.text == "" {
			return nil
		}
		if err := open(); err != nil {
			return err
		}
		return send("response.output_text.delta", inPart(map[string]any{"delta": p.text, "logprobs": []any{}}))
	})
	if e != nil {
		writeErr(w, r, e)
		return
	}
	if res.Reason == engine.ReasonStopped || open() != nil {
		return // the client went away
	}
	o.res = &res
	if res.Err != nil {
		send("response.failed", map[string]any{"response": o.object()})
		return
	}
	send("response.output_text.done", inPart(map[string]any{"text": res.Text, "logprobs": []any{}}))
	send("response.content_part.done", inPart(map[string]any{"part": o.part(res.Text)}))
	send("response.output_item.done", map[string]any{"output_index": 0, "item": o.message()})
	last := "response.completed"
	if o.status() == "incomplete" {
		last = "response.incomplete"
	}
	send(last, map[string]any{"response": o.object()})
}

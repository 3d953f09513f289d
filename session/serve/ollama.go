package serve

import (
	"cmp"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"

	"chat/engine"
	"chat/models/quote"
	"chat/session"
)

// ollama's API (/api/chat, /api/generate, /api/tags, /api/show, /api/ps,
// and /api/version, which reports 0.6.0, an API level the clients that
// check it accept), so ollama clients connect unchanged. Replies stream as JSON lines unless
// "stream": false. The sampler defaults are ollama's: temperature 0.8,
// top_k 40, top_p 0.9, repeat_penalty 1.1 over the last 64 ids.

type ollamaOptions struct {
	llamaKnobs
	NumPredict *int `json:"num_predict"`

	peer map[string]json.RawMessage // the further sampler fields (peerknobs.go)
}

// llamaKnobs are the sampler fields that ollama's options and llama-server's
// /completion spell alike (each API keeps its own defaults).
type llamaKnobs struct {
	Temperature      *float64 `json:"temperature"`
	TopP             *float64 `json:"top_p"`
	TopK             *int     `json:"top_k"`
	MinP             *float64 `json:"min_p"`
	Seed             *int64   `json:"seed"`
	Stop             stops    `json:"stop"`
	RepeatPenalty    *float64 `json:"repeat_penalty"`
	RepeatLastN      *int     `json:"repeat_last_n"`
	PresencePenalty  *float64 `json:"presence_penalty"`
	FrequencyPenalty *float64 `json:"frequency_penalty"`
}

type ollamaRequest struct {
	Model    string          `json:"model"`
	Messages []chatMessage   `json:"messages"` // /api/chat
	Prompt   *string         `json:"prompt"`   // /api/generate
	System   string          `json:"system"`
	Raw      bool            `json:"raw"`
	Stream   *bool           `json:"stream"`
	Options  *ollamaOptions  `json:"options"`
	Format   json.RawMessage `json:"format"` // "json" or a JSON Schema

	// Fields ollama reads that this server cannot honour; a request that
	// sets one is refused (unsupported) rather than answered as if it had
	// not been sent.
	Images   []json.RawMessage `json:"images"`   // /api/generate's
	Template string            `json:"template"` // a Go template replacing the model's
	Suffix   string            `json:"suffix"`   // fill-in-the-middle's text after the reply
}

// unsupported is the refusal of a field of req this server cannot honour,
// or nil.
func (req *ollamaRequest) unsupported() *errBody {
	images := len(req.Images) > 0
	for _, m := range req.Messages {
		images = images || len(m.Images) > 0
	}
	switch {
	case images:
		return badRequest("images", "images are not supported: this model reads text")
	case req.Template != "":
		return badRequest("template", "template is not supported: the model's own chat template is used (raw: true sends a prompt as it is)")
	case req.Suffix != "":
		return badRequest("suffix", "suffix (fill in the middle) is not supported")
	}
	return nil
}

// job makes the generation from the request's options and prompt ids; its
// error goes out as every route's does (writeErr: ollama's shape on /api/).
func (s *Server) ollamaJob(req *ollamaRequest, prompt []int, stopIDs []int) (job, *errBody) {
	o := req.Options
	if o == nil {
		o = &ollamaOptions{}
	}
	k := knobs{Temperature: o.Temperature, TopP: o.TopP, TopK: o.TopK, MinP: o.MinP, Seed: o.Seed,
		PresencePenalty: o.PresencePenalty, FrequencyPenalty: o.FrequencyPenalty, RepetitionPenalty: o.RepeatPenalty, Stop: o.Stop,
		peer: o.peer}
	def := func(p **float64, v float64) {
		if *p == nil {
			*p = &v
		}
	}
	def(&k.Temperature, 0.8)
	def(&k.TopP, 0.9)
	def(&k.RepetitionPenalty, 1.1)
	if k.TopK == nil {
		forty := 40
		k.TopK = &forty
	}
	p, e := k.params()
	if e != nil {
		return job{}, e
	}
	if o.RepeatLastN != nil && *o.RepeatLastN > 0 {
		p.PenaltyWindow = *o.RepeatLastN
	}
	cons, e := ollamaFormat(req.Format)
	if e != nil {
		return job{}, e
	}
	j := job{prompt: prompt, params: p, stop: o.Stop, stopIDs: stopIDs, cons: cons}
	if o.NumPredict != nil && *o.NumPredict > 0 {
		j.max = min(*o.NumPredict, max(s.e.Window()-len(prompt), 1)) // ollama clips it to the context
	}
	if e := s.fit(&j); e != nil {
		return job{}, e
	}
	return j, nil
}

func (s *Server) ollamaChat(w http.ResponseWriter, r *http.Request) {
	var req ollamaRequest
	if !s.ollamaDecode(w, r, &req) {
		return
	}
	if len(req.Messages) == 0 {
		// ollama loads the model for a chat without messages (the ollama
		// CLI's first request); ours is loaded.
		writeJSON(w, http.StatusOK, map[string]any{"model": req.Model, "created_at": time.Now().UTC().Format(time.RFC3339Nano),
			"message": map[string]any{"role": "assistant", "content": ""}, "done": true, "done_reason": "load"})
		return
	}
	msgs, e := conversation("messages", req.Messages, chatParts)
	if e != nil {
		writeErr(w, r, e)
		return
	}
	if e := s.tooLong("messages", contents(msgs)...); e != nil {
		writeErr(w, r, e)
		return
	}
	j, e := s.ollamaJob(&req, s.tmpl.Render(msgs, true), s.tmpl.Stops())
	if e != nil {
		writeErr(w, r, e)
		return
	}
	s.ollamaRun(w, r, &req, j, func(text string) map[string]any {
		return map[string]any{"message": map[string]any{"role": "assistant", "content": text}}
	})
}

func (s *Server) ollamaGenerate(w http.ResponseWriter, r *http.Request) {
	var req ollamaRequest
	if !s.ollamaDecode(w, r, &req) {
		return
	}
	if req.Prompt == nil || *req.Prompt == "" {
		// ollama loads the model for an empty prompt; ours is loaded.
		writeJSON(w, http.StatusOK, map[string]any{"model": req.Model, "created_at": time.Now().UTC().Format(time.RFC3339Nano),
			"response": "", "done": true, "done_reason": "load"})
		return
	}
	// A model without a chat template (a pre-training checkpoint, a GGUF
	// file without tokenizer.chat_template) continues the prompt as text,
	// as ollama's default template for such a model, {{ .Prompt }}, and
	// this app's raw mode do; /api/chat still renders the messages.
	raw := req.Raw || session.DefaultMode(s.m) == "raw"
	texts := []string{*req.Prompt}
	if !raw { // raw mode leaves the system text out
		texts = append(texts, req.System)
	}
	if e := s.tooLong("prompt", texts...); e != nil {
		writeErr(w, r, e)
		return
	}
	var prompt, stopIDs []int
	if raw {
		prompt, stopIDs = session.RawIDs(s.m.Tokenizer(), *req.Prompt), session.RawStops(s.m)
	} else {
		var msgs []session.Message
		if req.System != "" {
			msgs = append(msgs, session.Message{Role: session.System, Content: req.System})
		}
		msgs = append(msgs, session.Message{Role: session.User, Content: *req.Prompt})
		prompt, stopIDs = s.tmpl.Render(msgs, true), s.tmpl.Stops()
	}
	j, e := s.ollamaJob(&req, prompt, stopIDs)
	if e != nil {
		writeErr(w, r, e)
		return
	}
	s.ollamaRun(w, r, &req, j, func(text string) map[string]any { return map[string]any{"response": text} })
}

func (s *Server) ollamaDecode(w http.ResponseWriter, r *http.Request, req *ollamaRequest) bool {
	if !s.ollamaRead(w, r, req, &req.Model) {
		return false
	}
	if e := req.unsupported(); e != nil {
		writeErr(w, r, e)
		return false
	}
	return true
}

// ollamaRead reads an ollama request into req and checks the model it
// names (*model, once read), answering in ollama's shape when it fails.
func (s *Server) ollamaRead(w http.ResponseWriter, r *http.Request, req any, model *string) bool {
	if e := decode(w, r, req); e != nil {
		writeErr(w, r, e)
		return false
	}
	if !s.known(*model) {
		ollamaError(w, http.StatusNotFound, fmt.Sprintf("model %s not found; this server serves %q", quote.Quote(*model), s.name))
		return false
	}
	return true
}

// ollamaRun streams JSON lines (or, with "stream": false, one object) in
// ollama's shape, body making the reply's part of each.
func (s *Server) ollamaRun(w http.ResponseWriter, r *http.Request, req *ollamaRequest, j job, body func(string) map[string]any) {
	stream := req.Stream == nil || *req.Stream
	model := req.Model
	if model == "" {
		model = s.name
	}
	line := func(text string, done bool) map[string]any {
		m := body(text)
		m["model"], m["created_at"], m["done"] = model, time.Now().UTC().Format(time.RFC3339Nano), done
		return m
	}
	lines := newJSONLines(w)
	var all strings.Builder
	start := time.Now()
	res, e := s.run(r.Context(), j, func(p piece) error {
		if !stream {
			all.WriteString(p.text)
			return nil
		}
		return lines.send(line(p.text, false))
	})
	if e != nil {
		writeErr(w, r, e)
		return
	}
	if res.Reason == engine.ReasonStopped {
		return
	}
	if res.Err != nil && !lines.started {
		ollamaError(w, http.StatusInternalServerError, res.Err.Error())
		return
	}
	last := line(all.String(), true)
	st := res.Stats
	reason := finishReason(res)
	last["done_reason"] = reason
	last["total_duration"] = time.Since(start).Nanoseconds()
	last["load_duration"] = 0
	last["prompt_eval_count"] = st.PromptTokens
	last["eval_count"] = st.GenTokens
	last["prompt_eval_duration"] = st.TTFT.Nanoseconds()
	last["eval_duration"] = time.Since(start).Nanoseconds() - st.TTFT.Nanoseconds()
	if stream {
		lines.send(last)
		return
	}
	writeJSON(w, http.StatusOK, last)
}

func (s *Server) ollamaTags(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"models": []any{s.ollamaModel()}})
}

// ollamaModel is the served model as /api/tags and /api/ps list it.
func (s *Server) ollamaModel() map[string]any {
	return map[string]any{
		"name": s.name + ":latest", "model": s.name + ":latest", "modified_at": s.created.UTC().Format(time.RFC3339),
		"size": s.size, "digest": fmt.Sprintf("%064x", 0), "details": s.ollamaDetails(),
	}
}

func (s *Server) ollamaDetails() map[string]any {
	info := s.m.Info()
	return map[string]any{"parent_model": "", "format": info.Format, "family": info.Arch, "families": []string{info.Arch},
		"parameter_size": paramSize(info.Params), "quantization_level": strings.ToUpper(info.Quant)}
}

// ollamaShow is /api/show, which ollama clients ask before a chat (oterm
// for the model's capabilities and parameters, the ollama CLI to see that
// the model exists): the model's shape under GGUF's key names, and the
// sampler defaults this API applies as ollama's parameters.
func (s *Server) ollamaShow(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Model string `json:"model"`
		Name  string `json:"name"` // the older field
	}
	if e := decode(w, r, &req); e != nil {
		writeErr(w, r, e)
		return
	}
	name := cmp.Or(req.Model, req.Name)
	if name == "" || !s.known(name) {
		ollamaError(w, http.StatusNotFound, fmt.Sprintf("model %s not found; this server serves %q", quote.Quote(name), s.name))
		return
	}
	info := s.m.Info()
	a := info.Arch
	writeJSON(w, http.StatusOK, map[string]any{
		"modelfile":  "# chat serve: " + s.name + "\n",
		"parameters": fmt.Sprintf("temperature 0.8\ntop_k 40\ntop_p 0.9\nrepeat_penalty 1.1\nrepeat_last_n 64\nnum_ctx %d", s.e.Window()),
		"template":   s.tmpl.Name(),
		"details":    s.ollamaDetails(),
		"model_info": map[string]any{
			"general.architecture": a, "general.parameter_count": info.Params,
			a + ".context_length": info.MaxContext(), a + ".embedding_length": info.Embed, a + ".block_count": info.Layers,
			a + ".attention.head_count": info.Heads, a + ".attention.head_count_kv": info.KVHeads, a + ".vocab_size": info.VocabSize,
		},
		"capabilities": []string{"completion"},
		"modified_at":  s.created.UTC().Format(time.RFC3339),
	})
}

// ollamaPs is /api/ps: the one model, loaded for as long as the server runs.
func (s *Server) ollamaPs(w http.ResponseWriter, r *http.Request) {
	m := s.ollamaModel()
	m["expires_at"] = time.Date(9999, 12, 31, 0, 0, 0, 0, time.UTC).Format(time.RFC3339)
	m["size_vram"] = 0
	m["context_length"] = s.e.Window()
	writeJSON(w, http.StatusOK, map[string]any{"models": []any{m}})
}

func (s *Server) ollamaVersion(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]string{"version": "0.6.0"})
}

// paramSize writes a parameter count as ollama does: 260K, 110M, 1.1B.
func paramSize(n int64) string {
	switch {
	case n >= 1e9:
		return fmt.Sprintf("%.1fB", float64(n)/1e9)
	case n >= 1e6:
		return fmt.Sprintf("%.0fM", float64(n)/1e6)
	}
	return fmt.Sprintf("%.0fK", float64(n)/1e3)
}

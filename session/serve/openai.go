package serve

import (
	"cmp"
	"encoding/json"
	"fmt"
	"math"
	"net/http"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"chat/engine"
	"chat/engine/sampler"
	"chat/models/quote"
	"chat/session"
)

// The OpenAI API: chat completions, completions, models.

// knobs are the sampling fields the OpenAI requests share (with vLLM's
// top_k, min_p, repetition_penalty and ignore_eos).
type knobs struct {
	Temperature       *float64 `json:"temperature"`
	TopP              *float64 `json:"top_p"`
	TopK              *int     `json:"top_k"`
	MinP              *float64 `json:"min_p"`
	Seed              *int64   `json:"seed"`
	PresencePenalty   *float64 `json:"presence_penalty"`
	FrequencyPenalty  *float64 `json:"frequency_penalty"`
	RepetitionPenalty *float64 `json:"repetition_penalty"`
	N                 *int     `json:"n"`
	BestOf            *int     `json:"best_of"`
	// vLLM's beam search: best_of (or n) beams, the n best returned.
	UseBeamSearch bool     `json:"use_beam_search"`
	LengthPenalty *float64 `json:"length_penalty"`
	Stop          stops    `json:"stop"`
	IgnoreEOS     bool     `json:"ignore_eos"`
	Stream        bool     `json:"stream"`
	StreamOptions *struct {
		IncludeUsage bool `json:"include_usage"`
	} `json:"stream_options"`

	peer map[string]json.RawMessage // llama-server's further sampler fields (peerknobs.go)
	off  *errBody                   // the first of openaiOff's fields set
}

// openaiOff are the OpenAI fields this server cannot honour, refused on
// every OpenAI route rather than ignored: a client that sends them counts
// on them.
var openaiOff = []offField{
	{"logit_bias", "logit_bias is not supported", nil},
	{"tools", "tools are not supported: this server calls no tools", nil},
	{"tool_choice", "tool_choice is not supported: this server calls no tools", []string{`"auto"`, `"none"`}},
	{"functions", "functions are not supported: this server calls no tools", nil},
	{"function_call", "function_call is not supported: this server calls no tools", []string{`"auto"`, `"none"`}},
}

// n is how many replies the request asks for.
func (k *knobs) n() int {
	if k.N == nil {
		return 1
	}
	return *k.N
}

// bestOf is how many replies (or beams) the request generates: best_of,
// or n.
func (k *knobs) bestOf() int {
	if k.BestOf == nil {
		return k.n()
	}
	return *k.BestOf
}

// ranked reports whether the replies are sampled and the n likeliest kept.
func (k *knobs) ranked() bool { return k.bestOf() > k.n() && !k.UseBeamSearch }

// maxN bounds "n" and "best_of": each reply is a sequence of the batch.
const maxN = 16

// includeUsage reports whether a stream ends with a usage chunk.
func (k *knobs) includeUsage() bool { return k.StreamOptions != nil && k.StreamOptions.IncludeUsage }

// stops is "stop": a string or a list of them.
type stops []string

func (s *stops) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		*s = stops{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("stop must be a string or a list of strings")
	}
	*s = many
	return nil
}

// params checks the knobs (OpenAI's ranges) and makes the sampler's.
// Temperature 0 is greedy, as in the OpenAI API (the course's sampler
// would divide by 1e-6 instead). The penalties look at the last 64 ids.
func (k *knobs) params() (sampler.Params, *errBody) {
	if k.off != nil {
		return sampler.Params{}, k.off
	}
	p := sampler.Params{Temperature: 1, Seed: seed(k.Seed)}
	in := func(name string, v *float64, lo, hi float64) *errBody {
		if v != nil && (math.IsNaN(*v) || *v < lo || *v > hi) {
			return badRequest(name, fmt.Sprintf("%s must be between %g and %g, got %g", name, lo, hi, *v))
		}
		return nil
	}
	for _, c := range []*errBody{in("temperature", k.Temperature, 0, 2), in("top_p", k.TopP, 0, 1), in("min_p", k.MinP, 0, 1),
		in("presence_penalty", k.PresencePenalty, -2, 2), in("frequency_penalty", k.FrequencyPenalty, -2, 2),
		in("repetition_penalty", k.RepetitionPenalty, 0, 10)} {
		if c != nil {
			return p, c
		}
	}
	if len(k.Stop) > engine.MaxStops {
		return p, badRequest("stop", fmt.Sprintf("at most %d stop strings, got %d", engine.MaxStops, len(k.Stop)))
	}
	for _, st := range k.Stop {
		if len(st) > engine.MaxStopBytes {
			return p, badRequest("stop", fmt.Sprintf("a stop string is at most %d bytes", engine.MaxStopBytes))
		}
	}
	if k.N != nil && (*k.N < 1 || *k.N > maxN) {
		return p, badRequest("n", fmt.Sprintf("n must be between 1 and %d, got %d", maxN, *k.N))
	}
	switch b := k.bestOf(); {
	case b < k.n() || b > maxN:
		return p, badRequest("best_of", fmt.Sprintf("best_of must be between n (%d) and %d, got %d", k.n(), maxN, b))
	case k.Stream && (b > k.n() || k.UseBeamSearch):
		return p, badRequest("best_of", "best_of and use_beam_search cannot be used with stream")
	case k.LengthPenalty != nil && (math.IsNaN(*k.LengthPenalty) || math.IsInf(*k.LengthPenalty, 0)):
		return p, badRequest("length_penalty", "length_penalty must be a finite number")
	}
	if k.TopK != nil && *k.TopK < -1 {
		return p, badRequest("top_k", fmt.Sprintf("top_k must be -1 (off) or more, got %d", *k.TopK))
	}
	if k.Temperature != nil {
		p.Temperature = *k.Temperature
		p.Greedy = *k.Temperature == 0
	}
	if k.TopP != nil {
		p.TopP = *k.TopP
	}
	if k.TopK != nil && *k.TopK > 0 {
		p.TopK = *k.TopK
	}
	if k.MinP != nil {
		p.MinP = *k.MinP
	}
	if k.PresencePenalty != nil {
		p.PresencePenalty = *k.PresencePenalty
	}
	if k.FrequencyPenalty != nil {
		p.FrequencyPenalty = *k.FrequencyPenalty
	}
	if k.RepetitionPenalty != nil {
		p.RepeatPenalty = *k.RepetitionPenalty
	}
	if e := applyPeer(&p, k.peer); e != nil {
		return p, e
	}
	return p, nil
}

type chatRequest struct {
	knobs
	consFields
	Model               string        `json:"model"`
	Messages            []chatMessage `json:"messages"`
	MaxTokens           *int          `json:"max_tokens"`
	MaxCompletionTokens *int          `json:"max_completion_tokens"`
	Logprobs            bool          `json:"logprobs"`
	TopLogprobs         *int          `json:"top_logprobs"`
}

type chatMessage struct {
	Role    string            `json:"role"`
	Content json.RawMessage   `json:"content"`
	Images  []json.RawMessage `json:"images"` // ollama's; refused (ollamaRequest.unsupported)
}

// text is a message's content: a string, or parts of the given types
// (the chat API's "text"; the Responses API's "input_text", and
// "output_text" in an assistant turn sent back).
func (m chatMessage) text(partTypes []string) (string, error) {
	if len(m.Content) == 0 || string(m.Content) == "null" {
		return "", nil
	}
	var s string
	if json.Unmarshal(m.Content, &s) == nil {
		return s, nil
	}
	var parts []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if err := json.Unmarshal(m.Content, &parts); err != nil {
		return "", fmt.Errorf("content must be a string or a list of parts")
	}
	var b strings.Builder
	for _, p := range parts {
		if !slices.Contains(partTypes, p.Type) {
			return "", fmt.Errorf("content parts of type %s are not supported: this model reads text", quote.Quote(p.Type))
		}
		b.WriteString(p.Text)
	}
	return b.String(), nil
}

// chatParts are the chat API's text parts.
var chatParts = []string{"text"}

// conversation is the messages as the session's, for its template; param
// names them in errors, partTypes are the text parts read.
func conversation(param string, msgs []chatMessage, partTypes []string) ([]session.Message, *errBody) {
	if len(msgs) == 0 {
		return nil, badRequest(param, param+" is empty")
	}
	out := make([]session.Message, 0, len(msgs))
	for i, m := range msgs {
		var role session.Role
		switch m.Role {
		case "system", "developer":
			role = session.System
		case "user":
			role = session.User
		case "assistant":
			role = session.Assistant
		default:
			return nil, badRequest(fmt.Sprintf("%s[%d].role", param, i), fmt.Sprintf("role %s is not supported (system, developer, user, assistant)", quote.Quote(m.Role)))
		}
		text, err := m.text(partTypes)
		if err != nil {
			return nil, badRequest(fmt.Sprintf("%s[%d].content", param, i), err.Error())
		}
		out = append(out, session.Message{Role: role, Content: text})
	}
	return out, nil
}

// contents are the messages' texts.
func contents(msgs []session.Message) []string {
	t := make([]string, len(msgs))
	for i, m := range msgs {
		t[i] = m.Content
	}
	return t
}

// model checks the model a request names ("" is the one served).
func (s *Server) model(name string) *errBody {
	if s.known(name) {
		return nil
	}
	return newErr(http.StatusNotFound, "invalid_request_error", "model", "model_not_found",
		fmt.Sprintf("The model %s does not exist; this server serves %q.", quote.Quote(name), s.name))
}

func (s *Server) known(name string) bool {
	name = strings.TrimSuffix(name, ":latest")
	return name == "" || name == s.name || name == s.m.Info().Name || slices.Contains(s.files, name)
}

var ids atomic.Uint64

// newID is an id that starts with prefix ("chatcmpl-", "resp_").
func newID(prefix string) string {
	return fmt.Sprintf("%s%d%06d", prefix, time.Now().Unix(), ids.Add(1)%1e6)
}

type usage struct {
	PromptTokens        int `json:"prompt_tokens"`
	CompletionTokens    int `json:"completion_tokens"`
	TotalTokens         int `json:"total_tokens"`
	PromptTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// usageOf is the usage of a request's replies: the prompt counted once,
// as OpenAI counts it for n > 1, and every reply's tokens.
func usageOf(res []engine.Result) *usage {
	st := res[0].Stats
	u := &usage{PromptTokens: st.PromptTokens}
	u.PromptTokensDetails.CachedTokens = st.ReusedTokens
	for _, r := range res {
		u.CompletionTokens += r.Stats.GenTokens
	}
	u.TotalTokens = u.PromptTokens + u.CompletionTokens
	return u
}

type topLogprob struct {
	Token   string  `json:"token"`
	Logprob float64 `json:"logprob"`
	Bytes   []int   `json:"bytes"`
}

type chatLogprob struct {
	topLogprob
	TopLogprobs []topLogprob `json:"top_logprobs"`
}

type chatLogprobs struct {
	Content []chatLogprob `json:"content"`
}

func (s *Server) chatLogprobs(lps []engine.TokenLogprob) *chatLogprobs {
	out := &chatLogprobs{Content: make([]chatLogprob, len(lps))}
	for i, lp := range lps {
		c := &out.Content[i]
		c.Token, c.Bytes = s.tokenText(lp.ID)
		c.Logprob = engine.JSONFinite(lp.Logprob)
		c.TopLogprobs = make([]topLogprob, len(lp.Top))
		for j, t := range lp.Top {
			c.TopLogprobs[j].Token, c.TopLogprobs[j].Bytes = s.tokenText(t.ID)
			c.TopLogprobs[j].Logprob = engine.JSONFinite(t.Logprob)
		}
	}
	return out
}

// budget is the first of a request's budget fields that is set (0: none
// is, the rest of the context); param names them in errors.
func budget(param string, fields ...*int) (int, *errBody) {
	for _, p := range fields {
		if p != nil {
			if *p < 1 {
				return 0, badRequest(param, fmt.Sprintf("%s must be at least 1, got %d", param, *p))
			}
			return *p, nil
		}
	}
	return 0, nil
}

func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	var req chatRequest
	if e := decode(w, r, &req); e != nil {
		writeErr(w, r, e)
		return
	}
	j, e := s.chatJob(&req)
	if e != nil {
		writeErr(w, r, e)
		return
	}
	id, created := newID("chatcmpl-"), time.Now().Unix()
	if req.Stream {
		head := func(choices []any) map[string]any {
			return map[string]any{"id": id, "object": "chat.completion.chunk", "created": created, "model": s.name, "choices": choices}
		}
		choice := func(i int, delta map[string]any, lps []engine.TokenLogprob, finish *string) any {
			c := map[string]any{"index": i, "delta": delta, "finish_reason": finish, "logprobs": nil}
			if len(lps) > 0 {
				c["logprobs"] = s.chatLogprobs(lps)
			}
			return c
		}
		started := make([]bool, req.n())
		s.stream(w, r, j, req.n(), req.includeUsage(), head, func(i int, p piece) any {
			delta := map[string]any{"content": p.text}
			if !started[i] {
				delta["role"] = "assistant"
				started[i] = true
			}
			return choice(i, delta, p.lps, nil)
		}, func(i int, res engine.Result) any {
			delta := map[string]any{}
			if !started[i] {
				delta = map[string]any{"role": "assistant", "content": ""}
			}
			fr := finishReason(res)
			return choice(i, delta, nil, &fr)
		})
		return
	}
	start := time.Now()
	res, all, ok := s.replies(w, r, j, &req.knobs)
	if !ok {
		return
	}
	choices := make([]any, len(res))
	for i, x := range res {
		c := map[string]any{"index": i, "message": map[string]any{"role": "assistant", "content": x.Text},
			"finish_reason": finishReason(x), "logprobs": nil}
		if req.Logprobs {
			c["logprobs"] = s.chatLogprobs(x.Logprobs)
		}
		choices[i] = c
	}
	writeJSON(w, http.StatusOK, withTimings(map[string]any{"id": id, "object": "chat.completion", "created": created, "model": s.name,
		"choices": choices, "usage": usageOf(all)}, all, start))
}

// chatJob renders the messages with the model's chat template and checks
// the request.
func (s *Server) chatJob(req *chatRequest) (job, *errBody) {
	if e := s.model(req.Model); e != nil {
		return job{}, e
	}
	msgs, e := conversation("messages", req.Messages, chatParts)
	if e != nil {
		return job{}, e
	}
	top := 0
	if req.TopLogprobs != nil {
		top = *req.TopLogprobs
		if top < 0 || top > engine.MaxTopLogprobs || !req.Logprobs {
			return job{}, badRequest("top_logprobs", fmt.Sprintf("top_logprobs must be 0 to %d, with logprobs true", engine.MaxTopLogprobs))
		}
	}
	n, e := budget("max_tokens", req.MaxCompletionTokens, req.MaxTokens)
	if e != nil {
		return job{}, e
	}
	cons, e := req.spec()
	if e != nil {
		return job{}, e
	}
	j, e := s.turnJob("messages", msgs, n, &req.knobs, cons)
	j.logprobs, j.top = req.Logprobs || req.ranked(), top
	return j, e
}

// turnJob is the assistant's next turn after msgs, rendered with the
// model's chat template, with the knobs' sampler and stops, checked
// against the context; param names msgs in errors.
func (s *Server) turnJob(param string, msgs []session.Message, n int, k *knobs, cons *consSpec) (job, *errBody) {
	if e := s.tooLong(param, contents(msgs)...); e != nil {
		return job{}, e
	}
	p, e := k.params()
	if e != nil {
		return job{}, e
	}
	j := job{prompt: s.tmpl.Render(msgs, true), max: n, params: p, stop: k.Stop, cons: cons}
	if !k.IgnoreEOS {
		j.stopIDs = s.tmpl.Stops()
	}
	return j, s.fit(&j)
}

type completionRequest struct {
	knobs
	consFields
	Model     string          `json:"model"`
	Prompt    json.RawMessage `json:"prompt"`
	MaxTokens *int            `json:"max_tokens"`
	Logprobs  *int            `json:"logprobs"`
	Echo      bool            `json:"echo"`
	Suffix    *string         `json:"suffix"`
}

// promptIDs is "prompt": a text (continued as in raw mode), or token ids.
func (s *Server) promptIDs(raw json.RawMessage) ([]int, *errBody) {
	var texts []string
	if json.Unmarshal(raw, &texts) != nil {
		texts = nil // json fills what it can: [5] gave [""], an empty prompt
		var text string
		if json.Unmarshal(raw, &text) == nil {
			texts = []string{text}
		}
	}
	if len(texts) == 1 {
		if e := s.tooLong("prompt", texts[0]); e != nil {
			return nil, e
		}
		return session.RawIDs(s.m.Tokenizer(), texts[0]), nil
	}
	var toks []int
	if json.Unmarshal(raw, &toks) == nil && len(toks) > 0 {
		vocab := s.m.Info().VocabSize
		for i, t := range toks {
			if t < 0 || t >= vocab {
				return nil, badRequest("prompt", fmt.Sprintf("token %d at index %d is outside the vocabulary 0..%d", t, i, vocab-1))
			}
		}
		return toks, nil
	}
	return nil, badRequest("prompt", "prompt must be a string, a list of one string, or a list of token ids")
}

func (s *Server) completions(w http.ResponseWriter, r *http.Request) {
	var req completionRequest
	if e := decode(w, r, &req); e != nil {
		writeErr(w, r, e)
		return
	}
	j, e := s.completionJob(&req)
	if e != nil {
		writeErr(w, r, e)
		return
	}
	id, created := newID("cmpl-"), time.Now().Unix()
	choice := func(i int, text string, lps []engine.TokenLogprob, finish *string, offset int) map[string]any {
		c := map[string]any{"index": i, "text": text, "finish_reason": finish, "logprobs": nil}
		if req.Logprobs != nil {
			c["logprobs"] = s.completionLogprobs(lps, offset)
		}
		return c
	}
	body := func(choices []any) map[string]any {
		return map[string]any{"id": id, "object": "text_completion", "created": created, "model": s.name, "choices": choices}
	}
	if req.Stream {
		offsets := make([]int, req.n())
		s.stream(w, r, j, req.n(), req.includeUsage(), body, func(i int, p piece) any {
			c := choice(i, p.text, p.lps, nil, offsets[i])
			offsets[i] += len(p.text)
			return c
		}, func(i int, res engine.Result) any {
			fr := finishReason(res)
			return choice(i, "", nil, &fr, offsets[i])
		})
		return
	}
	start := time.Now()
	res, all, ok := s.replies(w, r, j, &req.knobs)
	if !ok {
		return
	}
	choices := make([]any, len(res))
	for i, x := range res {
		fr := finishReason(x)
		choices[i] = choice(i, x.Text, x.Logprobs, &fr, 0)
	}
	b := body(choices)
	b["usage"] = usageOf(all)
	writeJSON(w, http.StatusOK, withTimings(b, all, start))
}

// best is the n of res with the highest log-probability of their tokens,
// in that order (best_of's rule); res itself when n is all of them.
func best(res []engine.Result, n int) []engine.Result {
	if n >= len(res) {
		return res
	}
	sum := func(r engine.Result) float64 {
		t := 0.0
		for _, l := range r.Logprobs {
			t += l.Logprob
		}
		return t
	}
	res = slices.Clone(res)
	slices.SortStableFunc(res, func(a, b engine.Result) int { return cmp.Compare(sum(b), sum(a)) })
	return res[:n]
}

func (s *Server) completionJob(req *completionRequest) (job, *errBody) {
	if e := s.model(req.Model); e != nil {
		return job{}, e
	}
	if req.Echo || req.Suffix != nil {
		return job{}, badRequest("echo", "echo and suffix are not supported")
	}
	prompt, e := s.promptIDs(req.Prompt)
	if e != nil {
		return job{}, e
	}
	p, e := req.params()
	if e != nil {
		return job{}, e
	}
	n := 16 // the OpenAI default for completions
	if req.MaxTokens != nil {
		if n, e = budget("max_tokens", req.MaxTokens); e != nil {
			return job{}, e
		}
	}
	cons, e := req.spec()
	if e != nil {
		return job{}, e
	}
	j := job{prompt: prompt, max: n, params: p, stop: req.Stop, cons: cons}
	if req.Logprobs != nil {
		if *req.Logprobs < 0 || *req.Logprobs > 5 {
			return job{}, badRequest("logprobs", fmt.Sprintf("logprobs must be 0 to 5, got %d", *req.Logprobs))
		}
		j.logprobs, j.top = true, *req.Logprobs
	}
	j.logprobs = j.logprobs || req.ranked() // the ranking's; the choices show them only when asked
	if !req.IgnoreEOS {
		j.stopIDs = session.RawStops(s.m)
	}
	return j, s.fit(&j)
}

// completionLogprobs is the legacy completions logprobs shape.
func (s *Server) completionLogprobs(lps []engine.TokenLogprob, offset int) map[string]any {
	toks, lp, tops, offs := []string{}, []float64{}, []map[string]float64{}, []int{}
	for _, l := range lps {
		t, _ := s.tokenText(l.ID)
		toks = append(toks, t)
		lp = append(lp, engine.JSONFinite(l.Logprob))
		top := map[string]float64{}
		for _, x := range l.Top {
			tt, _ := s.tokenText(x.ID)
			top[tt] = engine.JSONFinite(x.Logprob)
		}
		tops = append(tops, top)
		offs = append(offs, offset)
		offset += len(s.m.Tokenizer().TokenBytes(l.ID))
	}
	return map[string]any{"tokens": toks, "token_logprobs": lp, "top_logprobs": tops, "text_offset": offs}
}

func (s *Server) models(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, http.StatusOK, map[string]any{"object": "list", "data": []any{s.modelObject()}})
}

// modelByID is GET /v1/models/{model}, which clients ask to check a name.
func (s *Server) modelByID(w http.ResponseWriter, r *http.Request) {
	if e := s.model(r.PathValue("model")); e != nil {
		writeErr(w, r, e)
		return
	}
	writeJSON(w, http.StatusOK, s.modelObject())
}

func (s *Server) modelObject() map[string]any {
	return map[string]any{"id": s.name, "object": "model", "created": s.created.Unix(), "owned_by": "chat", "max_model_len": s.e.Window()}
}

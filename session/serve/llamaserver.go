package serve

import (
	"bytes"
	"cmp"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"chat/config/settings"
	"chat/engine"
	"chat/engine/constrain"
	"chat/engine/sampler"
	"chat/models/gguf"
	"chat/session"
)

// llama-server's own endpoints that clients written for it call besides
// the OpenAI ones, as llama.cpp's tools/server/README.md describes them:
// POST /completion (and its alias /completions), its native text
// completion; /tokenize and /detokenize (scripts count and inspect tokens
// with the model's tokenizer; nothing runs); /props (its web UI and others
// read the context size, slots and chat template there) and /slots.

type tokenizeRequest struct {
	Content      string `json:"content"`
	AddSpecial   bool   `json:"add_special"`   // the BOS the model's prompts start with
	ParseSpecial *bool  `json:"parse_special"` // special-token text becomes its id (default true, as llama-server's)
	WithPieces   bool   `json:"with_pieces"`   // each id with its text
}

// tokenPiece is a token with its text: a string when its bytes are UTF-8, else
// the bytes as numbers (llama-server's shape).
type tokenPiece struct {
	ID    int `json:"id"`
	Piece any `json:"piece"`
}

func (s *Server) tokenize(w http.ResponseWriter, r *http.Request) {
	var req tokenizeRequest
	if e := decode(w, r, &req); e != nil {
		writeErr(w, r, e)
		return
	}
	if e := s.tooLong("content", req.Content); e != nil {
		writeErr(w, r, e)
		return
	}
	tok := s.m.Tokenizer()
	var ids []int
	switch {
	case req.ParseSpecial == nil || *req.ParseSpecial:
		ids = tok.EncodeSpecial(req.Content)
	default:
		ids = tok.Encode(req.Content)
	}
	if req.AddSpecial {
		if bos := tok.BOS(); bos >= 0 {
			ids = append([]int{bos}, ids...)
		}
	}
	if ids == nil {
		ids = []int{} // "tokens": [] for an empty text, as llama-server writes it, not null
	}
	if !req.WithPieces {
		writeJSON(w, http.StatusOK, map[string]any{"tokens": ids})
		return
	}
	out := make([]tokenPiece, len(ids))
	for i, id := range ids {
		out[i] = tokenPiece{ID: id, Piece: string(tok.TokenBytes(id))}
		if !utf8.ValidString(out[i].Piece.(string)) {
			_, out[i].Piece = s.tokenText(id)
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"tokens": out})
}

func (s *Server) detokenize(w http.ResponseWriter, r *http.Request) {
	var req struct {
		Tokens []int `json:"tokens"`
	}
	if e := decode(w, r, &req); e != nil {
		writeErr(w, r, e)
		return
	}
	if win := s.e.Window(); len(req.Tokens) > win {
		writeErr(w, r, pastContext("tokens", win, fmt.Sprintf("%d tokens were sent", len(req.Tokens))))
		return
	}
	n := s.m.Tokenizer().Size()
	for i, id := range req.Tokens {
		if id < 0 || id >= n {
			writeErr(w, r, badRequest(fmt.Sprintf("tokens[%d]", i), fmt.Sprintf("token id %d is not in the vocabulary (0 to %d)", id, n-1)))
			return
		}
	}
	writeJSON(w, http.StatusOK, map[string]any{"content": s.m.Tokenizer().Decode(req.Tokens)})
}

// props is llama-server's GET /props, with the fields its clients read:
// the default generation settings are /completion's. chat_template is the
// file's, or the course's format for a chat-tuned checkpoint; "" says the
// model completes text (chat --remote and llama-server's web UI then
// start in raw mode).
func (s *Server) props(w http.ResponseWriter, _ *http.Request) {
	tmpl := ""
	if g, ok := s.m.(interface{ GGUF() *gguf.File }); ok {
		tmpl, _ = g.GGUF().String("tokenizer.chat_template")
	} else if _, course := s.tmpl.(session.CourseTemplate); course && session.DefaultMode(s.m) == "chat" {
		tmpl = session.CourseJinja
	}
	p, _ := s.llamaParams(&llamaRequest{})
	params := s.llamaSettings(job{params: p}, -1, &llamaRequest{})
	params["seed"] = -1 // a new one for each reply
	writeJSON(w, http.StatusOK, map[string]any{
		"default_generation_settings": map[string]any{"n_ctx": s.e.Window(), "params": params},
		"total_slots":                 s.e.MaxSeqs(),
		"model_path":                  s.name,
		"chat_template":               tmpl,
		"modalities":                  map[string]bool{"vision": false, "audio": false},
		"build_info":                  "chat serve",
	})
}

// llamaRequest is a POST /completion body. The sampler fields become the
// knobs every route shares (knobs.params, with llama-server's defaults
// and its meanings of -1 and 0); its further samplers (DRY, XTC, ...) are
// read by their settings' names (peerknobs.go).
//
// Pure hints are let be: cache_prompt (the prefix cache, on unless
// --no-prefix-cache, decides), n_keep and n_discard (context shifting: a
// reply here ends at the context instead), n_cache_reuse, id_slot,
// sse_ping_interval, the speculative.* knobs, dynatemp_exponent (without
// dynatemp_range it does nothing) and model (one model is served), as are
// fields llama-server does not know either. Its fields this server does
// not have are refused (llamaOff) unless they are sent at their off value.
type llamaRequest struct {
	Prompt    json.RawMessage `json:"prompt"`
	NPredict  *int            `json:"n_predict"`
	MaxTokens *int            `json:"max_tokens"` // n_predict's alias
	Stream    bool            `json:"stream"`
	llamaKnobs
	IgnoreEOS       bool            `json:"ignore_eos"`
	NProbs          int             `json:"n_probs"`
	Grammar         *string         `json:"grammar"`
	JSONSchema      json.RawMessage `json:"json_schema"`
	ReturnTokens    bool            `json:"return_tokens"`
	TimingsPerToken bool            `json:"timings_per_token"`
	ResponseFields  []string        `json:"response_fields"`
	NCmpl           *int            `json:"n_cmpl"`

	peer map[string]json.RawMessage // the further sampler fields
	off  *errBody                   // the first field set that this server does not have
}

// offField is a field a route reads that this server does not have, with
// why. Clients send every field, so one at its off value (null, false, 0,
// "", [], {}, or one of also) passes.
type offField struct {
	name, why string
	also      []string
}

// firstOn is the refusal of the first of fields that all sets, or nil.
func firstOn(all map[string]json.RawMessage, fields []offField) *errBody {
	for _, f := range fields {
		if raw, ok := all[f.name]; ok && !isOff(raw, f.also) {
			return badRequest(f.name, f.why)
		}
	}
	return nil
}

// llamaOff are the /completion fields this server does not have.
var llamaOff = []offField{
	{"dynatemp_range", "dynamic temperature is not supported", nil},
	{"n_indent", "n_indent (a minimum indentation) is not supported", nil},
	{"logit_bias", "logit_bias is not supported", nil},
	{"min_keep", "min_keep is not supported", []string{"1"}},
	{"t_max_predict_ms", "t_max_predict_ms (a time limit) is not supported: bound the reply with n_predict", nil},
	{"samplers", "samplers (an order of your own) is not supported: the order is fixed (README: Sampler order); send llama-server's default or none",
		[]string{`["dry","top_k","typ_p","top_p","min_p","xtc","temperature"]`,
			`["penalties","dry","top_n_sigma","top_k","typ_p","top_p","min_p","xtc","temperature"]`, `"dkypmxt"`, `"edskypmxt"`}},
	{"return_progress", "return_progress is not supported", nil},
	{"post_sampling_probs", "post_sampling_probs is not supported: n_probs gives the model's own probabilities, before the sampler chain", nil},
	{"lora", "a per-request lora is not supported: load adapters with --lora", nil},
	{"image_data", "image_data is not supported: this model reads text", nil},
}

// readFields keeps the further sampler fields and finds a field set that
// this server does not have (decode calls it).
func (r *llamaRequest) readFields(all map[string]json.RawMessage) {
	r.peer = peerFields(all)
	r.off = firstOn(all, llamaOff)
}

// isOff reports whether a JSON value is null, false, 0, "", [] or {}, or
// (compacted) one of also.
func isOff(raw json.RawMessage, also []string) bool {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return false
	}
	t := b.String()
	var f float64
	if json.Unmarshal(raw, &f) == nil {
		t = fmt.Sprint(f) // 1.0 is 1
	}
	return slices.Contains([]string{"null", "false", "0", `""`, "[]", "{}"}, t) || slices.Contains(also, t)
}

// copies is n_cmpl: how many replies, each a sequence of the batch sharing
// the prompt's blocks (reply i samples with the seed + i).
func (r *llamaRequest) copies() int {
	if r.NCmpl == nil {
		return 1
	}
	return *r.NCmpl
}

// llamaParams are the sampler's params for the request: llama-server's
// defaults (temperature 0.8, top_k 40, top_p 0.95, min_p 0.05, the
// penalties off over the last 64 ids) and meanings: a temperature ≤ 0 is
// greedy, a top_k ≤ 0 off, seed -1 (or 4294967295, its LLAMA_DEFAULT_SEED)
// random, repeat_last_n 0 turns the penalties off and -1 looks at the
// whole context.
func (s *Server) llamaParams(req *llamaRequest) (sampler.Params, *errBody) {
	k := knobs{Temperature: req.Temperature, TopP: req.TopP, TopK: req.TopK, MinP: req.MinP, Seed: req.Seed, Stop: req.Stop,
		PresencePenalty: req.PresencePenalty, FrequencyPenalty: req.FrequencyPenalty, RepetitionPenalty: req.RepeatPenalty, peer: req.peer}
	def := func(p **float64, v float64) {
		if *p == nil {
			*p = &v
		}
	}
	def(&k.Temperature, 0.8)
	def(&k.TopP, 0.95)
	def(&k.MinP, 0.05)
	if *k.Temperature < 0 {
		k.Temperature = new(float64)
	}
	topK := 40
	if k.TopK != nil {
		topK = max(*k.TopK, 0)
	}
	k.TopK = &topK
	if k.Seed == nil || *k.Seed == -1 || *k.Seed == 0xFFFFFFFF {
		// A random seed as llama-server's: under 2^32, so that the one
		// generation_settings shows can be sent back (JSON, int64).
		r := rand.Int64N(0xFFFFFFFF)
		k.Seed = &r
	}
	window := 0
	if req.RepeatLastN != nil {
		switch n := *req.RepeatLastN; {
		case n == 0:
			k.RepetitionPenalty, k.PresencePenalty, k.FrequencyPenalty = nil, nil, nil
		case n == -1:
			window = s.e.Window()
		case n < -1:
			return sampler.Params{}, badRequest("repeat_last_n", fmt.Sprintf("repeat_last_n must be -1 (the context), 0 (off) or more, got %d", n))
		default:
			window = n
		}
	}
	p, e := k.params()
	if window > 0 {
		p.PenaltyWindow = window
	}
	return p, e
}

// llamaJob checks the request and makes its generation; predict is
// n_predict as asked (-1: up to the end of the context; 0: only the
// prompt).
func (s *Server) llamaJob(req *llamaRequest) (j job, predict int, e *errBody) {
	if req.off != nil {
		return job{}, 0, req.off
	}
	prompt, e := s.llamaPrompt(req.Prompt)
	if e != nil {
		return job{}, 0, e
	}
	p, e := s.llamaParams(req)
	if e != nil {
		return job{}, 0, e
	}
	if c := req.NCmpl; c != nil && (*c < 1 || *c > maxN) {
		return job{}, 0, badRequest("n_cmpl", fmt.Sprintf("n_cmpl must be between 1 and %d, got %d", maxN, *c))
	}
	if req.NProbs > engine.MaxTopLogprobs {
		return job{}, 0, badRequest("n_probs", fmt.Sprintf("n_probs must be at most %d, got %d", engine.MaxTopLogprobs, req.NProbs))
	}
	var o oneSpec
	o.add(strSpec(constrain.KindGrammar, "grammar", req.Grammar))
	o.add(schemaSpec("json_schema", req.JSONSchema))
	cons, e := o.result("")
	if e != nil {
		return job{}, 0, e
	}
	j = job{prompt: prompt, params: p, stop: req.Stop, cons: cons, logprobs: req.NProbs > 0, top: max(req.NProbs, 0), ids: req.Stream}
	if !req.IgnoreEOS {
		j.stopIDs = session.RawStops(s.m)
	}
	predict = -1
	if req.NPredict != nil {
		predict = *req.NPredict
	} else if req.MaxTokens != nil {
		predict = *req.MaxTokens
	}
	switch {
	case predict < -1:
		return job{}, 0, badRequest("n_predict", fmt.Sprintf("n_predict must be -1 (up to the context), 0 (only the prompt) or more, got %d", predict))
	case predict == 0:
		j.max = 1 // the prompt is prefilled into the cache; the one token is dropped
	case predict > 0:
		j.max = min(predict, max(s.e.Window()-len(prompt), 1)) // as in llama-server, a reply ends at the context
	}
	return j, predict, s.fit(&j)
}

// llamaPrompt reads /completion's prompt: a text (after the BOS, with
// special-token texts read as their ids, as llama-server tokenizes it),
// token ids, a list mixing both (the BOS first when it starts with a
// text), or {"prompt_string": text}; a list holding one of these is that
// prompt. Several prompts in one request are refused.
func (s *Server) llamaPrompt(raw json.RawMessage) ([]int, *errBody) {
	if absent(raw) {
		return nil, badRequest("prompt", "prompt is required")
	}
	parts, e := s.promptParts(raw)
	if e != nil {
		return nil, e
	}
	if c := parts[0][0]; len(parts) == 1 && (c == '[' || c == '{') { // a list of one prompt
		if parts, e = s.promptParts(parts[0]); e != nil {
			return nil, e
		}
	}
	texts := make([]*string, len(parts))
	var all []string
	for i, p := range parts {
		var t string
		if p[0] == '"' && json.Unmarshal(p, &t) == nil {
			texts[i] = &t
			all = append(all, t)
		}
	}
	if len(all) > 1 && len(all) == len(parts) {
		return nil, badRequest("prompt", "several prompts in one request are not supported: send one per request")
	}
	if e := s.tooLong("prompt", all...); e != nil {
		return nil, e
	}
	tok, vocab := s.m.Tokenizer(), s.m.Info().VocabSize
	var ids []int
	if texts[0] != nil {
		if bos := tok.BOS(); bos >= 0 {
			ids = append(ids, bos)
		}
	}
	for i, p := range parts {
		if texts[i] != nil {
			ids = append(ids, tok.EncodeSpecial(*texts[i])...)
			continue
		}
		var id int
		if err := json.Unmarshal(p, &id); err != nil {
			return nil, badRequest("prompt", fmt.Sprintf("prompt[%d] must be a token id or a text (several prompts in one request are not supported)", i))
		}
		if id < 0 || id >= vocab {
			return nil, badRequest("prompt", fmt.Sprintf("token %d at index %d is outside the vocabulary 0..%d", id, i, vocab-1))
		}
		ids = append(ids, id)
	}
	return ids, nil
}

// promptParts are the elements of a prompt that is a list, or the prompt
// itself (the text of {"prompt_string": text}). A list is read element by
// element and refused past the context's length: each id is a token, and
// a body may hold millions.
func (s *Server) promptParts(raw json.RawMessage) ([]json.RawMessage, *errBody) {
	const shape = `prompt must be a text, token ids, a list of both, or {"prompt_string": text}`
	raw = bytes.TrimSpace(raw)
	switch raw[0] {
	case '{':
		var obj struct {
			PromptString   *string           `json:"prompt_string"`
			MultimodalData []json.RawMessage `json:"multimodal_data"`
		}
		if json.Unmarshal(raw, &obj) != nil || obj.PromptString == nil {
			return nil, badRequest("prompt", shape)
		}
		if len(obj.MultimodalData) > 0 {
			return nil, badRequest("prompt", "multimodal_data is not supported: this model reads text")
		}
		t, _ := json.Marshal(*obj.PromptString)
		return []json.RawMessage{t}, nil
	case '[':
		dec := json.NewDecoder(bytes.NewReader(raw))
		dec.Token() // [
		var parts []json.RawMessage
		for dec.More() {
			if win := s.e.Window(); len(parts) >= win {
				return nil, pastContext("prompt", win, "the prompt has more parts than that")
			}
			var p json.RawMessage
			if dec.Decode(&p) != nil {
				return nil, badRequest("prompt", shape)
			}
			parts = append(parts, bytes.TrimSpace(p))
		}
		if len(parts) == 0 {
			return nil, badRequest("prompt", "the prompt is empty: the model needs at least one token to continue")
		}
		return parts, nil
	}
	return []json.RawMessage{raw}, nil
}

// llamaCompletion is POST /completion: one answer (a list of n_cmpl), or
// with "stream" a server-sent event per piece ({"index", "content",
// "tokens", "stop": false, ...}) and a last one per reply with the whole
// answer's fields but its text ("stop": true), without OpenAI's [DONE], as
// llama-server streams it.
func (s *Server) llamaCompletion(w http.ResponseWriter, r *http.Request) {
	var req llamaRequest
	if e := decode(w, r, &req); e != nil {
		writeErr(w, r, e)
		return
	}
	j, predict, e := s.llamaJob(&req)
	if e != nil {
		writeErr(w, r, e)
		return
	}
	gs := s.llamaSettings(j, predict, &req)
	start := time.Now()
	final := func(i int, res engine.Result) map[string]any {
		return s.llamaFinal(&req, j, predict, i, res, time.Since(start), gs)
	}
	n := req.copies()
	if !req.Stream {
		res, ok := s.whole(w, r, j, n)
		switch {
		case !ok: // the error was sent
		case n == 1:
			writeJSON(w, http.StatusOK, final(0, res[0]))
		default:
			all := make([]map[string]any, n)
			for i, x := range res {
				all[i] = final(i, x)
			}
			writeJSON(w, http.StatusOK, all)
		}
		return
	}
	sse := newSSE(w)
	res, e := s.runN(r.Context(), j, n, func(i int, p piece) error {
		if predict == 0 {
			return nil
		}
		ev := map[string]any{"index": i, "content": p.text, "tokens": p.ids, "stop": false,
			"tokens_predicted": p.stats.GenTokens, "tokens_evaluated": len(j.prompt)}
		if len(p.lps) > 0 {
			ev["completion_probabilities"] = s.llamaProbs(p.lps)
		}
		if req.TimingsPerToken {
			ev["timings"] = llamaTimings(p.stats, time.Since(start))
		}
		return sse.send(ev)
	})
	if e != nil {
		writeErr(w, r, e) // nothing was sent yet
		return
	}
	for _, x := range res {
		switch {
		case x.Reason == engine.ReasonStopped: // the client went away
			return
		case x.Err != nil:
			sse.send(map[string]any{"error": newErr(http.StatusInternalServerError, "server_error", "", "", x.Err.Error()).llama()})
			return
		}
	}
	for i, x := range res {
		sse.send(final(i, x))
	}
}

// llamaFinal is the whole answer (or a stream's last event, whose pieces
// were sent before it).
func (s *Server) llamaFinal(req *llamaRequest, j job, predict, index int, res engine.Result, took time.Duration, gs map[string]any) map[string]any {
	if predict == 0 { // only the prompt was asked for
		res.Text, res.IDs, res.Logprobs, res.Reason, res.Stats.GenTokens = "", nil, nil, engine.ReasonLength, 0
	}
	st := res.Stats
	content, ids := res.Text, []int{}
	if req.Stream {
		content = ""
	} else if req.ReturnTokens && res.IDs != nil {
		ids = res.IDs
	}
	stopType := map[string]string{engine.ReasonEOT: "eos", engine.ReasonStopString: "word", engine.ReasonLength: "limit"}[res.Reason]
	out := map[string]any{"index": index, "content": content, "tokens": ids, "stop": true, "model": s.name,
		"tokens_predicted": st.GenTokens, "tokens_evaluated": st.PromptTokens, "tokens_cached": st.ReusedTokens,
		"generation_settings": gs, "prompt": session.WithSpecials(s.m.Tokenizer(), j.prompt), "has_new_line": strings.Contains(res.Text, "\n"),
		"truncated": res.ContextFull(),
		"stop_type": cmp.Or(stopType, "none"), "stopping_word": s.stoppingWord(res, j.stop), "timings": llamaTimings(st, took)}
	if j.logprobs && !req.Stream {
		out["completion_probabilities"] = s.llamaProbs(res.Logprobs)
	}
	if len(req.ResponseFields) > 0 {
		return pickFields(out, req.ResponseFields)
	}
	return out
}

// pickFields is llama-server's response_fields: only the fields named, a
// path such as "timings/prompt_n" at the top under its whole path; one
// that is not there is left out.
func pickFields(out map[string]any, paths []string) map[string]any {
	picked := map[string]any{}
	for _, path := range paths {
		var v any = out
		for _, k := range strings.Split(path, "/") {
			m, _ := v.(map[string]any)
			if v = m[k]; v == nil {
				break
			}
		}
		if v != nil {
			picked[path] = v
		}
	}
	return picked
}

// stoppingWord is the stop string that ended res ("" if none did): the
// first to appear in the text of its ids, which the reply was cut before.
func (s *Server) stoppingWord(res engine.Result, stops []string) string {
	if res.Reason != engine.ReasonStopString {
		return ""
	}
	full := s.m.Tokenizer().Decode(res.IDs)
	word, at := "", len(full)+1
	for _, w := range stops {
		if i := strings.Index(full, w); w != "" && i >= 0 && i < at {
			word, at = w, i
		}
	}
	return word
}

// llamaTimings are llama-server's timings: the prompt's time is the time
// to the first token (as ollama's prompt_eval_duration here), the
// prediction's the rest.
func llamaTimings(st engine.Stats, took time.Duration) map[string]any {
	ms := func(d time.Duration) float64 { return float64(max(d, 0).Microseconds()) / 1e3 }
	promptN, promptMS, predMS := st.PromptTokens-st.ReusedTokens, ms(st.TTFT), ms(took-st.TTFT)
	perToken := func(n int, ms float64) float64 {
		if n <= 0 {
			return 0
		}
		return ms / float64(n)
	}
	perSecond := func(n int, ms float64) float64 {
		if ms <= 0 {
			return 0
		}
		return float64(n) / ms * 1e3
	}
	return map[string]any{"cache_n": st.ReusedTokens,
		"prompt_n": promptN, "prompt_ms": promptMS, "prompt_per_token_ms": perToken(promptN, promptMS), "prompt_per_second": perSecond(promptN, promptMS),
		"predicted_n": st.GenTokens, "predicted_ms": predMS, "predicted_per_token_ms": perToken(st.GenTokens, predMS), "predicted_per_second": perSecond(st.GenTokens, predMS)}
}

// llamaProbs is llama-server's completion_probabilities: each token with
// its log-probability and the likeliest at its step.
func (s *Server) llamaProbs(lps []engine.TokenLogprob) []map[string]any {
	prob := func(id int, lp float64) map[string]any {
		text, b := s.tokenText(id)
		return map[string]any{"id": id, "token": text, "bytes": b, "logprob": engine.JSONFinite(lp)}
	}
	out := make([]map[string]any, len(lps))
	for i, lp := range lps {
		top := make([]map[string]any, len(lp.Top))
		for k, t := range lp.Top {
			top[k] = prob(t.ID, t.Logprob)
		}
		out[i] = prob(lp.ID, lp.Logprob)
		out[i]["top_logprobs"] = top
	}
	return out
}

// llamaSettings is generation_settings: the settings a reply runs with,
// under llama-server's names (the sampler's are the settings' own, but
// penalty_window, which is its repeat_last_n).
func (s *Server) llamaSettings(j job, n int, req *llamaRequest) map[string]any {
	gs := map[string]any{"n_ctx": s.e.Window(), "model": s.name, "n_predict": n, "seed": j.params.Seed, "stream": req.Stream,
		"ignore_eos": req.IgnoreEOS, "n_probs": j.top, "stop": append([]string{}, j.stop...)}
	v := settings.Values{Sampler: j.params}
	for _, st := range settings.All() {
		if st.Table == "sampler" && st.Kind != settings.Seed && st.Kind != settings.Bool {
			gs[st.Name] = st.Get(&v)
		}
	}
	gs["repeat_last_n"] = gs["penalty_window"]
	delete(gs, "penalty_window")
	if j.params.RepeatPenalty == 0 {
		// Off, which is 1 in llama-server's terms: a client that reads
		// /props's defaults and sends them back (its web UI) must not send
		// a repeat_penalty that divides by 0 there.
		gs["repeat_penalty"] = 1.0
	}
	return gs
}

// slots is llama-server's GET /slots: one per sequence of the batch
// (--parallel), the first as many as are running marked busy (the engine
// does not tie a reply to a place); with ?fail_on_no_slot=1, a 503 when
// every one is.
func (s *Server) slots(w http.ResponseWriter, r *http.Request) {
	running := s.e.Load().Running
	if r.URL.Query().Get("fail_on_no_slot") == "1" && running >= s.e.MaxSeqs() {
		writeErr(w, r, newErr(http.StatusServiceUnavailable, "server_error", "", "server_overloaded", "no slot is free"))
		return
	}
	out := make([]map[string]any, s.e.MaxSeqs())
	for i := range out {
		out[i] = map[string]any{"id": i, "n_ctx": s.e.Window(), "is_processing": i < running}
	}
	writeJSON(w, http.StatusOK, out)
}

package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"chat/engine"
	"chat/engine/sampler"
	"chat/models"
	"chat/models/quote"
)

// job is one generation, whichever API asked for it.
type job struct {
	prompt   []int
	max      int // the reply budget; 0: the rest of the context
	params   sampler.Params
	stopIDs  []int
	stop     []string
	logprobs bool
	top      int
	cons     *consSpec // constrained output (constraint.go); nil: free
	ids      bool      // each piece carries its token ids (llama-server's tokens)
}

// maxBody bounds a request body.
const maxBody = 8 << 20

// bodyTimeout bounds the reading of a request's body (ReadHeaderTimeout
// bounds its headers): a client trickling its body would otherwise hold a
// connection, and up to maxBody bytes, for as long as it likes. It is not
// the server's ReadTimeout, which would also end long streamed replies.
var bodyTimeout = 30 * time.Second

// bodySlots bounds the bodies read at once: each may hold up to maxBody
// bytes while it arrives, and nothing else bounds the number of
// connections that send one.
var bodySlots = make(chan struct{}, 64)

// decode reads a JSON body into v: 413 when it is too large, 408 when it
// does not arrive within bodyTimeout, 503 when no body slot frees within
// it, 400 when it is not JSON of the right shape.
func decode(w http.ResponseWriter, r *http.Request, v any) *errBody {
	wait := time.NewTimer(bodyTimeout)
	defer wait.Stop()
	select {
	case bodySlots <- struct{}{}:
		defer func() { <-bodySlots }()
	case <-wait.C:
		return newErr(http.StatusServiceUnavailable, "server_error", "", "server_overloaded", "too many requests are being received: try again later")
	case <-r.Context().Done():
		return newErr(http.StatusRequestTimeout, "invalid_request_error", "", "request_timeout", "the client went away")
	}
	rc := http.NewResponseController(w)
	rc.SetReadDeadline(time.Now().Add(bodyTimeout)) // unsupported by test recorders, which read no network
	body, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if errors.Is(err, os.ErrDeadlineExceeded) {
		// The deadline stays: net/http's read of the body's rest before
		// the reply then fails too, and the connection is closed.
		return newErr(http.StatusRequestTimeout, "invalid_request_error", "", "request_timeout", fmt.Sprintf("the request body did not arrive within %v", bodyTimeout))
	}
	rc.SetReadDeadline(time.Time{}) // a long streamed reply must not end at it
	if err != nil {
		return badRequest("", "reading the request: "+err.Error())
	}
	if len(body) > maxBody {
		return newErr(http.StatusRequestEntityTooLarge, "invalid_request_error", "", "request_too_large", fmt.Sprintf("the request is over %d MB", maxBody>>20))
	}
	if err := json.Unmarshal(body, v); err != nil {
		// encoding/json quotes the value it refused, which may be megabytes.
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			field := jsonPath(te.Field, reflect.TypeOf(v))
			return badRequest(field, fmt.Sprintf("the request is not valid JSON for this endpoint: %s must be %s, got %s", field, jsonKind(te.Type), quote.Cut(te.Value, quote.Max)))
		}
		return badRequest("", "the request is not valid JSON for this endpoint: "+quote.Cut(err.Error(), 4*quote.Max))
	}
	if fr, ok := v.(fieldReader); ok {
		// The body went into v's struct, so it is an object (or null): one
		// pass more reads it by field name.
		var fields map[string]json.RawMessage
		json.Unmarshal(body, &fields)
		fr.readFields(fields)
	}
	return nil
}

// fieldReader is a request that reads fields by name beside its struct's:
// the further sampler fields (peerknobs.go), the fields it refuses.
type fieldReader interface {
	readFields(map[string]json.RawMessage)
}

// jsonPath is encoding/json's path of a field of a request of type t
// without the Go names of the structs embedded on the way
// ("options.llamaKnobs.temperature", "knobs.seed").
func jsonPath(field string, t reflect.Type) string {
	embedded, seen := map[string]bool{}, map[reflect.Type]bool{}
	var walk func(t reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			if f.Anonymous {
				embedded[f.Name] = true
			}
			walk(f.Type)
		}
	}
	walk(t)
	parts := strings.Split(field, ".")
	return strings.Join(slices.DeleteFunc(parts, func(p string) bool { return embedded[p] }), ".")
}

// jsonKind is what a field of Go type t takes, in JSON's words: encoding/json
// names the Go types ("Go struct field chatRequest.max_tokens of type int").
func jsonKind(t reflect.Type) string {
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Bool:
		return "true or false"
	case reflect.Slice, reflect.Array:
		return "an array"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return jsonKind(t.Elem())
	}
	return "another kind of value"
}

// tooLong refuses, before tokenising, texts that must be more tokens than
// the context holds: no token stands for more than s.tokenBytes bytes of
// text, so B bytes are at least B/s.tokenBytes tokens. Tokenising the 8 MB
// a body may hold took seconds of a core to say the same.
func (s *Server) tooLong(param string, texts ...string) *errBody {
	b := 0
	for _, t := range texts {
		b += len(t)
	}
	if n, win := b/s.tokenBytes, s.e.Window(); n >= win {
		return pastContext(param, win, fmt.Sprintf("the prompt is at least %d tokens", n))
	}
	return nil
}

// longestToken is the most bytes of text one token stands for: its bytes,
// or a whole character, which an unknown character becomes.
func longestToken(tok models.Tokenizer) int {
	n := utf8.UTFMax
	for id := 0; id < tok.Size(); id++ {
		n = max(n, len(tok.TokenBytes(id)))
	}
	return n
}

// fit checks the prompt against the context and settles the budget. A
// prompt that leaves no room, or a budget past the context, is a 400 with
// code context_length_exceeded (as vLLM answers).
func (s *Server) fit(j *job) *errBody {
	win := s.e.Window()
	n := len(j.prompt)
	switch {
	case n == 0:
		return badRequest("messages", "the prompt is empty: the model needs at least one token to continue")
	case n >= win:
		return pastContext("messages", win, fmt.Sprintf("the prompt is %d tokens", n))
	case j.max == 0:
		j.max = win - n
	case j.max > win-n: // not n+j.max, which a huge max_tokens overflows
		return pastContext("max_tokens", win, fmt.Sprintf("the prompt is %d tokens and max_tokens asks for %d more", n, j.max))
	}
	return nil
}

// seed is the request's seed, or a random one.
func seed(p *int64) uint64 {
	if p == nil {
		return rand.Uint64()
	}
	return uint64(*p)
}

// piece is what a reply produced since the last one, and its stats so far.
type piece struct {
	text  string
	lps   []engine.TokenLogprob
	ids   []int // with job.ids
	stats engine.Stats
}

// request is the engine's request for j (without its constraint, which
// run takes from the cache for the reply's time).
func (j *job) request() engine.Request {
	r := engine.Request{Prompt: j.prompt, MaxTokens: j.max, Sampler: j.params, StopIDs: j.stopIDs, Stop: j.stop,
		Logprobs: j.logprobs, TopLogprobs: j.top}
	if j.ids {
		r.Observe = engine.ObserveTokens
	}
	return r
}

// run generates j. emit gets each piece as it comes; the reply ends early
// when emit fails or ctx is done (the client went away), and then its
// blocks go back at once. The result is the engine's; an error is one to
// send instead of a reply (the server is full, or the model failed before
// the first piece).
func (s *Server) run(ctx context.Context, j job, emit func(piece) error) (engine.Result, *errBody) {
	wake := make(chan struct{}, 1)
	req := j.request()
	req.OnText = func(string) {
		select {
		case wake <- struct{}{}:
		default:
		}
	}
	if j.cons != nil {
		p, m, e := s.cons.acquire(j.cons)
		if e != nil {
			return engine.Result{}, e
		}
		defer s.cons.release(p, m) // run returns once the reply has finished
		req.Constraint = m
	}
	start := time.Now()
	r, err := s.e.Start(req)
	switch {
	case errors.Is(err, engine.ErrBusy):
		running, waiting := s.e.Queue() // not Load, which waits for the step in flight
		return engine.Result{}, newErr(http.StatusServiceUnavailable, "server_error", "", "server_overloaded",
			fmt.Sprintf("the server is full (%d requests running, %d waiting): try again later", running, waiting))
	case err != nil:
		return engine.Result{}, newErr(http.StatusInternalServerError, "server_error", "", "", err.Error())
	}
	gen, last := 0, time.Time{}
	stop := func() engine.Result {
		r.Stop()
		res := r.Wait()
		s.met.finish(res, start)
		return res
	}
	for {
		select {
		case <-wake:
		case <-r.Done():
		case <-ctx.Done():
			return stop(), nil
		}
		d := r.Poll()
		if n := d.Stats.GenTokens; n > gen {
			now := time.Now()
			s.met.tokens(n-gen, now.Sub(last), gen > 0)
			gen, last = n, now
		}
		if d.Text != "" || len(d.Logprobs) > 0 || len(d.Marks) > 0 {
			ids := make([]int, len(d.Marks))
			for i, m := range d.Marks {
				ids[i] = m.ID
			}
			if emit(piece{d.Text, d.Logprobs, ids, d.Stats}) != nil {
				return stop(), nil
			}
		}
		if d.Done {
			s.met.finish(d.Result, start)
			return d.Result, nil
		}
	}
}

// runN generates n replies of j at once, as n sequences of the batch
// sharing the prompt's cached blocks; the i-th samples with j's seed + i,
// so a pinned seed gives the same n replies again. emit gets each piece
// with its reply's index, one call at a time. An error body is the first
// reply's that could not run (the others are then stopped).
func (s *Server) runN(ctx context.Context, j job, n int, emit func(int, piece) error) ([]engine.Result, *errBody) {
	if n == 1 {
		res, e := s.run(ctx, j, func(p piece) error { return emit(0, p) })
		return []engine.Result{res}, e
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	res, errs := make([]engine.Result, n), make([]*errBody, n)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i := range n {
		ji := j
		ji.params.Seed += uint64(i)
		wg.Go(func() {
			res[i], errs[i] = s.run(ctx, ji, func(p piece) error {
				mu.Lock()
				defer mu.Unlock()
				return emit(i, p)
			})
			if errs[i] != nil {
				cancel()
			}
		})
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return nil, e
		}
	}
	return res, nil
}

// stream sends j's n replies as an OpenAI route's server-sent events: head
// wraps the choices in the route's chunk, each makes a piece's choice and
// end each reply's last one (with the finish reason); a chunk with no
// choices and the usage follows when usage, then [DONE]. An error found
// before the first event is sent as an error response, one after it as an
// error event.
func (s *Server) stream(w http.ResponseWriter, r *http.Request, j job, n int, usage bool,
	head func(choices []any) map[string]any, each func(int, piece) any, end func(int, engine.Result) any) {
	sse := newSSE(w)
	start := time.Now()
	res, e := s.runN(r.Context(), j, n, func(i int, p piece) error { return sse.send(head([]any{each(i, p)})) })
	if e != nil {
		writeErr(w, r, e)
		return
	}
	for _, x := range res {
		if x.Reason == engine.ReasonStopped {
			return // the client went away
		}
	}
	for _, x := range res {
		if x.Err != nil {
			sse.send(map[string]any{"error": apiErr{Message: x.Err.Error(), Type: "server_error"}})
			sse.done()
			return
		}
	}
	for i, x := range res {
		sse.send(head([]any{end(i, x)}))
	}
	if usage {
		b := head([]any{})
		b["usage"] = usageOf(res)
		sse.send(withTimings(b, res, start))
	}
	sse.done()
}

// withTimings puts llama-server's timings beside the usage of an OpenAI
// route's answer, a stream's usage chunk or a whole reply, as llama-server
// sends them in both: a client cannot time the decode from a stream whose
// pieces hold several tokens (chat --remote read 10,000 tok/s), nor from
// one answer. Only for a request of one reply, whose times they are.
func withTimings(b map[string]any, res []engine.Result, start time.Time) map[string]any {
	if len(res) == 1 {
		b["timings"] = llamaTimings(res[0].Stats, time.Since(start))
	}
	return b
}

// whole runs j's n replies to their end for an OpenAI route's one answer;
// false when an error was sent instead.
func (s *Server) whole(w http.ResponseWriter, r *http.Request, j job, n int) ([]engine.Result, bool) {
	res, e := s.runN(r.Context(), j, n, func(int, piece) error { return nil })
	for _, x := range res {
		if e == nil && x.Err != nil {
			e = newErr(http.StatusInternalServerError, "server_error", "", "", x.Err.Error())
		}
	}
	if e != nil {
		writeErr(w, r, e)
		return nil, false
	}
	return res, true
}

// replies runs a request's replies to their end for its one answer: the
// choices (n sampled, the n likeliest of best_of, or the n best of a beam
// search) and every reply generated (for the usage); false when an error
// was sent instead.
func (s *Server) replies(w http.ResponseWriter, r *http.Request, j job, k *knobs) (choices, all []engine.Result, ok bool) {
	if k.UseBeamSearch {
		return s.beam(w, r, j, k)
	}
	all, ok = s.whole(w, r, j, k.bestOf())
	if !ok {
		return nil, nil, false
	}
	return best(all, k.n()), all, true
}

// beam is vLLM's use_beam_search: best_of (or n) beams, the n best
// finished hypotheses by logp / length^length_penalty (default 1, as
// vLLM's). The search takes stop ids only: stop strings, a response format
// and logprobs are refused with it.
func (s *Server) beam(w http.ResponseWriter, r *http.Request, j job, k *knobs) (choices, all []engine.Result, ok bool) {
	if len(j.stop) > 0 || j.cons != nil || j.logprobs {
		writeErr(w, r, badRequest("use_beam_search", "use_beam_search takes no stop strings, response format or logprobs"))
		return nil, nil, false
	}
	alpha := 1.0
	if k.LengthPenalty != nil {
		alpha = *k.LengthPenalty
	}
	br, err := s.e.Beam(engine.BeamRequest{Prompt: j.prompt, MaxTokens: j.max, Width: k.bestOf(), LengthPenalty: alpha, StopIDs: j.stopIDs,
		Done: r.Context().Done()})
	switch {
	case errors.Is(err, engine.ErrBeamStopped):
		return nil, nil, false // the client went away: nobody to answer
	case errors.Is(err, engine.ErrBusy):
		writeErr(w, r, newErr(http.StatusServiceUnavailable, "server_error", "", "server_overloaded", "the server is full: try again later"))
		return nil, nil, false
	case err != nil:
		writeErr(w, r, newErr(http.StatusInternalServerError, "server_error", "", "", err.Error()))
		return nil, nil, false
	}
	for _, h := range br.Hypotheses[:min(k.n(), len(br.Hypotheses))] {
		choices = append(choices, engine.Result{Text: s.m.Tokenizer().Decode(h.IDs), Reason: h.Reason, StopID: h.StopID,
			Stats: engine.Stats{PromptTokens: br.Stats.PromptTokens, ReusedTokens: br.Stats.ReusedTokens, GenTokens: h.Length}})
	}
	if len(choices) == 0 {
		writeErr(w, r, newErr(http.StatusInternalServerError, "server_error", "", "", "the beam search finished no hypothesis"))
		return nil, nil, false
	}
	return choices, choices, true
}

// finishReason is the OpenAI name of why a reply ended.
func finishReason(res engine.Result) string {
	switch res.Reason {
	case engine.ReasonLength:
		return "length"
	case engine.ReasonStopped:
		return "abort"
	case engine.ReasonError:
		return "error"
	}
	return "stop" // the end-of-turn id or a stop string
}

// tokenText is a token's text for logprobs (its bytes as UTF-8, invalid
// sequences replaced) and its bytes.
func (s *Server) tokenText(id int) (string, []int) {
	b := s.m.Tokenizer().TokenBytes(id)
	ints := make([]int, len(b))
	for i, c := range b {
		ints[i] = int(c)
	}
	return strings.ToValidUTF8(string(b), "\uFFFD"), ints
}

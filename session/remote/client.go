// Package remote is a client of OpenAI-compatible servers — `chat serve`,
// vLLM, SGLang, llama-server, ollama: it streams chat and text completions
// (server-sent events, with the usage block and llama-server's timings),
// lists the models, and reads the server's Prometheus /metrics under
// whichever names it uses (metrics.go). The session's remote backend and
// `chat bench serve` (bench.go) are built on it. It knows nothing of the
// engine, the session or the UI.
package remote

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"chat/models/quote"
	"chat/session/termtext"
)

// Client talks to one server.
type Client struct {
	base string // the server's root, without /v1
	key  string
	http *http.Client

	kind       string // which server (Identify); "" unknown
	legacyVLLM bool   // a vLLM before 0.10.2 (guided_* fields)

	// Silence bounds the quiet of a reply that has begun (ReplySilence
	// unless set; tests shorten it).
	Silence time.Duration
}

// ReplySilence is how long a streamed reply may go without a byte (not a
// piece, not a keep-alive comment) once its first piece came, before it
// ends with an error that names the server and the silence: a server that
// went quiet with the connection open kept the reply waiting until Ctrl+C.
// The wait for the first piece is not bounded by it: a long prompt's
// prefill sends nothing on most servers.
const ReplySilence = 60 * time.Second

// New returns a client of the server at rawURL (its root or its /v1). A
// URL without a scheme (localhost:8080, as OLLAMA_HOST and curl take it)
// is http.
func New(rawURL, apiKey string) (*Client, error) {
	raw := strings.TrimSpace(rawURL)
	if raw != "" && !strings.Contains(raw, "://") {
		raw = "http://" + raw
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("remote: %q is not an http(s) URL", rawURL)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	for _, route := range []string{"/chat/completions", "/completions", "/models"} {
		u.Path = strings.TrimSuffix(u.Path, route) // an endpoint's URL, copied from a curl line
	}
	u.Path = strings.TrimSuffix(u.Path, "/v1")
	u.RawQuery, u.Fragment = "", ""
	return &Client{base: u.String(), key: apiKey, http: &http.Client{}, Silence: ReplySilence}, nil
}

// URL is the server's root.
func (c *Client) URL() string { return c.base }

// Message is one chat turn.
type Message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// Request is one reply to stream. Messages asks /v1/chat/completions;
// without them Prompt asks /v1/completions (a text to continue). The knobs
// go with every request; the optional ones are sent when set (vLLM,
// llama-server and ollama read top_k, min_p and repetition_penalty; a
// server that does not know them ignores them).
type Request struct {
	Model     string
	Messages  []Message
	Prompt    string
	MaxTokens int
	// OmitMaxTokens leaves max_tokens out of the request, so the server
	// takes the rest of its context, while MaxTokens still bounds what the
	// stream keeps: the budget a server refused as past its context is
	// more than that rest.
	OmitMaxTokens bool
	Greedy        bool // sent as temperature 0

	Temperature       float64
	TopP, MinP        float64 // 0: not sent
	TopK              int     // 0: not sent
	Seed              *uint64
	PresencePenalty   float64
	FrequencyPenalty  float64
	RepetitionPenalty float64 // 0 or 1: not sent
	Stop              []string
	IgnoreEOS         bool
	Constraint        *Constraint // constrained output, in the fields this server reads (constraint.go)
	// Peer are llama-server's further sampler fields (dry_multiplier,
	// mirostat...), by name, sent as they are.
	Peer map[string]any
}

func (r *Request) body() map[string]any {
	b := map[string]any{"model": r.Model, "stream": true, "stream_options": map[string]any{"include_usage": true}}
	if r.Messages != nil {
		b["messages"] = r.Messages
	} else {
		b["prompt"] = r.Prompt
	}
	if r.MaxTokens > 0 && !r.OmitMaxTokens {
		b["max_tokens"] = r.MaxTokens
	}
	b["temperature"] = r.Temperature
	if r.Greedy {
		b["temperature"] = 0
	}
	if r.TopP > 0 && r.TopP < 1 {
		b["top_p"] = r.TopP
	}
	if r.MinP > 0 {
		b["min_p"] = r.MinP
	}
	if r.TopK > 0 {
		b["top_k"] = r.TopK
	}
	if r.Seed != nil {
		b["seed"] = int64(*r.Seed)
	}
	if r.PresencePenalty != 0 {
		b["presence_penalty"] = r.PresencePenalty
	}
	if r.FrequencyPenalty != 0 {
		b["frequency_penalty"] = r.FrequencyPenalty
	}
	if r.RepetitionPenalty > 0 && r.RepetitionPenalty != 1 {
		b["repetition_penalty"] = r.RepetitionPenalty
		b["repeat_penalty"] = r.RepetitionPenalty // llama-server's name
	}
	if len(r.Stop) > 0 {
		b["stop"] = r.Stop
	}
	if r.IgnoreEOS {
		b["ignore_eos"] = true
	}
	for k, v := range r.Peer {
		b[k] = v
	}
	return b
}

// Usage is the usage block (and, from llama-server, its timings).
type Usage struct {
	PromptTokens     int
	CompletionTokens int
	CachedTokens     int  // prompt tokens the server's prefix cache held
	Cached           bool // the server reported CachedTokens

	// llama-server's timings (zero when absent).
	PromptMS, PredictedMS float64
	PromptPerSecond       float64
	PredictedPerSecond    float64
}

// Event is one piece of a streamed reply.
type Event struct {
	Text   string
	Finish string // "stop", "length", ... on the last piece
	Usage  *Usage // when the server sent it (the last event, mostly)
}

// Stream is a reply being received.
type Stream struct {
	body io.ReadCloser
	sc   *bufio.Scanner
	ev   Event
	err  error
	Sent time.Time // when the request was sent

	server  string             // the server's URL, for the silence's error
	cancel  context.CancelFunc // ends the request
	silence time.Duration      // the bound of a quiet once a piece came (0: none)
	watch   *time.Timer        // cancels the request after silence; nil before the first piece
	silent  atomic.Bool        // the watch went off

	maxTokens          int   // what was asked for (0: no bound)
	piecesLeft         int   // text events still taken
	bytesLeft          int64 // and their bytes
	maxPieces, maxText int64 // the bounds, for the error
}

// A server streams a reply of at most max_tokens tokens, one or more to a
// piece; one that goes on past twice as many pieces (or maxTokenBytes a
// token, a piece's text when it sends its tokens whole) is not honouring
// max_tokens, and what it sends is no longer kept: a server that streamed
// without end grew the reply in memory for as long as it ran.
const (
	maxLine       = 16 << 20 // one line of the stream (a chunk of JSON)
	extraPieces   = 64
	maxTokenBytes = 1 << 10
)

// Stream sends r and returns the reply as it comes.
func (c *Client) Stream(ctx context.Context, r Request) (*Stream, error) {
	path := "/v1/chat/completions"
	if r.Messages == nil {
		path = "/v1/completions"
	}
	body := r.body()
	if r.Constraint != nil {
		f, err := c.ConstraintFields(*r.Constraint, r.Messages != nil)
		if err != nil {
			return nil, err
		}
		maps.Copy(body, f)
	}
	b, err := json.Marshal(body)
	if err != nil {
		return nil, err
	}
	sent := time.Now()
	ctx, cancel := context.WithCancel(ctx)
	resp, err := c.do(ctx, "POST", path, b)
	if err != nil {
		cancel()
		return nil, err
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), maxLine)
	st := &Stream{body: resp.Body, sc: sc, Sent: sent, maxTokens: r.MaxTokens, server: c.base, cancel: cancel, silence: c.Silence}
	if r.MaxTokens > 0 {
		st.maxPieces, st.maxText = 2*int64(r.MaxTokens)+extraPieces, int64(r.MaxTokens+extraPieces)*maxTokenBytes
		st.piecesLeft, st.bytesLeft = int(st.maxPieces), st.maxText
	}
	return st, nil
}

// do sends a request and turns an error status into an error with the
// server's message.
func (c *Client) do(ctx context.Context, method, path string, body []byte) (*http.Response, error) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, rd)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	if c.key != "" {
		req.Header.Set("Authorization", "Bearer "+c.key)
	}
	resp, err := c.http.Do(req)
	if errors.Is(err, syscall.ECONNREFUSED) {
		return nil, refusedError{err}
	}
	if err != nil {
		return nil, fmt.Errorf("remote: %w", err)
	}
	if resp.StatusCode/100 != 2 {
		defer resp.Body.Close()
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		return nil, &StatusError{Status: resp.StatusCode, Message: errorMessage(msg)}
	}
	return resp, nil
}

// refusedError is a connection refused: nothing listens at the URL, which
// a user reads better than Go's "Get URL: dial tcp ADDR: connect: ...".
type refusedError struct{ err error }

func (e refusedError) Error() string {
	return "remote: connection refused: no server runs there (chat serve MODEL starts one)"
}

func (e refusedError) Unwrap() error { return e.err }

// StatusError is a server's error answer.
type StatusError struct {
	Status  int
	Message string
}

func (e *StatusError) Error() string {
	msg := fmt.Sprintf("the server answered %d %s: %s", e.Status, http.StatusText(e.Status), e.Message)
	if e.Status == http.StatusUnauthorized {
		// The server's hint ("send Authorization: Bearer KEY") names the
		// header; the flag that sends it is what the user types.
		msg += " (--api-key KEY sends the key)"
	}
	return msg
}

// errorMessage finds the message in an error body: OpenAI's
// {"error":{"message"}}, ollama's {"error":"..."}, vLLM's {"message"};
// cleaned to one line (termtext.Line), so it can be shown as it is.
func errorMessage(b []byte) string { return termtext.Line(findMessage(b)) }

func findMessage(b []byte) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
	}
	if json.Unmarshal(b, &v) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &inner) == nil && inner.Message != "":
			return inner.Message
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			return s
		case v.Message != "":
			return v.Message
		}
	}
	s := strings.TrimSpace(string(b))
	if len(s) > 200 {
		s = s[:200] + "…"
	}
	return s
}

// Next reads the next event; it reports false at the end of the stream or
// on an error (Err).
func (s *Stream) Next() bool {
	for s.sc.Scan() {
		if s.watch != nil {
			s.watch.Reset(s.silence)
		}
		line, ok := strings.CutPrefix(s.sc.Text(), "data:")
		if !ok {
			continue
		}
		line = strings.TrimSpace(line)
		if line == "[DONE]" {
			return false
		}
		ev, err := parseChunk([]byte(line))
		if err != nil {
			s.err = err
			return false
		}
		if s.maxTokens > 0 && ev.Text != "" {
			s.piecesLeft--
			s.bytesLeft -= int64(len(ev.Text))
			if s.piecesLeft < 0 || s.bytesLeft < 0 {
				s.err = fmt.Errorf("remote: the server sent more than %d pieces or %d KB of text for a reply of at most %d tokens: it does not honour max_tokens",
					s.maxPieces, s.maxText>>10, s.maxTokens)
				return false
			}
		}
		if ev.Text != "" && s.watch == nil && s.silence > 0 {
			s.watch = time.AfterFunc(s.silence, func() {
				s.silent.Store(true)
				s.cancel()
			})
		}
		s.ev = ev
		return true
	}
	s.err = s.sc.Err()
	if s.silent.Load() {
		s.err = fmt.Errorf("remote: %s sent nothing for %s mid-reply, the connection still open: the reply ends here", s.server, seconds(s.silence))
		return false
	}
	if errors.Is(s.err, bufio.ErrTooLong) {
		// bufio's own words ("bufio.Scanner: token too long") do not say
		// who sent what.
		s.err = fmt.Errorf("remote: the server sent a line of more than %d MB in its stream", maxLine>>20)
	}
	return false
}

// Event is the event Next read.
func (s *Stream) Event() Event { return s.ev }

// Err is why the stream ended early, or nil.
func (s *Stream) Err() error {
	if errors.Is(s.err, context.Canceled) {
		return nil
	}
	return s.err
}

// Close ends the stream (the server stops the reply).
func (s *Stream) Close() error {
	if s.watch != nil {
		s.watch.Stop()
	}
	err := s.body.Close()
	s.cancel()
	return err
}

// seconds writes d as "60 s" (or "0.1 s").
func seconds(d time.Duration) string {
	return strconv.FormatFloat(d.Seconds(), 'f', -1, 64) + " s"
}

// parseChunk reads one chunk of a chat or text completion stream.
func parseChunk(b []byte) (Event, error) {
	var c struct {
		Choices []struct {
			Delta struct {
				Content *string `json:"content"`
			} `json:"delta"`
			Text         *string `json:"text"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *struct {
			PromptTokens        int `json:"prompt_tokens"`
			CompletionTokens    int `json:"completion_tokens"`
			PromptTokensDetails *struct {
				CachedTokens *int `json:"cached_tokens"`
			} `json:"prompt_tokens_details"`
		} `json:"usage"`
		Timings *struct {
			CacheN             *int    `json:"cache_n"`
			PromptMS           float64 `json:"prompt_ms"`
			PromptPerSecond    float64 `json:"prompt_per_second"`
			PredictedMS        float64 `json:"predicted_ms"`
			PredictedPerSecond float64 `json:"predicted_per_second"`
		} `json:"timings"`
		Error json.RawMessage `json:"error"`
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return Event{}, fmt.Errorf("remote: a stream event that is not JSON: %w", err)
	}
	if len(c.Error) > 0 && string(c.Error) != "null" {
		return Event{}, fmt.Errorf("remote: the server failed mid-reply: %s", errorMessage(b))
	}
	var ev Event
	for _, ch := range c.Choices {
		if ch.Delta.Content != nil {
			ev.Text += *ch.Delta.Content
		}
		if ch.Text != nil {
			ev.Text += *ch.Text
		}
		if ch.FinishReason != nil {
			ev.Finish = *ch.FinishReason
		}
	}
	if c.Usage != nil || c.Timings != nil {
		u := &Usage{}
		if c.Usage != nil {
			u.PromptTokens, u.CompletionTokens = c.Usage.PromptTokens, c.Usage.CompletionTokens
			if d := c.Usage.PromptTokensDetails; d != nil && d.CachedTokens != nil {
				u.CachedTokens, u.Cached = *d.CachedTokens, true
			}
		}
		if t := c.Timings; t != nil {
			u.PromptMS, u.PredictedMS, u.PromptPerSecond, u.PredictedPerSecond = t.PromptMS, t.PredictedMS, t.PromptPerSecond, t.PredictedPerSecond
			if t.CacheN != nil && !u.Cached {
				u.CachedTokens, u.Cached = *t.CacheN, true
			}
		}
		ev.Usage = u
	}
	return ev, nil
}

// Model is one model a server offers.
type Model struct {
	ID      string
	Context int    // its context length when the server says (vLLM's max_model_len, llama-server's n_ctx_train); 0 otherwise
	OwnedBy string // the server's owned_by ("vllm", "sglang", "llamacpp", "chat"; ollama says "library")
}

// modelsTimeout bounds Models, the first request to a server: one that
// took the connection and never answered kept chat bench serve waiting
// for ever (the TUI's NewRemote gave it 15 s of its own). A variable:
// tests lower it.
var modelsTimeout = 15 * time.Second

// Models lists the server's models (GET /v1/models).
func (c *Client) Models(ctx context.Context) ([]Model, error) {
	ctx, cancel := context.WithTimeout(ctx, modelsTimeout)
	defer cancel()
	ms, err := c.models(ctx)
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return nil, fmt.Errorf("remote: the server did not answer GET /v1/models within %v", modelsTimeout)
	}
	return ms, err
}

func (c *Client) models(ctx context.Context) ([]Model, error) {
	resp, err := c.do(ctx, "GET", "/v1/models", nil)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var v struct {
		Data []struct {
			ID          string `json:"id"`
			OwnedBy     string `json:"owned_by"`
			MaxModelLen int    `json:"max_model_len"`
			Meta        *struct {
				NCtxTrain int `json:"n_ctx_train"`
			} `json:"meta"`
		} `json:"data"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 16<<20)).Decode(&v); err != nil {
		if ct := resp.Header.Get("Content-Type"); !strings.Contains(ct, "json") {
			// A web page, a proxy's login form: "invalid character '<'" said
			// nothing of what the URL is.
			return nil, fmt.Errorf("remote: GET /v1/models answered %s, not JSON: this URL is not an OpenAI-compatible API (give the server's base URL, as http://HOST:8080 for llama-server)", quote.Quote(ct))
		}
		return nil, fmt.Errorf("remote: /v1/models: %w", err)
	}
	out := make([]Model, 0, len(v.Data))
	for _, d := range v.Data {
		m := Model{ID: d.ID, Context: d.MaxModelLen, OwnedBy: d.OwnedBy}
		if m.Context == 0 && d.Meta != nil {
			m.Context = d.Meta.NCtxTrain
		}
		out = append(out, m)
	}
	return out, nil
}

// Props is what llama-server's GET /props (and chat serve's) says of the
// model: its chat template, when the server reports one ("" for a model
// without one: llama-server's web UI then completes text), and the context
// a reply has.
type Props struct {
	ChatTemplate *string // nil: not reported (no /props: vLLM, SGLang, ollama)
	NCtx         int     // default_generation_settings.n_ctx; 0 when not reported
}

// Props asks GET /props; a server without it gives an error.
func (c *Client) Props(ctx context.Context) (Props, error) {
	var v struct {
		ChatTemplate *string `json:"chat_template"`
		Default      struct {
			NCtx int `json:"n_ctx"`
		} `json:"default_generation_settings"`
	}
	if err := c.getJSON(ctx, "/props", &v); err != nil {
		return Props{}, err
	}
	return Props{ChatTemplate: v.ChatTemplate, NCtx: max(v.Default.NCtx, 0)}, nil
}

// PromptTokens counts the tokens the server makes of a text completion's
// prompt, its BOS included, by its /tokenize (chat serve's and
// llama-server's take content, vLLM's model and prompt); other servers
// give an error.
func (c *Client) PromptTokens(ctx context.Context, model, prompt string) (int, error) {
	var body map[string]any
	switch c.kind {
	case KindChat, KindLlamaCpp:
		body = map[string]any{"content": prompt, "add_special": true, "parse_special": false}
	case KindVLLM:
		body = map[string]any{"model": model, "prompt": prompt, "add_special_tokens": true}
	default:
		return 0, errors.New("remote: no /tokenize known on this server")
	}
	b, err := json.Marshal(body)
	if err != nil {
		return 0, err
	}
	resp, err := c.do(ctx, "POST", "/tokenize", b)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	var v struct {
		Count  *int              `json:"count"`
		Tokens []json.RawMessage `json:"tokens"`
	}
	if err := json.NewDecoder(io.LimitReader(resp.Body, 256<<20)).Decode(&v); err != nil {
		return 0, fmt.Errorf("remote: /tokenize: %w", err)
	}
	if v.Count != nil {
		return *v.Count, nil
	}
	return len(v.Tokens), nil
}

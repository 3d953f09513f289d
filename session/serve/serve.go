// Package serve is `chat serve`: the engine behind an HTTP API that OpenAI
// clients (POST /v1/chat/completions, /v1/responses, /v1/completions,
// /v1/embeddings, GET /v1/models), ollama clients (POST /api/chat,
// /api/generate, /api/embed, GET /api/tags) and llama-server's (POST
// /completion, /tokenize, GET /props) use unchanged, with GET /health and
// Prometheus metrics at GET /metrics.
//
// It sits where the UI sits in the data flow, as another front end of the
// session layer: it turns a request's messages into ids with the session's
// chat templates (session.TemplateFor, the same rendering a chat in the TUI
// gets) and hands them to one engine shared by every request, which batches
// them continuously (engine/schedule.go). So it imports session and engine
// and is imported by main only; session and engine know nothing of HTTP.
package serve

import (
	"context"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"chat/engine"
	"chat/models"
	"chat/session"
)

// Options configure a server.
type Options struct {
	// Name is the model id clients ask for ("" = the model's Info().Name
	// without its extension: a GGUF file's general.name, else the file's
	// base name).
	Name string
	// Engine sizes the shared engine: MaxSeqs (--parallel), MaxWaiting,
	// MaxBatchTokens, KVMem.
	Engine engine.Options
	// APIKey, when set, is required as "Authorization: Bearer KEY" on the
	// /v1 and /api routes (/health and /metrics stay open, as in vLLM).
	APIKey string
	// Size is the model file's size in bytes, for /api/tags.
	Size int64
	// File is the model file's path: a request may name the model by its
	// file name, with or without the extension, as well as by the id.
	File string
}

// Server serves one model.
type Server struct {
	m       models.Model
	e       *engine.Engine
	tmpl    session.Template
	name    string
	files   []string // the file's base name, with and without extension
	key     string
	size    int64
	created time.Time
	met     *metrics
	cons    *constraints
	mux     *http.ServeMux
	// tokenBytes bounds the text bytes of one token (tooLong).
	tokenBytes int
	embedMu    sync.Mutex // one embedding request at a time (embed.go)
}

// New starts an engine on m.
func New(m models.Model, o Options) (*Server, error) {
	if m == nil {
		return nil, errors.New("serve: no model")
	}
	e := engine.NewWithOptions(m, o.Engine)
	if err := e.Err(); err != nil {
		return nil, err // "engine: kvcache: ...", once
	}
	if err := e.Warm(); err != nil {
		return nil, fmt.Errorf("serve: %w", err)
	}
	name := o.Name
	if name == "" {
		name = trimModelExt(m.Info().Name)
	}
	// The id is a /metrics label, which must be UTF-8 (registering panics
	// otherwise), and JSON shows clients invalid bytes as U+FFFD: a file's
	// general.name may be any bytes, so the id is made what clients see.
	name = strings.ToValidUTF8(name, "\uFFFD")
	s := &Server{m: m, e: e, tmpl: session.TemplateFor(m), name: name, key: o.APIKey, size: o.Size, created: time.Now(),
		cons: newConstraints(m), tokenBytes: longestToken(m.Tokenizer())}
	if o.File != "" {
		b := filepath.Base(o.File)
		s.files = []string{b, strings.TrimSuffix(b, filepath.Ext(b))}
	}
	s.met = newMetrics(s)
	s.routes()
	return s, nil
}

// trimModelExt drops a model file's extension from a name (a checkpoint's
// name is its file name), and nothing else: a GGUF file's general.name
// such as "Llama 3.2 1B Instruct" or "Qwen2.5 0.5B Instruct" has dots that
// are not extensions (filepath.Ext made them "Llama 3" and "Qwen2").
func trimModelExt(name string) string {
	switch ext := filepath.Ext(name); strings.ToLower(ext) {
	case ".gguf", ".pt", ".pth", ".bin":
		return strings.TrimSuffix(name, ext)
	}
	return name
}

// Engine is the shared engine (tests read its pool).
func (s *Server) Engine() *engine.Engine { return s.e }

// Name is the model id.
func (s *Server) Name() string { return s.name }

// Close stops every running reply and the engine.
func (s *Server) Close() { s.e.Close() }

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) { s.mux.ServeHTTP(w, r) }

func (s *Server) routes() {
	mux := http.NewServeMux()
	var served []string // the patterns, for the 404 of a path not served
	handle := func(pattern string, h http.Handler) {
		mux.Handle(pattern, h)
		served = append(served, pattern)
	}
	health := http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	handle("GET /health", health)
	handle("GET /v1/health", health) // llama-server's alias
	handle("GET /metrics", s.met.handler())
	handle("POST /v1/chat/completions", s.auth(s.chatCompletions))
	handle("POST /v1/responses", s.auth(s.responses))
	handle("POST /v1/completions", s.auth(s.completions))
	handle("POST /v1/embeddings", s.auth(s.openaiEmbeddings))
	handle("POST /tokenize", s.auth(s.tokenize))
	handle("POST /detokenize", s.auth(s.detokenize))
	handle("POST /completion", s.auth(s.llamaCompletion))
	handle("POST /completions", s.auth(s.llamaCompletion))
	handle("GET /props", s.auth(s.props))
	handle("GET /slots", s.auth(s.slots))
	handle("GET /v1/models", s.auth(s.models))
	handle("GET /v1/models/{model}", s.auth(s.modelByID))
	handle("POST /api/chat", s.auth(s.ollamaChat))
	handle("POST /api/generate", s.auth(s.ollamaGenerate))
	handle("POST /api/embed", s.auth(s.ollamaEmbed))
	handle("POST /api/embeddings", s.auth(s.ollamaEmbeddings))
	handle("GET /api/tags", s.auth(s.ollamaTags))
	handle("GET /api/version", s.auth(s.ollamaVersion))
	handle("POST /api/show", s.auth(s.ollamaShow))
	handle("GET /api/ps", s.auth(s.ollamaPs))
	// The ollama CLI's heartbeat (HEAD /) before any request.
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		io.WriteString(w, "chat serve is running\n")
	})
	// A path not served (OpenAI's /v1/images/generations, a GET where a
	// POST is wanted) is answered with the routes of its API, so the client's
	// author sees what to call instead: each API's list, made once here.
	byAPI := map[string][]string{}
	for _, p := range served {
		_, path, _ := strings.Cut(p, " ")
		byAPI[apiOf(path)] = append(byAPI[apiOf(path)], p)
	}
	listed := map[string]string{}
	for api, same := range byAPI {
		listed[api] = strings.Join(same, ", ")
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		api := apiOf(r.URL.Path)
		msg := fmt.Sprintf("%s %s is not served here; the routes under %s are %s", r.Method, r.URL.Path, api, listed[api])
		apiError(w, r, http.StatusNotFound, "invalid_request_error", "", "not_found", msg)
	})
	s.mux = mux
}

// apiOf is the API a path belongs to: "/v1/" (OpenAI's), "/api/"
// (ollama's) or "/" (llama-server's own and the server's).
func apiOf(path string) string {
	for _, api := range []string{"/v1/", "/api/"} {
		if strings.HasPrefix(path, api) {
			return api
		}
	}
	return "/"
}

// auth requires the API key, when there is one.
func (s *Server) auth(h http.HandlerFunc) http.HandlerFunc {
	if s.key == "" {
		return h
	}
	want := []byte("Bearer " + s.key)
	return func(w http.ResponseWriter, r *http.Request) {
		if subtle.ConstantTimeCompare([]byte(r.Header.Get("Authorization")), want) != 1 {
			apiError(w, r, http.StatusUnauthorized, "invalid_request_error", "", "invalid_api_key", "a missing or wrong API key: send \"Authorization: Bearer KEY\"")
			return
		}
		h(w, r)
	}
}

// CheckAddr refuses to listen beyond this machine without an API key.
func CheckAddr(addr, key string) error {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %v (want HOST:PORT)", addr, err)
	}
	if _, err := net.LookupPort("tcp", port); err != nil && port != "" {
		return fmt.Errorf("--addr %q: %v (want a port from 0 to 65535)", addr, err)
	}
	if key != "" || isLoopback(host) {
		return nil
	}
	shown := host
	if shown == "" {
		shown = "every interface"
	}
	return fmt.Errorf("--addr %s listens on %s: give --api-key KEY to serve beyond this machine", addr, shown)
}

func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// httpServer is the HTTP server of ListenAndServe. A client that is slow
// or silent cannot hold a connection for ever: its headers (of at most 1
// MB, net/http's default) must arrive within 10 s, its body within
// bodyTimeout (decode), and a kept-alive connection is closed after 2
// minutes without a request.
func (s *Server) httpServer(ctx context.Context) *http.Server {
	return &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		MaxHeaderBytes: http.DefaultMaxHeaderBytes, BaseContext: func(net.Listener) context.Context { return ctx }}
}

// ListenAndServe serves until ctx is done, then shuts down: requests in
// flight are stopped, the engine closed.
func (s *Server) ListenAndServe(ctx context.Context, addr string, ready func(net.Addr)) error {
	if err := CheckAddr(addr, s.key); err != nil {
		return err
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	hs := s.httpServer(ctx)
	if ready != nil {
		ready(ln.Addr())
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		s.Close()
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s.Close() // stops the replies, so streams end
	err = hs.Shutdown(sctx)
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}

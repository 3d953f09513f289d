package remote

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"syscall"
	"testing"
	"time"

	"chat/models/testmodels"
	"chat/session/remote/remotetest"
)

// A server's error message is shown in the terminal: its escape sequences
// and control characters must not reach it.
func TestErrorMessageCleaned(t *testing.T) {
	for body, want := range map[string]string{
		`{"error":{"message":"no \u001b[2Jroom\nleft"}}`: "no room left",
		`{"error":"bad\u0007 model"}`:                    "bad model",
		`{"message":"\u009b31mred"}`:                     "red",
		"plain \x1b]0;title\x07text":                     "plain text",
	} {
		if got := errorMessage([]byte(body)); got != want {
			t.Errorf("errorMessage(%q) = %q, want %q", body, got, want)
		}
	}
}

// --remote localhost:8080 (OLLAMA_HOST's form, which curl also takes) was
// refused as "not an http(s) URL"; it is http. Other schemes are refused.
func TestNewURL(t *testing.T) {
	for raw, want := range map[string]string{
		"localhost:8080":             "http://localhost:8080",
		"127.0.0.1:8080/v1":          "http://127.0.0.1:8080",
		" http://h:1/v1/ ":           "http://h:1",
		"https://api.example.com/v1": "https://api.example.com",
		// An endpoint's URL, as in a curl line: it asked for
		// /v1/chat/completions/v1/models.
		"http://h:1/v1/chat/completions": "http://h:1",
		"http://h:1/v1/completions/":     "http://h:1",
		"http://h:1/v1/models":           "http://h:1",
		"http://h:1/proxy/v1":            "http://h:1/proxy",
		"ftp://x":                        "",
		"":                               "",
		"http://":                        "",
	} {
		c, err := New(raw, "")
		switch {
		case want == "" && err == nil:
			t.Errorf("New(%q) = %s; want an error", raw, c.URL())
		case want != "" && (err != nil || c.URL() != want):
			t.Errorf("New(%q): %v; want %s", raw, err, want)
		}
	}
}

// A URL where nothing listens said `Get "http://127.0.0.1:1/v1/models":
// dial tcp 127.0.0.1:1: connect: connection refused`, and chat bench serve
// put "no model to ask for (give --model)" before it; it says what is
// wrong and what starts a server.
func TestConnectionRefused(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	c, err := New(addr, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Models(context.Background())
	want := "remote: connection refused: no server runs there (chat serve MODEL starts one)"
	if err == nil || err.Error() != want || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("Models on a closed port: %v; want %q", err, want)
	}
}

// A server that streams past max_tokens (here, up to 100,000 pieces for a
// reply of at most 10 tokens) is cut off with one line after twice as many
// pieces: the reply was kept in memory for as long as such a server ran.
func TestStreamBeyondMaxTokens(t *testing.T) {
	for i, piece := range []string{"w ", strings.Repeat("x", 4<<10), "w "} {
		omit := i == 2 // the budget bounds the stream, not sent (OmitMaxTokens)
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			body, _ := io.ReadAll(r.Body)
			if sent := strings.Contains(string(body), "max_tokens"); sent == omit {
				t.Errorf("OmitMaxTokens %v, but the body %s", omit, body)
			}
			chunk := fmt.Sprintf("data: {\"choices\":[{\"delta\":{\"content\":%q}}]}\n\n", piece)
			for i := 0; i < 100000; i++ {
				if _, err := io.WriteString(w, chunk); err != nil {
					return
				}
			}
			io.WriteString(w, "data: [DONE]\n\n")
		}))
		c, err := New(ts.URL, "")
		if err != nil {
			t.Fatal(err)
		}
		st, err := c.Stream(context.Background(), Request{Prompt: "hi", MaxTokens: 10, OmitMaxTokens: omit})
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for st.Next() {
			n++
		}
		st.Close()
		ts.Close()
		if err := st.Err(); n > 2*10+extraPieces || err == nil || !strings.Contains(err.Error(), "does not honour max_tokens") {
			t.Errorf("pieces of %d bytes: read %d, error %v; want at most %d and one saying max_tokens is not honoured", len(piece), n, err, 2*10+extraPieces)
		}
	}
}

// A stream line longer than the client takes is one line saying so, not
// bufio's "token too long".
func TestStreamLineTooLong(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.ReadAll(r.Body)
		io.WriteString(w, `data: {"choices":[{"delta":{"content":"`)
		chunk := strings.Repeat("a", 1<<20)
		for i := 0; i < 20; i++ {
			if _, err := io.WriteString(w, chunk); err != nil {
				return
			}
		}
	}))
	defer ts.Close()
	c, err := New(ts.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Stream(context.Background(), Request{Prompt: "hi", MaxTokens: 10})
	if err != nil {
		t.Fatal(err)
	}
	for st.Next() {
	}
	st.Close()
	if err := st.Err(); err == nil || !strings.Contains(err.Error(), "a line of more than 16 MB") {
		t.Fatalf("error %v, want one about a line of more than 16 MB", err)
	}
}

// Keep-alive comments (SSE lines starting with ':', which SGLang and
// proxies send while a reply is slow) are skipped, and a delta after one is
// delivered as soon as its line arrives: the server here sends a delta,
// comments, a second delta, then holds the stream open until the client
// has read both. Were the second held back behind the comments (or until
// more bytes came), the client would wait on a server that waits on it.
func TestKeepAliveComments(t *testing.T) {
	release := make(chan struct{})
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		remotetest.KeepAliveStream(w, r, release)
	}))
	defer ts.Close()
	defer func() {
		select {
		case <-release:
		default:
			close(release)
		}
	}()
	c, err := New(ts.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	st, err := c.Stream(context.Background(), Request{Model: "m", Messages: []Message{{Role: "user", Content: "hi"}}, MaxTokens: 8})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var text []string
	testmodels.Bounded(t, "two deltas with comments between", func() error {
		for len(text) < 2 && st.Next() {
			if ev := st.Event(); ev.Text != "" {
				text = append(text, ev.Text)
			}
		}
		return nil
	})
	if strings.Join(text, "|") != "Once| upon" {
		t.Fatalf("deltas %q (%v), want Once, upon before the stream ends", text, st.Err())
	}
	close(release)
	finish := ""
	for st.Next() {
		finish = st.Event().Finish
	}
	if st.Err() != nil || finish != "stop" {
		t.Errorf("the end: finish %q, %v", finish, st.Err())
	}
}

// PromptTokens asks each server's /tokenize in its own fields (chat serve's
// and llama-server's content, vLLM's model and prompt) and reads its
// answer (a list of tokens, or vLLM's count); a server without one is an
// error, so the caller falls back.
func TestPromptTokens(t *testing.T) {
	var got map[string]any
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		got = nil
		json.NewDecoder(r.Body).Decode(&got)
		if got["prompt"] != nil {
			io.WriteString(w, `{"count":7,"max_model_len":2048,"tokens":[1,2,3,4,5,6,7]}`)
			return
		}
		io.WriteString(w, `{"tokens":[1,2,3]}`)
	}))
	defer ts.Close()
	c, err := New(ts.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	for kind, want := range map[string]int{KindChat: 3, KindLlamaCpp: 3, KindVLLM: 7, KindOllama: -1, "": -1} {
		c.kind = kind
		n, err := c.PromptTokens(context.Background(), "m", "Once upon a time")
		switch {
		case want < 0 && err == nil:
			t.Errorf("%q: %d, want an error", kind, n)
		case want >= 0 && (err != nil || n != want):
			t.Errorf("%q: %d %v (sent %v), want %d", kind, n, err, got, want)
		case kind == KindVLLM && (got["model"] != "m" || got["prompt"] != "Once upon a time"):
			t.Errorf("vLLM sent %v", got)
		case kind == KindChat && (got["content"] != "Once upon a time" || got["add_special"] != true):
			t.Errorf("chat serve sent %v", got)
		}
	}
}

// A server that wants a key answered chat --remote with its own hint,
// "send Authorization: Bearer KEY", a header the user does not type; the
// message names the flag that sends it.
func TestUnauthorizedNamesTheFlag(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.WriteHeader(http.StatusUnauthorized)
		io.WriteString(w, `{"error":{"message":"a missing or wrong API key: send \"Authorization: Bearer KEY\""}}`)
	}))
	defer ts.Close()
	c, err := New(ts.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Models(context.Background())
	want := `the server answered 401 Unauthorized: a missing or wrong API key: send "Authorization: Bearer KEY" (--api-key KEY sends the key)`
	if err == nil || err.Error() != want {
		t.Errorf("401: %v; want %q", err, want)
	}
}

// --remote at a web page (a router's, nginx's welcome) said "invalid
// character '<' looking for beginning of value"; it says the URL is not an
// API.
func TestModelsWebPage(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, "<html><body>Welcome to nginx!</body></html>")
	}))
	defer ts.Close()
	c, err := New(ts.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Models(context.Background())
	if err == nil || !strings.Contains(err.Error(), `answered "text/html; charset=utf-8", not JSON: this URL is not an OpenAI-compatible API`) {
		t.Errorf("a web page: %v", err)
	}
}

// A server that takes the connection and never answers /v1/models is one
// line after modelsTimeout, for every caller of Models (chat bench serve
// waited for ever; the TUI had a deadline of its own).
func TestModelsSilentServer(t *testing.T) {
	saved := modelsTimeout
	t.Cleanup(func() { modelsTimeout = saved })
	modelsTimeout = 100 * time.Millisecond
	quit := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-quit:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(func() { close(quit) })
	c, err := New(srv.URL, "")
	if err != nil {
		t.Fatal(err)
	}
	err = testmodels.Bounded(t, "a silent server's /v1/models", func() error { _, err := c.Models(context.Background()); return err })
	if err == nil || !strings.Contains(err.Error(), "did not answer GET /v1/models within 100ms") {
		t.Errorf("Models = %v, want the silence named", err)
	}
}

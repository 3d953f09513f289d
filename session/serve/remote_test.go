package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"chat/config/settings"
	"chat/engine"
	"chat/engine/constrain"
	"chat/engine/sampler"
	"chat/models/load"
	"chat/models/testmodels"
	"chat/session"
	"chat/session/remote/remotetest"
)

func remoteSession(t *testing.T, url string, n int) *session.Session {
	t.Helper()
	v := settings.Defaults("chat")
	v.Mode, v.MaxTokens = "chat", n
	v.Sampler.Greedy = true
	s, err := session.NewRemote(session.RemoteOptions{URL: url + "/v1"}, session.Options{Settings: v})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// TestRemoteSession: a session on `chat serve` gives the local session's
// greedy reply, the panel's server figures come from /metrics (KV usage
// and prefix hits reported), the next turn's usage counts reused tokens,
// what needs a local model is refused, and Stop ends the server's reply.
func TestRemoteSession(t *testing.T) {
	held := newHeld(storiesModel(t))
	srv, ts, _ := startModel(t, held, Options{Engine: engine.Options{MaxSeqs: 4, MaxWaiting: 4}})
	t.Cleanup(held.free)
	s := remoteSession(t, ts.URL, 40)
	if in := s.Info(); in.Model != "stories260K" || in.ContextLength != 2048 {
		t.Errorf("info %+v", in)
	}
	if err := s.Send("Once upon a time"); err != nil {
		t.Fatal(err)
	}
	res := s.Wait()
	if want := headless(t, "Once upon a time", 40); res.Err != nil || res.Text != want {
		t.Fatalf("remote %q (%v), local %q", res.Text, res.Err, want)
	}
	if err := s.Send("Tell me more."); err != nil {
		t.Fatal(err)
	}
	s.Wait()
	st := s.Poll().Stats
	sv := st.Server
	if sv.Kind != "chat" || sv.Metrics != "" || sv.KVUsage < 0 || sv.PrefixHitRate <= 0 || sv.Running < 0 ||
		strings.Contains(sv.Missing, "KV") || strings.Contains(sv.Missing, "prefix") || strings.Contains(sv.Missing, "reused") {
		t.Errorf("server stats %+v", sv)
	}
	if st.PromptTokens == 0 || st.ReusedTokens == 0 || st.GenTokens == 0 || st.TTFT <= 0 {
		t.Errorf("turn 2 stats %+v", st)
	}
	// What needs the model here says so (README: "not with --remote").
	for _, change := range []func(v *settings.Values){func(v *settings.Values) { v.Quant = "int8" }, func(v *settings.Values) { v.Spec = "ngram" }} {
		v := s.Settings()
		change(&v)
		if err := s.Apply(v); err == nil || !strings.Contains(err.Error(), "not with --remote") {
			t.Errorf("a weight or speculation switch on a remote session: %v", err)
		}
	}
	for _, line := range []string{"/kv save x.kv", "/model x.gguf", "/draft x.gguf", "/template"} {
		if _, _, err := s.Command(line); err == nil || !strings.Contains(err.Error(), "not with --remote") {
			t.Errorf("%s on a remote session: %v", line, err)
		}
	}

	// The long reply is held after its first 20 passes, so it is still
	// running when Stop comes: stories260K makes its 1500 tokens in about
	// 0.2 s, which a paused test goroutine let it finish ("length").
	long := remoteSession(t, ts.URL, 1500)
	held.holdAfter(20)
	if err := long.Send("Once upon a time"); err != nil {
		t.Fatal(err)
	}
	for long.Poll().Stats.GenTokens == 0 {
		time.Sleep(time.Millisecond)
	}
	long.Stop()
	held.free()
	if r := long.Wait(); r.Reason != engine.ReasonStopped {
		t.Errorf("stopped remote reply ended %q", r.Reason)
	}
	deadline := time.Now().Add(testmodels.HangAfter)
	for srv.Engine().Load().Running != 0 {
		if time.Now().After(deadline) {
			t.Fatal("the server still runs the stopped reply")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestRemoteWithoutMetrics: a server without /metrics (ollama's OpenAI
// API, llama-server without --metrics) still chats; the panel says so.
func TestRemoteWithoutMetrics(t *testing.T) {
	srv, _, _ := start(t, Options{})
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			http.NotFound(w, r)
			return
		}
		srv.ServeHTTP(w, r)
	}))
	defer bare.Close()
	s := remoteSession(t, bare.URL, 10)
	if err := s.Send("Once upon a time"); err != nil {
		t.Fatal(err)
	}
	if res := s.Wait(); res.Err != nil || res.Text == "" {
		t.Fatalf("%q %v", res.Text, res.Err)
	}
	sv := s.Poll().Stats.Server
	if sv.Metrics != "no /metrics (404)" || !strings.Contains(sv.Missing, "anything from /metrics") || sv.KVUsage != -1 {
		t.Errorf("server stats %+v", sv)
	}
	if _, err := session.NewRemote(session.RemoteOptions{URL: bare.URL, Model: "nope"}, session.Options{}); err == nil || !strings.Contains(err.Error(), `"stories260K"`) {
		t.Errorf("an unknown model: %v", err)
	}
}

// A server's model ids may be of any length: an error naming them is one
// short line.
func TestRemoteLongModelIDs(t *testing.T) {
	long := strings.Repeat("x", 1<<20)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, `{"data":[{"id":%q},{"id":%q}]}`, long, long+"y")
	}))
	defer ts.Close()
	for _, model := range []string{"", "nope"} {
		_, err := session.NewRemote(session.RemoteOptions{URL: ts.URL, Model: model}, session.Options{})
		if err == nil || !strings.Contains(err.Error(), "xxx") || len(err.Error()) > 400 {
			t.Errorf("--remote-model %q: error of %d bytes, want one short line naming the ids: %.300q", model, len(fmt.Sprint(err)), err)
		}
	}
}

// TestRemoteAPIKey: --api-key goes with every request as a Bearer key; a
// server that wants one refuses a session without it.
func TestRemoteAPIKey(t *testing.T) {
	_, ts, _ := start(t, Options{APIKey: "sekrit"})
	if _, err := session.NewRemote(session.RemoteOptions{URL: ts.URL}, session.Options{}); err == nil {
		t.Error("a keyed server took a session without the key")
	}
	s, err := session.NewRemote(session.RemoteOptions{URL: ts.URL, APIKey: "sekrit", Model: "stories260K"}, session.Options{Settings: settings.Defaults("raw")})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := s.Send("Once upon a time"); err != nil {
		t.Fatal(err)
	}
	if res := s.Wait(); res.Err != nil || res.Text == "" {
		t.Errorf("with the key: %q %v", res.Text, res.Err)
	}
}

// TestRemoteKnobs: the sampler knobs (as the hot keys and /set leave them)
// go with each request; raw mode asks /v1/completions for the text.
func TestRemoteKnobs(t *testing.T) {
	srv, _, _ := start(t, Options{})
	var mu sync.Mutex
	var bodies []map[string]any
	var paths []string
	rec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == "POST" {
			b, _ := io.ReadAll(r.Body)
			var m map[string]any
			json.Unmarshal(b, &m)
			mu.Lock()
			bodies, paths = append(bodies, m), append(paths, r.URL.Path)
			mu.Unlock()
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		srv.ServeHTTP(w, r)
	}))
	defer rec.Close()
	s := remoteSession(t, rec.URL, 8)
	v := s.Settings()
	v.Sampler.Greedy, v.Sampler.Temperature, v.Sampler.TopK, v.Sampler.MinP, v.Sampler.RepeatPenalty = false, 0.3, 7, 0.1, 1.2
	v.Sampler.Seed, v.RandomSeed, v.Stop = 42, false, []string{"zz"}
	v.Sampler.DRYMultiplier, v.Sampler.DRYBase, v.Sampler.DRYBreakers, v.Sampler.TypicalP = 0.8, 2, sampler.JoinBreakers([]string{"\n"}), 1
	if err := s.Apply(v); err != nil {
		t.Fatal(err)
	}
	if err := s.Send("Once upon a time"); err != nil {
		t.Fatal(err)
	}
	s.Wait()
	v.Mode = "raw"
	if err := s.Apply(v); err != nil {
		t.Fatal(err)
	}
	if err := s.Send("The cat"); err != nil {
		t.Fatal(err)
	}
	s.Wait()
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 || paths[0] != "/v1/chat/completions" || paths[1] != "/v1/completions" {
		t.Fatalf("requests %v", paths)
	}
	b := bodies[0]
	if b["temperature"] != 0.3 || b["top_k"] != float64(7) || b["min_p"] != 0.1 || b["repetition_penalty"] != 1.2 ||
		b["seed"] != float64(42) || b["max_tokens"] != float64(8) || fmt.Sprint(b["stop"]) != "[zz]" || b["stream"] != true {
		t.Errorf("chat request %v", b)
	}
	// llama-server's further knobs go by their names when they matter:
	// DRY's, not typical_p at 1 (off) nor XTC's threshold with XTC off.
	if b["dry_multiplier"] != 0.8 || b["dry_base"] != 2.0 || fmt.Sprint(b["dry_sequence_breakers"]) != "[\n]" ||
		b["typical_p"] != nil || b["xtc_threshold"] != nil || b["dry_allowed_length"] != nil {
		t.Errorf("peer knobs in the request %v", b)
	}
	if msgs := b["messages"].([]any); len(msgs) != 1 || msgs[0].(map[string]any)["content"] != "Once upon a time" {
		t.Errorf("messages %v", b["messages"])
	}
	if !strings.HasSuffix(bodies[1]["prompt"].(string), "The cat") {
		t.Errorf("raw request %v", bodies[1])
	}
}

// TestRemoteConstraint: a remote session's constraint (the flags, then
// /format) goes to chat serve in the fields it reads, and the replies equal
// the local session's under the same constraint; a server that cannot take
// a kind of constraint is refused in one line before anything is sent.
func TestRemoteConstraint(t *testing.T) {
	_, ts, _ := start(t, Options{Engine: engine.Options{MaxSeqs: 4, MaxWaiting: 4}})
	gpath := filepath.Join(t.TempDir(), "list.gbnf")
	if err := os.WriteFile(gpath, []byte(listGrammar), 0o600); err != nil {
		t.Fatal(err)
	}
	const q, n = "Tell me about a cat.", 100
	for _, tc := range []struct {
		spec  constrain.Spec
		check func(string) error
	}{
		{constrain.Spec{Kind: constrain.KindJSON}, isJSON},
		{constrain.Spec{Kind: constrain.KindSchema, Arg: personSchema}, validator(t, personSchema)},
		{constrain.Spec{Kind: constrain.KindRegex, Arg: `(red|green|blue) [a-z]{2,5}`}, matching(regexp.MustCompile(`^(red|green|blue) [a-z]{2,5}$`))},
		{constrain.Spec{Kind: constrain.KindGrammar, Arg: gpath}, matching(listRe)},
	} {
		v := settings.Defaults("chat")
		v.Mode, v.MaxTokens = "chat", n
		v.Sampler.Greedy = true
		s, err := session.NewRemote(session.RemoteOptions{URL: ts.URL}, session.Options{Settings: v, Constraint: tc.spec})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Send(q); err != nil {
			t.Fatal(err)
		}
		res := s.Wait()
		s.Close()
		if res.Err != nil || tc.check(res.Text) != nil {
			t.Errorf("%s: %q %v", tc.spec, res.Text, res.Err)
		}
		if want := headlessWith(t, storiesModel(t), q, n, tc.spec, nil); res.Text != want {
			t.Errorf("%s: remote %q, local %q", tc.spec, res.Text, want)
		}
	}
	s := remoteSession(t, ts.URL, 40)
	if _, out, err := s.Command("/format regex [0-9]{3}"); err != nil || !strings.Contains(out, "regex [0-9]{3}") {
		t.Fatalf("/format on a remote session: %q %v", out, err)
	}
	if err := s.Send("A number?"); err != nil {
		t.Fatal(err)
	}
	if res := s.Wait(); !regexp.MustCompile(`^[0-9]{3}$`).MatchString(res.Text) {
		t.Errorf("/format regex: %q %v", res.Text, res.Err)
	}
	// The server compiles the constraint: its 400 is the error of the turn.
	if _, _, err := s.Command("/format schema {\"type\": 1}"); err != nil {
		t.Fatal(err)
	}
	if err := s.Send("A person?"); err == nil || !strings.Contains(err.Error(), "400") || !strings.Contains(err.Error(), "json schema: line 1") {
		t.Errorf("a bad schema sent to chat serve: %v", err)
	}

	// A server that reads no regex (llama-server names itself "llamacpp").
	llama := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"data":[{"id":"m","owned_by":"llamacpp"}]}`)
			return
		}
		http.NotFound(w, r)
	}))
	defer llama.Close()
	_, err := session.NewRemote(session.RemoteOptions{URL: llama.URL},
		session.Options{Constraint: constrain.Spec{Kind: constrain.KindRegex, Arg: "[a-z]+"}})
	if err == nil || !strings.Contains(err.Error(), "llama-server takes no regex constraint") {
		t.Errorf("a regex for llama-server: %v", err)
	}
}

// chat --remote said "reached max_tokens" of a reply the context cut: the
// remote stats had no capacity, so Result.ContextFull was never true. With
// the context the server reports, a reply to the end of a 256-position
// model's context says the context filled, as a local one does; one its
// budget cut does not.
func TestRemoteContextFull(t *testing.T) {
	_, ts, _ := startModel(t, studentModel(t), Options{Engine: engine.Options{MaxSeqs: 2}})
	// Raw mode too: a text completion past the context was asked without
	// max_tokens, which /v1/completions reads as 16 tokens; it is asked
	// for the rest of the context, counted by the server's /tokenize.
	for _, c := range []struct {
		mode   string
		budget int
		full   bool
	}{{"chat", 5000, true}, {"chat", 8, false}, {"raw", 5000, true}, {"raw", 256, true}, {"raw", 8, false}} {
		v := settings.Defaults(c.mode)
		v.Mode, v.MaxTokens, v.IgnoreEOS = c.mode, c.budget, true
		v.Sampler.Greedy = true
		s, err := session.NewRemote(session.RemoteOptions{URL: ts.URL}, session.Options{Settings: v})
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Send("Once upon a time"); err != nil {
			t.Fatal(err)
		}
		u := s.Poll() // as the UI polls: its notice reads u
		for !u.Done {
			time.Sleep(time.Millisecond)
			u = s.Poll()
		}
		s.Close()
		if u.Reason != engine.ReasonLength || u.ContextFull != c.full || u.Stats.KVCap != 256 || c.full && u.Stats.KVUsed != 256 {
			t.Errorf("%s, budget %d: %s, ContextFull %v, KV %d/%d; want length, %v, the 256-token context",
				c.mode, c.budget, u.Reason, u.ContextFull, u.Stats.KVUsed, u.Stats.KVCap, c.full)
		}
	}
}

// chat --remote started every session in chat mode, a raw model's too:
// a server's /props that reports chat_template "" (llama-server's and chat
// serve's for a model without one) starts it in raw mode, as llama-server's
// web UI does; a template, or no /props at all (vLLM), keeps chat mode.
// chat serve reports the course's format for a chat-tuned checkpoint.
func TestRemoteDefaultMode(t *testing.T) {
	_, raw, _ := start(t, Options{})
	emb, err := load.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	_, chat, _ := startModel(t, emb, Options{})
	props := func(body string) string {
		ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.URL.Path != "/props" || body == "" {
				http.NotFound(w, r)
				return
			}
			io.WriteString(w, body)
		}))
		t.Cleanup(ts.Close)
		return ts.URL
	}
	for url, want := range map[string]string{
		raw.URL:                       "raw",
		chat.URL:                      "chat",
		props(`{"chat_template":""}`): "raw",
		props(`{"chat_template":"{{ messages }}"}`): "chat",
		props(`{"build_info":"b1"}`):                "chat",
		props(""):                                   "chat",
	} {
		if got := session.RemoteDefaultMode(session.RemoteOptions{URL: url}); got != want {
			t.Errorf("%s: mode %s, want %s", url, got, want)
		}
	}
	for url, want := range map[string]string{raw.URL: "raw", chat.URL: "chat"} {
		s, err := session.NewRemote(session.RemoteOptions{URL: url}, session.Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got := s.Info().Mode; got != want {
			t.Errorf("NewRemote on %s without a mode: %s, want %s", url, got, want)
		}
		s.Close()
	}
}

// A remote reply shows each delta as it comes, keep-alive comments between
// them or not: the session's Poll has both deltas while the server still
// holds the stream open (it ends it only once the session has shown them).
func TestRemoteKeepAliveShown(t *testing.T) {
	release := make(chan struct{})
	var once sync.Once
	defer once.Do(func() { close(release) })
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			io.WriteString(w, `{"data":[{"id":"m","owned_by":"sglang"}]}`)
			return
		case "/v1/chat/completions":
		default:
			http.NotFound(w, r)
			return
		}
		remotetest.KeepAliveStream(w, r, release)
	}))
	defer ts.Close()
	s := remoteSession(t, ts.URL, 8)
	if err := s.Send("hi"); err != nil {
		t.Fatal(err)
	}
	var shown strings.Builder
	testmodels.Bounded(t, "two deltas with comments between", func() error {
		for shown.String() != "Once upon" {
			u := s.Poll()
			shown.WriteString(u.Text)
			if u.Done {
				break
			}
			time.Sleep(time.Millisecond)
		}
		return nil
	})
	if shown.String() != "Once upon" {
		t.Fatalf("shown %q before the stream ended, want %q", shown.String(), "Once upon")
	}
	once.Do(func() { close(release) })
	if res := s.Wait(); res.Err != nil || res.Text != "Once upon" || res.Reason != engine.ReasonEOT {
		t.Errorf("the reply: %q %s %v", res.Text, res.Reason, res.Err)
	}
}

// llama-server's /v1/models reports the model's n_ctx_train; a reply has
// its slot's context (-c over --parallel), which /props reports as n_ctx:
// a reply that filled the slot said "reached max_tokens" against a
// context it never had. The session's context is the slot's.
func TestRemoteSlotContext(t *testing.T) {
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			io.WriteString(w, `{"data":[{"id":"m","owned_by":"llamacpp","meta":{"n_ctx_train":4096}}]}`)
		case "/props":
			io.WriteString(w, `{"chat_template":"{{ messages }}","default_generation_settings":{"n_ctx":512}}`)
		case "/v1/chat/completions":
			w.Header().Set("Content-Type", "text/event-stream")
			io.WriteString(w, `data: {"choices":[{"delta":{"content":"Once"}}]}`+"\n\n"+
				`data: {"choices":[{"delta":{},"finish_reason":"length"}],"usage":{"prompt_tokens":12,"completion_tokens":500}}`+"\n\ndata: [DONE]\n\n")
		default:
			http.NotFound(w, r)
		}
	}))
	defer ts.Close()
	s := remoteSession(t, ts.URL, 2000)
	if c := s.Info().ContextLength; c != 512 {
		t.Errorf("context %d, want the slot's 512", c)
	}
	if err := s.Send("hi"); err != nil {
		t.Fatal(err)
	}
	u := s.Poll()
	for !u.Done {
		time.Sleep(time.Millisecond)
		u = s.Poll()
	}
	if !u.ContextFull || u.Stats.KVCap != 512 {
		t.Errorf("%s, ContextFull %v, KV %d/%d; want the 512-token slot filled", u.Reason, u.ContextFull, u.Stats.KVUsed, u.Stats.KVCap)
	}
}

// chat --remote on chat serve showed a decode rate it timed itself from the
// stream, whose pieces hold several tokens when the model outruns the
// writes: 10,095 tok/s for 10 tokens of stories260K. A stream that asks
// for its usage now ends with llama-server's timings beside it, which the
// client reads in place of its own clock; a whole (non-streamed) reply
// carries them too, as llama-server's does (it had the usage alone).
func TestUsageHasTimings(t *testing.T) {
	_, ts, _ := start(t, Options{})
	for _, route := range []string{"/v1/chat/completions", "/v1/completions"} {
		for _, stream := range []bool{true, false} {
			body := fmt.Sprintf(`{"messages":[{"role":"user","content":"Once upon a time"}],"prompt":"Once upon a time","max_tokens":12,"temperature":0,"stream":%v,"stream_options":{"include_usage":true}}`, stream)
			if !stream {
				body = strings.Replace(body, `,"stream_options":{"include_usage":true}`, "", 1)
			}
			resp, err := http.Post(ts.URL+route, "application/json", strings.NewReader(body))
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			var last struct {
				Usage *struct {
					PromptTokens     int `json:"prompt_tokens"`
					CompletionTokens int `json:"completion_tokens"`
				} `json:"usage"`
				Timings *struct {
					CacheN             int     `json:"cache_n"`
					PromptN            int     `json:"prompt_n"`
					PredictedN         int     `json:"predicted_n"`
					PredictedPerSecond float64 `json:"predicted_per_second"`
				} `json:"timings"`
			}
			if !stream {
				if err := json.Unmarshal(b, &last); err != nil {
					t.Fatalf("%s: %v: %s", route, err, b)
				}
			}
			for line := range strings.SplitSeq(string(b), "\n") {
				if data, ok := strings.CutPrefix(line, "data: "); ok && strings.Contains(data, `"usage"`) {
					if err := json.Unmarshal([]byte(data), &last); err != nil {
						t.Fatal(err)
					}
				}
			}
			u, tm := last.Usage, last.Timings
			if u == nil || tm == nil || tm.PredictedN != u.CompletionTokens || tm.PromptN+tm.CacheN != u.PromptTokens || tm.PredictedPerSecond <= 0 {
				t.Errorf("%s, stream %v: the usage %+v and timings %+v disagree or are missing:\n%s", route, stream, u, tm, b)
			}
		}
	}
}

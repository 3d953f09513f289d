package serve

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"chat/config/settings"
	"chat/engine"
	"chat/session"
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
	srv, ts, _ := start(t, Options{Engine: engine.Options{MaxSeqs: 4, MaxWaiting: 4}})
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
	v := s.Settings()
	v.Quant = "int8"
	if err := s.Apply(v); err == nil {
		t.Error("a weight switch on a remote session was accepted")
	}
	if _, _, err := s.Command("/kv save x.kv"); err == nil {
		t.Error("/kv on a remote session was accepted")
	}

	long := remoteSession(t, ts.URL, 1500)
	if err := long.Send("Once upon a time"); err != nil {
		t.Fatal(err)
	}
	for long.Poll().Stats.GenTokens == 0 {
		time.Sleep(time.Millisecond)
	}
	long.Stop()
	if r := long.Wait(); r.Reason != engine.ReasonStopped {
		t.Errorf("stopped remote reply ended %q", r.Reason)
	}
	deadline := time.Now().Add(10 * time.Second)
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
	if _, err := session.NewRemote(session.RemoteOptions{URL: bare.URL, Model: "nope"}, session.Options{}); err == nil || !strings.Contains(err.Error(), "stories260K") {
		t.Errorf("an unknown model: %v", err)
	}
}

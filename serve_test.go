package main

import (
	"encoding/json"
	"net"
	"net/http/httptest"
	"strings"
	"testing"

	"chat/config/settings"
	"chat/engine"
	"chat/models/hugepage"
	"chat/models/load"
	"chat/models/testmodels"
	"chat/session/remote"
	"chat/session/serve"
)

// TestServeAndRemoteCLI: chat serve refuses to listen beyond loopback
// without a key and bad numbers; chat --remote prints the same greedy
// reply as the model run here, headless; chat bench serve prints one JSON
// line with every request completed.
func TestServeAndRemoteCLI(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--addr", "0.0.0.0:8080"}, "--api-key"},
		{[]string{"serve", "--addr", ":8080"}, "every interface"},
		{[]string{"serve", "--host", "0.0.0.0", "--port", "8081"}, "--api-key"}, // llama-server's spelling of --addr
		{[]string{"serve", "--parallel", "0"}, "--parallel"},
		{[]string{"serve", "-np", "0"}, "--parallel must be at least 1"}, // llama-server's -np was "unknown flag"
		{[]string{"serve", "--parallel", "1000000"}, "--parallel is at most 1024, got 1000000"},
		{[]string{"serve", "--spec", "draft"}, "--spec draft"},
		// The settings schema's check and words, as the chat's --kv-quant-v says it.
		{[]string{"serve", "--kv-quant-v", "q9"}, `--kv-quant-v: kv_quant_v must be one of auto, f32,`},
		{[]string{"serve", "a.gguf", "b.gguf"}, "one model"},
		{[]string{"bench", "serve", "--concurrency", "0"}, "--concurrency"},
		{[]string{"bench", "serve", "--url", "http://127.0.0.1:1", "--concurrency", "100000000"}, "--concurrency is at most 4096"},
		{[]string{"bench", "serve", "--url", "http://127.0.0.1:1", "--long-prompt-chars", "10000000000"}, "--long-prompt-chars at most"},
		{[]string{"bench", "serve", "--url", "ftp://x"}, "not an http(s) URL"},
		{[]string{"--remote", "http://127.0.0.1:1", "model.gguf", "--prompt", "x"}, "give no model file"},
	} {
		code, _, stderr := runCLI(c.args...)
		if code == 0 || !strings.Contains(stderr, c.want) || strings.Count(stderr, "\n") != 1 {
			t.Errorf("chat %v: exit %d, stderr %q; want %q", c.args, code, stderr, c.want)
		}
	}

	path := testmodels.Path(t, "stories260K/stories260K.gguf")
	if _, ok := hugepage.Available(); ok {
		// A pool larger than memory: one line, not the OOM killer.
		// It said "chat serve: serve: engine: ...".
		if code, _, stderr := runCLI("serve", path, "--kv-mem", "100000000"); code == 0 || !strings.HasPrefix(stderr, "chat serve: engine: kvcache: ") || !strings.Contains(stderr, "does not fit") || strings.Count(stderr, "\n") != 1 {
			t.Errorf("serve --kv-mem 100000000: exit %d, stderr %q", code, stderr)
		}
	}
	m, err := load.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	s, err := serve.New(m, serve.Options{Engine: engine.Options{MaxSeqs: 4, MaxWaiting: 8}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer s.Close()
	defer ts.Close()

	_, local, _ := runCLI(path, "--chat", "--greedy", "-n", "30", "--prompt", "Once upon a time")
	// llama-cli's spellings, and ollama's run with the prompt after the model.
	for _, args := range [][]string{
		{"-m", path, "--chat", "--greedy", "-n", "30", "-p", "Once upon a time", "-t", "1"},
		{"run", path, "Once", "upon", "a", "time", "--chat", "--greedy", "-n", "30"},
	} {
		if code, out, stderr := runCLI(args...); code != 0 || out != local {
			t.Errorf("chat %q: exit %d, %q (stderr %q); want %q", args, code, out, stderr, local)
		}
	}
	if code, out, stderr := runCLI("bench", "-m", path, "-t", "1", "--gen", "2", "--prompt-tokens", "2"); code != 0 || !strings.Contains(out, `"threads":1`) {
		t.Errorf("chat bench -m -t: exit %d, %q (stderr %q)", code, out, stderr)
	}
	// llama-bench's -p and -n were unknown flags.
	if code, out, stderr := runCLI("bench", "-m", path, "-t", "1", "-p", "3", "-n", "2"); code != 0 || !strings.Contains(out, `"prompt_tokens":3,"gen_tokens":2`) {
		t.Errorf("chat bench -p 3 -n 2: exit %d, %q (stderr %q)", code, out, stderr)
	}
	code, out, stderr := runCLI("--remote", ts.URL, "--chat", "--greedy", "-n", "30", "--prompt", "Once upon a time")
	if code != 0 || out != local || !strings.Contains(stderr, "stories260K on "+ts.URL) {
		t.Errorf("--remote: exit %d, %q (stderr %q); local %q", code, out, stderr, local)
	}
	// A model without a chat template starts in raw mode there as here
	// (the server's /props says chat_template "").
	_, localRaw, _ := runCLI(path, "--greedy", "-n", "30", "--prompt", "Once upon a time")
	code, out, stderr = runCLI("--remote", ts.URL, "--greedy", "-n", "30", "--prompt", "Once upon a time")
	if code != 0 || out != localRaw || !strings.Contains(stderr, "raw mode") {
		t.Errorf("--remote without a mode: exit %d, %q (stderr %q); local %q", code, out, stderr, localRaw)
	}
	// Bug: --quant, -t, --lora ... were dropped silently with --remote (and
	// --lora's file was still read). Each says it is ignored.
	// Every setting the table marks Local says so.
	given := map[string][]string{"quant": {"--quant", "int8"}, "calib": {"--calib", "x.txt"}, "spec": {"--spec", "ngram"},
		"draft_k": {"--draft-k", "2"}, "spec_adapt": {"--spec-adapt=false"}, "ctx_size": {"-c", "64"}, "threads": {"-t", "1"},
		"kv_mem": {"--kv-mem", "64"}, "kv_quant_k": {"--kv-quant-k", "f16"}, "kv_quant_v": {"--kv-quant-v", "int8"},
		"no_prefix_cache": {"--no-prefix-cache"}, "lora": {"--lora", "no-such-adapter"}}
	args := []string{"--remote", ts.URL, "--chat", "--greedy", "-n", "30", "--prompt", "Once upon a time"}
	for _, st := range settings.Local() {
		if given[st.Name] == nil {
			t.Fatalf("the test gives no value for Local setting %s", st.Name)
		}
		args = append(args, given[st.Name]...)
	}
	code, out, stderr = runCLI(args...)
	if code != 0 || out != local || !strings.Contains(stderr, "chat: --quant is ignored with --remote: the server runs the model\n") {
		t.Errorf("--remote with the Local settings: exit %d, %q (stderr %q); local %q", code, out, stderr, local)
	}
	for _, st := range settings.Local() {
		if want := "chat: " + st.Dashed() + " is ignored with --remote"; !strings.Contains(stderr, want) {
			t.Errorf("stderr %q lacks %q", stderr, want)
		}
	}
	if len(settings.Local()) != len(given) {
		t.Errorf("%d Local settings, the test gives %d", len(settings.Local()), len(given))
	}
	code, out, stderr = runCLI("bench", "serve", "--url", ts.URL+"/v1", "--concurrency", "4", "--requests", "8", "--max-tokens", "16")
	var r remote.BenchResult
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Completed != 8 || r.Errors != 0 || r.Tokens != 8*16 || r.TokS <= 0 || r.TTFTP99 < r.TTFTP50 {
		t.Errorf("bench serve: exit %d, %q %+v (stderr %q)", code, out, r, stderr)
	}
}

// chat --remote on chat serve of a 256-position model failed every reply:
// the default budget (256 in chat mode) plus the prompt passes the
// context, which chat serve refuses as vLLM does. Asked again without a
// budget, the reply runs to the end of the context, as a local one does.
func TestRemoteBudgetPastContext(t *testing.T) {
	m, err := load.Open(testmodels.Path(t, "course/student.pt"))
	if err != nil {
		t.Fatal(err)
	}
	s, err := serve.New(m, serve.Options{Engine: engine.Options{MaxSeqs: 2}})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer s.Close()
	defer ts.Close()
	for _, args := range [][]string{
		{"--remote", ts.URL, "--chat", "--prompt", "Once upon a time", "--ignore-eos", "--json"},
		{"--remote", ts.URL, "--chat", "--prompt", "Once upon a time", "--ignore-eos", "--json", "-n", "5000"},
		// Under the context, but not with the prompt: refused, then asked
		// again (the two above are asked without a budget at once).
		{"--remote", ts.URL, "--chat", "--prompt", "Once upon a time", "--ignore-eos", "--json", "-n", "250"},
	} {
		code, out, stderr := runCLI(args...)
		var r struct {
			Reason string `json:"reason"`
			Stats  struct {
				PromptTokens int `json:"prompt_tokens"`
				GenTokens    int `json:"gen_tokens"`
			} `json:"stats"`
		}
		if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.Stats.PromptTokens+r.Stats.GenTokens != 256 {
			t.Errorf("chat %q: exit %d, %q (stderr %q); want a reply to the end of the 256-token context", args, code, out, stderr)
		}
	}
}

// chat serve on a port another server holds (llama-server's 8080 is its
// default too) said "listen tcp ...: bind: address already in use"; it
// names the address and what to do.
func TestServePortInUse(t *testing.T) {
	path := testmodels.Path(t, "stories260K/stories260K.gguf")
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Skip("no loopback listener:", err)
	}
	defer ln.Close()
	addr := ln.Addr().String()
	code, _, stderr := runCLI("serve", path, "--addr", addr)
	if want := "chat serve: " + addr + " is in use: another server listens there (stop it, or give another --port N)\n"; code != 1 || stderr != want {
		t.Errorf("chat serve --addr %s (in use): exit %d, stderr %q; want 1, %q", addr, code, stderr, want)
	}
}

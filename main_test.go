package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"chat/models/testmodels"
)

func runCLI(args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, &out, &errb)
	return code, out.String(), errb.String()
}

// Bad input gets one clear line and a non-zero exit, never a panic.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pt")
	os.WriteFile(junk, []byte("this is not a model"), 0o644)
	trunc := filepath.Join(dir, "trunc.pt")
	if b, err := os.ReadFile(filepath.Join("models", "embedded", "student-chat.pt")); err == nil {
		os.WriteFile(trunc, b[:len(b)/2], 0o644)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--no-such-flag"}, "no-such-flag"},
		{[]string{"stray"}, "unexpected argument"},
		{[]string{"--model", filepath.Join(dir, "missing.pt"), "--prompt", "x"}, "no such file"},
		{[]string{"--model", dir, "--prompt", "x"}, "is a directory"},
		{[]string{"--model", junk, "--prompt", "x"}, "neither a PyTorch zip checkpoint nor a GGUF file"},
		{[]string{"--model", trunc, "--prompt", "x"}, "trunc.pt"},
		{[]string{"-n", "-3", "--prompt", "x"}, "-n must be positive"},
		{[]string{"--raw", "--chat"}, "exclude"},
	}
	for _, c := range cases {
		code, _, stderr := runCLI(c.args...)
		if code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("chat %v: exit %d, stderr %q; want non-zero and %q", c.args, code, stderr, c.want)
		}
	}
}

func TestHelp(t *testing.T) {
	code, _, stderr := runCLI("-h")
	if code != 0 || !strings.Contains(stderr, "--model") || !strings.Contains(stderr, "Sampler order") {
		t.Errorf("-h: exit %d, %q", code, stderr)
	}
}

// Headless mode on the embedded model prints the course's greedy reply.
func TestHeadlessEmbedded(t *testing.T) {
	code, stdout, stderr := runCLI("--prompt", "Tell me a story about a cat.", "-n", "14", "--greedy")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if want := "Once upon a time, there was a little cat named Tom."; !strings.HasPrefix(stdout, want) {
		t.Errorf("stdout %q, want prefix %q", stdout, want)
	}
}

// --json prints one line with the prompt ids, the generated ids, the text and
// stats; in raw mode the prompt is encode_ordinary without BOS, as the
// course's generate_text.py encodes it.
func TestHeadlessJSONRaw(t *testing.T) {
	path := testmodels.Path(t, "course/golden/tiny.json")
	var g struct {
		Prompts []struct {
			Text        string `json:"text"`
			PromptIDs   []int  `json:"prompt_ids"`
			GreedyCache []int  `json:"greedy_cache"`
		} `json:"prompts"`
	}
	b, _ := os.ReadFile(path)
	if err := json.Unmarshal(b, &g); err != nil {
		t.Fatal(err)
	}
	p := g.Prompts[0]
	code, stdout, stderr := runCLI("--model", testmodels.Path(t, "course/tiny.pt"), "--prompt", p.Text, "-n", "20", "--greedy", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "tiny.pt · modern · f32 · 369K params · ctx 128 · raw mode") {
		t.Errorf("stderr lacks the model line: %q", stderr)
	}
	var out struct {
		Model     map[string]any `json:"model"`
		PromptIDs []int          `json:"prompt_ids"`
		IDs       []int          `json:"ids"`
		Text      string         `json:"text"`
		Stats     map[string]any `json:"stats"`
	}
	if err := json.Unmarshal([]byte(stdout), &out); err != nil {
		t.Fatalf("not one JSON line: %q: %v", stdout, err)
	}
	if !intsEqual(out.PromptIDs, p.PromptIDs) || !intsEqual(out.IDs, p.GreedyCache[:20]) {
		t.Errorf("json ids: prompt %v ids %v; want %v %v", out.PromptIDs, out.IDs, p.PromptIDs, p.GreedyCache[:20])
	}
	if out.Model["arch"] != "modern" || out.Model["quant"] != "f32" || out.Model["params"] != float64(369024) {
		t.Errorf("json model %v", out.Model)
	}
	for _, k := range []string{"prompt_tokens", "gen_tokens", "prefill_tok_s", "decode_tok_s", "ttft_ms", "kv_used", "kv_cap"} {
		if _, ok := out.Stats[k]; !ok {
			t.Errorf("stats lack %q: %v", k, out.Stats)
		}
	}
}

func intsEqual(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// chat quant-report prints one row per weight format; int8 keeps the
// course's quality (cosine ≥ 0.9999, top-1 ≥ 99%).
func TestQuantReport(t *testing.T) {
	text := testmodels.Path(t, "text/TinyStories-valid-head.txt")
	code, stdout, stderr := runCLI("quant-report", "--model", testmodels.Path(t, "course/tiny.pt"), "--text", text, "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var tab struct {
		Rows []struct {
			Format string  `json:"format"`
			Cosine float64 `json:"mean_cosine"`
			Top1   float64 `json:"top1_agreement"`
		} `json:"formats"`
	}
	if err := json.Unmarshal([]byte(stdout), &tab); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	found := false
	for _, r := range tab.Rows {
		if r.Format == "int8" {
			found = true
			if r.Cosine < 0.9999 || r.Top1 < 0.99 {
				t.Errorf("int8 row %+v below the course's quality", r)
			}
		}
	}
	if !found {
		t.Errorf("no int8 row in %s", stdout)
	}
}

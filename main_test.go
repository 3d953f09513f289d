package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"chat/models/kernels"
	"chat/models/testmodels"
)

func runCLI(args ...string) (code int, stdout, stderr string) {
	return runStdin("", args...)
}

// runStdin runs chat with text on stdin (not a terminal).
func runStdin(in string, args ...string) (code int, stdout, stderr string) {
	var out, errb bytes.Buffer
	code = run(args, strings.NewReader(in), &out, &errb)
	return code, out.String(), errb.String()
}

// Bad input gets one clear line and a non-zero exit, never a panic.
func TestBadInput(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.pt")
	os.WriteFile(junk, []byte("this is not a model"), 0o644)
	trunc := filepath.Join(dir, "trunc.pt")
	if b, err := os.ReadFile(filepath.Join("models", "embedded", "student-chat-1k.pt")); err == nil {
		os.WriteFile(trunc, b[:len(b)/2], 0o644)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--no-such-flag"}, "no-such-flag"},
		{[]string{"a.pt", "stray"}, "unexpected argument"},
		{[]string{"stray.pt", "--prompt", "x"}, "stray.pt"},
		{[]string{"--model", filepath.Join(dir, "missing.pt"), "--prompt", "x"}, "no such file"},
		{[]string{"--model", dir, "--prompt", "x"}, "is a directory"},
		{[]string{"--model", junk, "--prompt", "x"}, "neither a PyTorch zip checkpoint nor a GGUF file"},
		{[]string{"--model", trunc, "--prompt", "x"}, "trunc.pt"},
		{[]string{"-n", "-3", "--prompt", "x"}, "max_tokens must be between 1 and 1048576 (or -1), got -3 (-n)"},
		{[]string{"--raw", "--chat"}, "exclude"},
	}
	for _, c := range cases {
		code, _, stderr := runCLI(c.args...)
		if code == 0 || !strings.Contains(stderr, c.want) {
			t.Errorf("chat %v: exit %d, stderr %q; want non-zero and %q", c.args, code, stderr, c.want)
		}
	}
}

// Bug 7: -h left out bench, quant-report and int8-a8; there was no
// --version; an unknown flag printed the error, 60 lines of usage and the
// error again.
func TestHelpVersionAndFlagErrors(t *testing.T) {
	code, _, stderr := runCLI("-h")
	for _, want := range []string{"--model", "Sampler order", "chat bench", "chat quant-report", "int8-a8", "--version", "--stop", "--ctx-size"} {
		if code != 0 || !strings.Contains(stderr, want) {
			t.Errorf("-h: exit %d, lacks %q", code, want)
		}
	}
	code, stdout, _ := runCLI("--version")
	if code != 0 || !strings.HasPrefix(stdout, "chat ") {
		t.Errorf("--version: exit %d, %q", code, stdout)
	}
	code, _, stderr = runCLI("--no-such-flag")
	if code != 2 || strings.Count(stderr, "\n") != 1 || !strings.Contains(stderr, "unknown flag --no-such-flag (see chat -h)") {
		t.Errorf("unknown flag: exit %d, %q; want one line", code, stderr)
	}
	// The subcommands printed the flag package's message and then all
	// their flags' help (30 lines for serve); -h still prints that help.
	for _, c := range []struct{ args, want string }{
		{"serve --listen 9000", "chat serve: unknown flag --listen (see chat serve -h)"},
		{"serve -x y", "chat serve: unknown flag -x (see chat serve -h)"},
		{"bench --foo", "chat bench: unknown flag --foo (see chat bench -h)"},
		{"bench serve --foo", "chat bench serve: unknown flag --foo (see chat bench serve -h)"},
		{"quant-report --foo", "chat quant-report: unknown flag --foo (see chat quant-report -h)"},
	} {
		if code, _, stderr := runCLI(strings.Fields(c.args)...); code != 2 || stderr != c.want+"\n" {
			t.Errorf("%s: exit %d, %q; want one line %q", c.args, code, stderr, c.want)
		}
	}
	if code, _, stderr := runCLI("serve", "-h"); code != 0 || !strings.Contains(stderr, "-parallel") {
		t.Errorf("serve -h: exit %d, %q", code, stderr)
	}
}

// Headless mode on the embedded model prints the course's greedy reply.
func TestHeadlessEmbedded(t *testing.T) {
	code, stdout, stderr := runCLI("--prompt", "Tell me a story about a cat.", "-n", "14", "--greedy")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if want := "Once upon a time, there was a little girl named Lily."; !strings.HasPrefix(stdout, want) {
		t.Errorf("stdout %q, want prefix %q", stdout, want)
	}
}

// Bug 4: --prompt "" opened the TUI, and without a terminal the error was
// bubbletea's "could not open TTY". An empty prompt continues from the
// start of a text; stdin that is not a terminal is the prompt; -f FILE
// reads one; and without any, the message says what to do.
func TestPromptSources(t *testing.T) {
	code, stdout, stderr := runCLI("--prompt", "", "-n", "8", "--json")
	var out struct {
		PromptIDs []int  `json:"prompt_ids"`
		IDs       []int  `json:"ids"`
		Reason    string `json:"reason"`
		Seed      uint64 `json:"seed"`
	}
	if code != 0 || json.Unmarshal([]byte(stdout), &out) != nil || !intsEqual(out.PromptIDs, []int{4095}) || len(out.IDs) != 8 || out.Reason != "length" {
		t.Errorf(`--prompt "": exit %d, %q, %q`, code, stdout, stderr)
	}
	if !strings.Contains(stderr, "raw mode") {
		t.Errorf(`--prompt "" is not a raw continuation: %q`, stderr)
	}
	if code, _, stderr := runCLI("--prompt", "", "--chat"); code != 2 || !strings.Contains(stderr, "chat mode needs a message") {
		t.Errorf(`--chat --prompt "": exit %d, %q`, code, stderr)
	}
	want := "Once upon a time, there was a little girl named Lily."
	code, stdout, stderr = runStdin("Tell me a story about a cat.\n", "-n", "14", "--greedy")
	if code != 0 || !strings.HasPrefix(stdout, want) {
		t.Errorf("prompt on stdin: exit %d, %q, %q", code, stdout, stderr)
	}
	file := filepath.Join(t.TempDir(), "prompt.txt")
	os.WriteFile(file, []byte("Tell me a story about a cat."), 0o644)
	if code, stdout, stderr := runCLI("-f", file, "-n", "14", "--greedy"); code != 0 || !strings.HasPrefix(stdout, want) {
		t.Errorf("-f: exit %d, %q, %q", code, stdout, stderr)
	}
	// -f - is stdin, as in most tools (it was "open -: no such file").
	if code, stdout, stderr := runStdin("Tell me a story about a cat.\n", "-f", "-", "-n", "14", "--greedy"); code != 0 || !strings.HasPrefix(stdout, want) {
		t.Errorf("-f -: exit %d, %q, %q", code, stdout, stderr)
	}
	// llama-cli's -e: the \n typed in a prompt (here in -f's file) is a
	// newline, and a --stop string's escapes are processed too.
	os.WriteFile(file, []byte(`Once upon a time\nthere was`), 0o644)
	_, escaped, _ := runCLI("-f", file, "-e", "--raw", "-n", "1", "--json")
	_, typed, _ := runCLI("--prompt", "Once upon a time\nthere was", "--raw", "-n", "1", "--json")
	var a, b struct {
		PromptIDs []int `json:"prompt_ids"`
	}
	if json.Unmarshal([]byte(escaped), &a) != nil || json.Unmarshal([]byte(typed), &b) != nil || !intsEqual(a.PromptIDs, b.PromptIDs) {
		t.Errorf("-e: prompt ids %v, want those of a typed newline %v", a.PromptIDs, b.PromptIDs)
	}
	if code, stdout, _ := runCLI("--prompt", "Tell me a story about a cat.", "-e", "--stop", `\x2e`, "-n", "14", "--greedy"); code != 0 || stdout != "Once upon a time, there was a little girl named Lily\n" {
		t.Errorf("-e --stop '\\x2e': exit %d, %q", code, stdout)
	}
	if code, _, stderr := runStdin(" \n", "--json"); code != 2 || !strings.Contains(stderr, "no prompt on stdin") {
		t.Errorf("empty stdin: exit %d, %q", code, stderr)
	}
	isTerm := isTerminal
	defer func() { isTerminal = isTerm }()
	isTerminal = func(f any) bool { _, ok := f.(*strings.Reader); return ok } // stdin is a terminal, stdout is not
	if code, _, stderr := runCLI(); code != 2 || !strings.Contains(stderr, "the chat TUI needs a terminal; use --prompt TEXT") {
		t.Errorf("no terminal: exit %d, %q", code, stderr)
	}
	if code, _, stderr := runCLI("--json"); code != 2 || !strings.Contains(stderr, "--json prints a headless reply") {
		t.Errorf("--json without a prompt: exit %d, %q", code, stderr)
	}
}

// --verbose prints a plain-text timing summary on stderr.
func TestVerbose(t *testing.T) {
	code, _, stderr := runCLI("--prompt", "Tell me a story.", "-n", "5", "--verbose", "--seed", "3")
	if code != 0 || !strings.Contains(stderr, "prefill") || !strings.Contains(stderr, "decode 5 tokens") || !strings.Contains(stderr, "seed 3") ||
		!strings.Contains(stderr, "time to first token") || !strings.Contains(stderr, "ended: length") {
		t.Errorf("--verbose: exit %d, %q", code, stderr)
	}
	if _, _, plain := runCLI("--prompt", "Tell me a story.", "-n", "5", "--seed", "3"); strings.Count(stderr, "\n") != strings.Count(plain, "\n")+1 {
		t.Errorf("--verbose adds more than one line: %q, without it %q", stderr, plain)
	}
	// It said "prefill 1 tokens" (a --remote reply's usual prefill) and
	// "decode 1 tokens".
	if _, _, stderr := runCLI("--raw", "--prompt", "", "-n", "1", "--verbose"); !strings.Contains(stderr, "prefill 1 token (0 reused)") || !strings.Contains(stderr, "decode 1 token ") {
		t.Errorf("--verbose of one token: %q", stderr)
	}
}

// The constraint flags, headless on the embedded model: --format json
// prints one JSON value, --regex a whole match, --json-schema takes the
// schema itself when it starts with "{"; two of them are refused.
func TestHeadlessConstraintFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		ok   func(string) bool
	}{
		{[]string{"--format", "json"}, func(s string) bool { return json.Valid([]byte(s)) }},
		{[]string{"--regex", "(yes|no), [a-z]{2,6}"}, regexp.MustCompile(`^(yes|no), [a-z]{2,6}$`).MatchString},
		{[]string{"--json-schema", `{"type":"object","properties":{"n":{"type":"integer"}},"required":["n"]}`},
			func(s string) bool { var v struct{ N *int }; return json.Unmarshal([]byte(s), &v) == nil && v.N != nil }},
		// An escape sequence made of several tokens goes whole: only its
		// ESC went, and "[31m" showed.
		{[]string{"--regex", "\x1b\\[31mRED"}, func(s string) bool { return s == "RED" }},
	} {
		code, stdout, stderr := runCLI(append([]string{"--prompt", "A cat, please.", "-n", "40", "--seed", "2"}, c.args...)...)
		if out := strings.TrimSuffix(stdout, "\n"); code != 0 || !c.ok(out) {
			t.Errorf("%v: exit %d, %q (%s)", c.args, code, out, stderr)
		}
	}
	if code, _, stderr := runCLI("--prompt", "x", "--format", "json", "--regex", "a"); code != 2 || !strings.Contains(stderr, "exclude each other") {
		t.Errorf("two constraints: exit %d, %q", code, stderr)
	}
	// A file's error named the file alone ("open s.json: no such file"),
	// not the flag that gave it.
	for _, f := range []string{"--json-schema", "--grammar"} {
		if code, _, stderr := runCLI("--prompt", "x", f, filepath.Join(t.TempDir(), "nope")); code != 1 || !strings.HasPrefix(stderr, "chat: "+f+": open ") {
			t.Errorf("%s with a missing file: exit %d, %q", f, code, stderr)
		}
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

// Bug: a raw text that outgrew the context went on by the window rule with
// nothing said (the TUI's KV bar just stopped at its fill): the model no
// longer saw the start, and the user could not tell. The reply's notice says
// so, on stderr headless, and --json counts the cuts.
func TestWindowRuleIsTold(t *testing.T) {
	for _, c := range []struct {
		n    string
		cuts bool
	}{{"20", false}, {"100", true}} {
		code, stdout, stderr := runCLI("--raw", "--prompt", "Once upon a time", "-n", c.n, "-c", "64", "--seed", "1", "--json")
		var out struct {
			Stats map[string]any `json:"stats"`
		}
		if code != 0 || json.Unmarshal([]byte(stdout), &out) != nil {
			t.Fatalf("-n %s: exit %d, %q, %q", c.n, code, stdout, stderr)
		}
		told := strings.Contains(stderr, "chat: the text outgrew the 64-token context: the model sees only its latest tokens (the course's window rule: it keeps the latest 32")
		if cuts, _ := out.Stats["window_cuts"].(float64); told != c.cuts || (cuts > 0) != c.cuts {
			t.Errorf("-n %s in a 64-token context: window_cuts %v, stderr %q; want the notice and cuts: %v", c.n, out.Stats["window_cuts"], stderr, c.cuts)
		}
	}
}

// TestWindowRuleNoticeOwnLine: on a terminal stdout and stderr share the
// screen, and the window rule's notice ran on from the reply's last word;
// --verbose counted a prompt past the window as prefilled whole.
func TestWindowRuleNoticeOwnLine(t *testing.T) {
	var both bytes.Buffer
	prompt := strings.Repeat("Once upon a time there was a cat. ", 30)
	code := run([]string{"--raw", "--prompt", prompt, "-n", "60", "-c", "64", "--seed", "1", "--verbose"}, strings.NewReader(""), &both, &both)
	out := both.String()
	if code != 0 || !strings.Contains(out, "\nchat: the text outgrew the 64-token context") {
		t.Errorf("exit %d, the notice is not on its own line: %q", code, out)
	}
	if !strings.Contains(out, "chat: prefill 64 tokens, the window's, of a ") {
		t.Errorf("--verbose does not count the window's prefill: %q", out)
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

// A headless reply whose stdout failed (chat --prompt ... > /dev/full)
// exited 0 with nothing written: a script could not tell.
func TestHeadlessWriteErrorFails(t *testing.T) {
	for _, args := range [][]string{{"--prompt", "Hi", "-n", "3"}, {"--prompt", "Hi", "-n", "3", "--json"}} {
		var errb bytes.Buffer
		code := run(args, strings.NewReader(""), fullDisk{}, &errb)
		if code != 1 || !strings.Contains(errb.String(), "writing the reply: no space left on device") {
			t.Errorf("%v to a full disk: exit %d, %q", args, code, errb.String())
		}
	}
}

type fullDisk struct{}

func (fullDisk) Write([]byte) (int, error) { return 0, syscall.ENOSPC }

// An ollama user's first commands (chat pull llama3, chat list) were taken
// for model files: "open model: open pull: no such file or directory", and
// "chat pull llama3" even "unexpected argument". Each is one line now.
func TestOllamaStoreCommands(t *testing.T) {
	t.Chdir(t.TempDir())
	for _, args := range [][]string{{"pull", "llama3"}, {"list"}, {"ps"}, {"rm", "llama3"}} {
		code, _, stderr := runCLI(args...)
		want := "chat: no " + args[0] + " command: chat keeps no model store and downloads nothing; give the path of a GGUF or .pt file (see chat -h)\n"
		if code != 2 || stderr != want {
			t.Errorf("chat %v: exit %d, %q; want 2, %q", args, code, stderr, want)
		}
	}
}

// A tool's -h began "Usage of chat convert:" and listed only its flags, not
// what it takes (IN OUT.gguf) or does; it starts with chat -h's lines for
// it now, and its flags are listed as chat -h lists its own.
func TestToolHelpHasUsage(t *testing.T) {
	for _, c := range []struct{ args, want string }{
		{"convert -h", "Usage:\n  chat convert IN OUT.gguf [--type T]     a checkpoint as a GGUF file"},
		{"serve -h", "Usage:\n  chat serve [MODEL] ["},
		{"bench -h", "Usage:\n  chat bench [MODEL] [--threads T"},
		{"bench serve -h", "Usage:\n  chat bench serve [URL] --concurrency C"},
		{"merge-lora -h", "Usage:\n  chat merge-lora BASE ADAPTER[:SCALE]... OUT.gguf"},
		{"prune -h", "Usage:\n  chat prune IN OUT.gguf"},
		{"plan -h", "Usage:\n  chat plan --model M"},
		{"quant-report -h", "Usage:\n  chat quant-report [MODEL]"},
	} {
		code, _, stderr := runCLI(strings.Fields(c.args)...)
		if code != 0 || !strings.HasPrefix(stderr, c.want) || !strings.Contains(stderr, "\nFlags:\n") {
			t.Errorf("chat %s: exit %d:\n%s\nwant it to start with %q", c.args, code, stderr, c.want)
		}
		// Flags read as chat -h's ("--type TEXT"), not the flag package's
		// ("-type string").
		if strings.Contains(stderr, "\n  -threads int") || strings.Contains(stderr, "\n  -model string") || strings.Contains(stderr, "\n  -type string") {
			t.Errorf("chat %s lists flags in the flag package's style:\n%s", c.args, stderr)
		}
		if c.args == "bench -h" && strings.Contains(stderr, "bench serve") {
			t.Errorf("chat bench -h shows bench serve's usage:\n%s", stderr)
		}
	}
}

// chat serve -h said the model id defaults to the file name without its
// extension, but a GGUF file's general.name is the id (bench15M-q8_0.gguf
// is served as "random-llama-15M-q8_0"): the help says so.
func TestServeHelpNamesTheID(t *testing.T) {
	_, _, stderr := runCLI("serve", "-h")
	if !strings.Contains(stderr, "a GGUF file's general.name, else the file name without extension") {
		t.Errorf("chat serve -h does not say which name is the model id:\n%s", stderr)
	}
}

// "chat help" and "chat version" (ollama's and go's words) were taken for
// model files ("open model: open help: no such file"); they are -h and
// --version.
func TestHelpAndVersionWords(t *testing.T) {
	t.Chdir(t.TempDir())
	if code, _, stderr := runCLI("help"); code != 0 || !strings.Contains(stderr, "Usage:\n  chat [MODEL] [flags]") {
		t.Errorf("chat help: exit %d, %q", code, stderr)
	}
	// chat help serve was "unexpected argument", chat serve help "open
	// model: help: no such file": both are chat serve -h.
	for _, args := range [][]string{{"help", "serve"}, {"serve", "help"}, {"help", "bench", "serve"}, {"convert", "help"}} {
		want := "Usage:\n  chat " + strings.Join(slices.DeleteFunc(slices.Clone(args), func(a string) bool { return a == "help" }), " ") + " "
		if code, _, stderr := runCLI(args...); code != 0 || !strings.HasPrefix(stderr, want) {
			t.Errorf("chat %v: exit %d, %q; want it to start %q", args, code, stderr, want)
		}
	}
	if code, _, stderr := runCLI("help", "run"); code != 0 || !strings.Contains(stderr, "Usage:\n  chat [MODEL] [flags]") {
		t.Errorf("chat help run: exit %d, %q", code, stderr)
	}
	if code, stdout, stderr := runCLI("version"); code != 0 || !strings.HasPrefix(stdout, "chat ") || stderr != "" {
		t.Errorf("chat version: exit %d, %q, %q", code, stdout, stderr)
	}
}

// chat m.gguf --quant q4_k left the terminal blank for the seconds the
// weights took to re-encode, before the TUI drew anything; a line on a
// terminal's stderr says what is going on. Not when stderr is no terminal,
// and not when the weights are already in that format.
func TestQuantSaysItIsWorking(t *testing.T) {
	isTerm := isTerminal
	defer func() { isTerminal = isTerm }()
	isTerminal = func(f any) bool { return f == os.Stderr }
	if code, _, stderr := runCLI("--prompt", "Hi", "-n", "2", "--quant", "int8"); code != 0 || !strings.HasPrefix(stderr, "chat: making int8 weights from f32 ...\n") {
		t.Errorf("--quant int8: exit %d, %q", code, stderr)
	}
	if _, _, stderr := runCLI("--prompt", "Hi", "-n", "2", "--quant", "f32"); strings.Contains(stderr, "making") {
		t.Errorf("--quant f32 on f32 weights: %q", stderr)
	}
	isTerminal = func(any) bool { return false }
	if _, _, stderr := runCLI("--prompt", "Hi", "-n", "2", "--quant", "int8"); strings.Contains(stderr, "making") {
		t.Errorf("stderr no terminal: %q", stderr)
	}
}

// The tools' unknown flags from llama-server and llama-bench said only
// "unknown flag --ngl": now with the dashes typed and why none is needed.
func TestToolPeerFlags(t *testing.T) {
	for _, c := range []struct{ args, want string }{
		{"serve --cont-batching", "chat serve: unknown flag --cont-batching (llama.cpp's memory and batching switches have no counterpart here: drop it) (see chat serve -h)\n"},
		{"-np 4", "chat: unknown flag -np (llama-server's: chat serve --parallel N) (see chat -h)\n"}, // chat serve takes it
		{"serve --metrics", "chat serve: unknown flag --metrics (chat serve always serves /metrics: drop it) (see chat serve -h)\n"},
		{"bench --cont-batching", "chat bench: unknown flag --cont-batching (llama.cpp's memory and batching switches have no counterpart here: drop it) (see chat bench -h)\n"},
		{"serve --listen x", "chat serve: unknown flag --listen (see chat serve -h)\n"},
	} {
		code, _, stderr := runCLI(strings.Fields(c.args)...)
		if code != 2 || stderr != c.want {
			t.Errorf("chat %s: exit %d, %q; want 2, %q", c.args, code, stderr, c.want)
		}
	}
}

// A tool takes llama.cpp's flags that change nothing here (-ngl 99) with
// a notice, as the chat does (config.TestIgnoredFlags).
func TestToolIgnoredFlags(t *testing.T) {
	_, _, stderr := runCLI("plan", "-ngl", "99", "--mlock", "-fa", "1")
	// They were "chat: -ngl ...", where the tool's other lines say "chat plan: ".
	for _, want := range []string{"chat plan: -ngl is ignored: this app runs on the CPU\n", "chat plan: --mlock is ignored", "chat plan: -fa is ignored"} {
		if !strings.Contains(stderr, want) || strings.Contains(stderr, "unknown flag") {
			t.Errorf("chat plan -ngl 99 --mlock: %q; want %q", stderr, want)
		}
	}
	// chat serve --jinja was told "/template shows it", a TUI command.
	_, _, stderr = runCLI("plan", "--jinja", "--no-measure")
	if want := "chat plan: --jinja is ignored: the chat template is the model's own; chat show MODEL --template prints it (/template in the TUI)\n"; !strings.Contains(stderr, want) {
		t.Errorf("chat plan --jinja: %q; want %q", stderr, want)
	}
}

// llama.cpp's -b said "no counterpart here" also to chat serve, which has
// --batch-tokens: it names it.
func TestBatchSizeFlagNamesBatchTokens(t *testing.T) {
	want := "chat serve: unknown flag -b (llama.cpp's batch size: chat serve --batch-tokens N bounds a step's tokens; chat needs none) (see chat serve -h)\n"
	if code, _, stderr := runCLI("serve", "-b", "512"); code != 2 || stderr != want {
		t.Errorf("chat serve -b 512: exit %d, %q; want %q", code, stderr, want)
	}
}

// A --ctx-size above the context the model was trained for was cut to it
// without a word: the user asked for 4096 tokens and silently got 128.
func TestCtxSizeCutIsTold(t *testing.T) {
	tiny := testmodels.Path(t, "course/tiny.pt")
	want := "chat: --ctx-size 4096 is more than the 128 tokens the model was trained for: the window is 128\n"
	if code, _, stderr := runCLI(tiny, "-c", "4096", "--prompt", "Once", "-n", "2"); code != 0 || !strings.Contains(stderr, want) {
		t.Errorf("-c 4096: exit %d, %q; want %q", code, stderr, want)
	}
	if _, _, stderr := runCLI(tiny, "-c", "64", "--prompt", "Once", "-n", "2"); strings.Contains(stderr, "more than") {
		t.Errorf("-c 64: %q", stderr)
	}
}

// Bug: the tools that take --model stopped reading at their first
// positional argument, so `chat bench model.gguf -t 1` benchmarked the
// embedded model with the defaults and printed its speed, as if it were the
// file's (quant-report the same); the model file may be given first, as to
// chat serve, chat show and chat plan, and the flags after it count.
func TestToolModelArgument(t *testing.T) {
	path := testmodels.Path(t, "stories260K/stories260K.gguf")
	code, out, stderr := runCLI("bench", path, "-t", "1", "-p", "3", "-n", "2")
	if code != 0 || !strings.Contains(out, `"model":"stories260K.gguf","threads":1`) || !strings.Contains(out, `"prompt_tokens":3,"gen_tokens":2`) {
		t.Errorf("chat bench MODEL -t 1 -p 3 -n 2: exit %d, %q (stderr %q)", code, out, stderr)
	}
	missing := filepath.Join(t.TempDir(), "missing.gguf")
	code, _, stderr = runCLI("quant-report", missing, "--json")
	if code != 1 || !strings.Contains(stderr, "missing.gguf: no such file") {
		t.Errorf("chat quant-report MISSING: exit %d (stderr %q); want the file's error", code, stderr)
	}
	code, _, stderr = runCLI("bench", "serve", "http://127.0.0.1:1", "--requests", "1")
	if code != 1 || !strings.Contains(stderr, "http://127.0.0.1:1: ") {
		t.Errorf("chat bench serve URL: exit %d (stderr %q); want the refused connection to that URL", code, stderr)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"bench", path, "other.gguf"}, `chat bench: want one MODEL, got 2 arguments: "` + path + `" "other.gguf" (see chat bench -h)` + "\n"},
		{[]string{"bench", "-m", path, "other.gguf"}, `chat bench: unexpected argument "other.gguf": --model gives it already (see chat bench -h)` + "\n"},
		{[]string{"quant-report", "a", "b"}, `chat quant-report: want one MODEL, got 2 arguments: "a" "b" (see chat quant-report -h)` + "\n"},
		{[]string{"bench", "serve", "--url", "http://127.0.0.1:1", "x"}, `chat bench serve: unexpected argument "x": --url gives it already (see chat bench serve -h)` + "\n"},
	} {
		if code, out, stderr := runCLI(tc.args...); code != 2 || out != "" || stderr != tc.want {
			t.Errorf("chat %q: exit %d, stdout %q, stderr %q; want exit 2 and %q", tc.args, code, out, stderr, tc.want)
		}
	}
}

// -n 0 was refused ("max_tokens must be between 1 and ..."), but llama-cli
// takes it: it loads the model and exits, generating nothing. Headless it
// does the same here: the empty reply's line, or --json's object with no
// ids; a later -n N gives a budget again. The file and /set keep their
// rule (1 or more).
func TestGenerateNothing(t *testing.T) {
	path := testmodels.Path(t, "stories260K/stories260K.gguf")
	code, out, stderr := runCLI(path, "-n", "0", "--prompt", "Once upon a time")
	if code != 0 || out != "\n" || strings.Count(stderr, "\n") != 1 {
		t.Errorf("-n 0: exit %d, stdout %q, stderr %q; want 0, an empty reply", code, out, stderr)
	}
	code, out, stderr = runCLI(path, "-n", "0", "--json", "--greedy", "--prompt", "Once upon a time")
	var r struct {
		IDs    []int  `json:"ids"`
		Text   string `json:"text"`
		Reason string `json:"reason"`
	}
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || r.IDs == nil || len(r.IDs) != 0 || r.Text != "" || r.Reason != "length" {
		t.Errorf("-n 0 --json: exit %d, %q (stderr %q)", code, out, stderr)
	}
	code, out, stderr = runCLI(path, "-n", "0", "-n", "3", "--json", "--greedy", "--prompt", "Once upon a time")
	if code != 0 || json.Unmarshal([]byte(out), &r) != nil || len(r.IDs) != 3 {
		t.Errorf("-n 0 -n 3: exit %d, %q (stderr %q); want 3 ids", code, out, stderr)
	}
	// The TUI's replies need a budget: one line, before anything loads.
	isTerm := isTerminal
	defer func() { isTerminal = isTerm }()
	isTerminal = func(any) bool { return true }
	if code, _, stderr := runCLI(path, "-n", "0"); code != 2 || !strings.HasPrefix(stderr, "chat: -n 0 generates nothing: it is for a headless run") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("-n 0 for the TUI: exit %d, %q", code, stderr)
	}
}

// A system prompt given to a model that runs in raw mode (a pre-training
// checkpoint, a GGUF file without a chat template) went nowhere without a
// word: `chat stories260K.gguf -sys "Be brief." -p Hi` continued "Hi" as
// text. It still does, and says that --system needs chat mode.
func TestSystemInRawModeIsTold(t *testing.T) {
	path := testmodels.Path(t, "stories260K/stories260K.gguf")
	want := "chat: --system is used in chat mode only: this model runs in raw mode, which continues the prompt as text (--chat puts both in its chat template)\n"
	for _, flag := range []string{"--system", "-sys", "--system-prompt"} {
		if code, _, stderr := runCLI(path, flag, "Be brief.", "-p", "Once", "-n", "2"); code != 0 || !strings.Contains(stderr, want) {
			t.Errorf("%s in raw mode: exit %d, stderr %q; want %q", flag, code, stderr, want)
		}
	}
	if _, _, stderr := runCLI(path, "--chat", "--system", "Be brief.", "-p", "Once", "-n", "2"); strings.Contains(stderr, "chat mode only") {
		t.Errorf("--system with --chat: %q", stderr)
	}
}

// TestKVMemTooLargeBeforeBanner: a --kv-mem the memory cannot hold was
// told after the model's banner, at the first message (in the TUI, after
// it had drawn); now it is the one line, before anything else.
func TestKVMemTooLargeBeforeBanner(t *testing.T) {
	code, stdout, stderr := runCLI("--prompt", "hi", "-n", "1", "--kv-mem", "1048576")
	if code != 1 || stdout != "" || !strings.HasPrefix(stderr, "chat: engine: kvcache: a KV pool of") || strings.Count(stderr, "\n") != 1 {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// TestThreadsMoreThanCores: --threads past the cores was capped silently,
// as if the count asked for ran.
func TestThreadsMoreThanCores(t *testing.T) {
	defer kernels.SetThreads(kernels.Threads())
	n := runtime.NumCPU()
	_, _, stderr := runCLI("--prompt", "hi", "-n", "1", "--threads", strconv.Itoa(n+1))
	if want := fmt.Sprintf("chat: --threads %d is more than the %d cores here: running on %d\n", n+1, n, n); !strings.Contains(stderr, want) {
		t.Errorf("stderr %q, want %q", stderr, want)
	}
	if _, _, stderr := runCLI("--prompt", "hi", "-n", "1", "--threads", strconv.Itoa(n)); strings.Contains(stderr, "cores") {
		t.Errorf("--threads %d: %q", n, stderr)
	}
}

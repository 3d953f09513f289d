package main

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"chat/config"
	"chat/models/testmodels"
	"chat/session"
	"chat/session/store"
	"chat/ui"
)

// The sessions picker lays out the list ui.Lister gives; without it the
// UI would fall back to the completions' bare ids.
var _ ui.Lister = (*session.Session)(nil)

// TestMain points the XDG directories (and HOME) at a temporary directory
// for every test of this package, so no test reads the user's config file
// or writes into their saved sessions.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "chat-main-test")
	if err != nil {
		panic(err)
	}
	// llama.cpp's install is found from HOME: pin it before HOME moves.
	os.Setenv("CHAT_BENCH_CACHE", testmodels.LlamaCppCache())
	os.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	os.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	os.Setenv("HOME", filepath.Join(dir, "home"))
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func xdg(t *testing.T) (configFile string, st *store.Store) {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "config"))
	t.Setenv("XDG_DATA_HOME", filepath.Join(dir, "data"))
	sd, err := store.DefaultDir()
	if err != nil {
		t.Fatal(err)
	}
	return config.DefaultFile(), store.Open(sd)
}

func TestPrintConfig(t *testing.T) {
	file, _ := xdg(t)
	os.MkdirAll(filepath.Dir(file), 0o700)
	os.WriteFile(file, []byte("theme = \"light\"\n[sampler]\ntemperature = 0.5\ntop_k = 7\n"), 0o600)
	code, stdout, stderr := runCLI("--print-config", "--top-k", "9", "--model", "/no/such/model.gguf")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"theme = \"light\"", "temperature = 0.5", "top_k = 9", `model = "/no/such/model.gguf"`, "[keys]", file} {
		if !strings.Contains(stdout, want) {
			t.Errorf("--print-config lacks %q:\n%s", want, stdout)
		}
	}
	os.WriteFile(file, []byte("[sampler]\ntemperature = \"hot\"\n"), 0o600)
	code, _, stderr = runCLI("--print-config")
	if code != 2 || !strings.Contains(stderr, file+":2:") {
		t.Errorf("malformed config: exit %d, %q", code, stderr)
	}
}

// A headless turn with --resume continues the latest saved conversation and
// saves it; --sessions lists it; --continue by name picks it.
func TestResumeContinueSessions(t *testing.T) {
	_, st := xdg(t)
	code, _, stderr := runCLI("--resume", "--prompt", "x")
	if code != 1 || !strings.Contains(stderr, "no saved sessions") {
		t.Errorf("--resume with nothing saved: exit %d, %q", code, stderr)
	}
	r := &store.Record{ID: "20261129-100000-abcd", Name: "cats", Title: "Tell me a story about a cat.", Mode: "chat",
		Model: store.Model{Name: "student-chat.pt"}, MaxTokens: 50, Sampler: store.Sampler{Greedy: true, Temperature: 0.8, Seed: 1},
		Messages: []store.Message{{Role: "user", Content: "Tell me a story about a cat."}, {Role: "assistant", Content: "Once upon a time, there was a cat."}}}
	if err := st.Save(r); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI("--sessions")
	if code != 0 || !strings.Contains(stdout, "20261129-100000-abcd") || !strings.Contains(stdout, "[cats] Tell me a story") {
		t.Errorf("--sessions: exit %d, %q, %q", code, stdout, stderr)
	}
	code, stdout, stderr = runCLI("--resume", "--prompt", "What was its name?", "-n", "8")
	if code != 0 || stdout == "" {
		t.Fatalf("--resume: exit %d, %q, %q", code, stdout, stderr)
	}
	got, err := st.Load(r.ID)
	if err != nil || len(got.Messages) != 4 || got.Messages[2].Content != "What was its name?" || got.MaxTokens != 8 || !got.Sampler.Greedy {
		t.Errorf("after --resume: %+v, %v", got, err)
	}
	if got.Model.Identity == "" || !strings.HasPrefix(got.Model.Identity, "sha256:") {
		t.Errorf("model identity %q", got.Model.Identity)
	}
	code, _, stderr = runCLI("--continue", "cats", "--prompt", "And then?", "-n", "4", "--temperature", "0.3", "--greedy=false")
	if got, _ := st.Load(r.ID); code != 0 || len(got.Messages) != 6 || got.Sampler.Temperature != 0.3 || got.Sampler.Greedy {
		t.Errorf("--continue: exit %d %q, %+v", code, stderr, got.Sampler)
	}
	code, _, stderr = runCLI("--continue", "dogs", "--prompt", "x")
	if code != 1 || !strings.Contains(stderr, "no such session") || !strings.Contains(stderr, "(see chat --sessions)") || strings.Contains(stderr, "/sessions") {
		t.Errorf("--continue unknown: exit %d, %q", code, stderr)
	}
	// A plain headless run saves nothing.
	runCLI("--prompt", "Hi.", "-n", "2")
	if list, _ := st.List(); len(list) != 1 {
		t.Errorf("headless run saved a session: %d sessions", len(list))
	}
}

// --resume without a model file continues on the model the conversation
// was held with (not the embedded one), and a conversation started with a
// relative path keeps the file's absolute path.
func TestResumeOpensTheConversationsModel(t *testing.T) {
	_, st := xdg(t)
	tiny := testmodels.Path(t, "course/tiny.pt")
	r := &store.Record{ID: "20261129-100000-abcd", Mode: "raw", Model: store.Model{Name: "tiny.pt"},
		Messages: []store.Message{{Role: "user", Content: "Once"}, {Role: "assistant", Content: " upon"}}}
	if err := st.Save(r); err != nil {
		t.Fatal(err)
	}
	t.Chdir(filepath.Dir(tiny))
	code, _, stderr := runCLI("tiny.pt", "--resume", "--prompt", " a time", "-n", "2")
	if got, err := st.Load(r.ID); code != 0 || err != nil || got.Model.Path != tiny {
		t.Fatalf("tiny.pt --resume: exit %d, %q; saved path %q, %v", code, stderr, got.Model.Path, err)
	}
	t.Chdir(t.TempDir())
	code, _, stderr = runCLI("--resume", "--prompt", " there", "-n", "2")
	if got, _ := st.Load(r.ID); code != 0 || !strings.Contains(stderr, "continuing on the conversation's model, "+tiny) || got.Model.Name != "tiny.pt" {
		t.Errorf("--resume: exit %d, %q; saved model %+v", code, stderr, got.Model)
	}
}

// A headless --resume on another model said nothing of it: the session's
// notices went to the TUI's notice line only, and headless never polls.
func TestHeadlessResumeTellsNotices(t *testing.T) {
	_, st := xdg(t)
	r := &store.Record{ID: "20261129-100000-abcd", Mode: "raw", Model: store.Model{Name: "Llama 3.2 1B"},
		Messages: []store.Message{{Role: "user", Content: "Once"}, {Role: "assistant", Content: " upon"}}}
	if err := st.Save(r); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(testmodels.Path(t, "course/tiny.pt"), "--resume", "--prompt", " a time", "-n", "2")
	if code != 0 || !strings.Contains(stderr, "chat: this conversation was held with Llama 3.2 1B; it continues with tiny.pt\n") {
		t.Errorf("exit %d, %q", code, stderr)
	}
}

// chat --sessions names at most maxSkippedShown unreadable files, then
// counts the rest: a folder of thousands would flood the terminal.
func TestSessionsSkippedAreCounted(t *testing.T) {
	_, st := xdg(t)
	os.MkdirAll(st.Dir(), 0o700)
	for i := range maxSkippedShown + 20 {
		os.WriteFile(filepath.Join(st.Dir(), fmt.Sprintf("20261129-1000%02d-bad0.json", i)), []byte("{}"), 0o600)
	}
	code, _, stderr := runCLI("--sessions")
	lines := strings.Split(strings.TrimSuffix(stderr, "\n"), "\n")
	if code != 0 || len(lines) != maxSkippedShown+2 || !strings.Contains(stderr, "chat: skipped 20 more files that could not be read\n") {
		t.Errorf("exit %d, %d lines:\n%s", code, len(lines), stderr)
	}
}

// Ctrl+C during a headless reply stops it as llama-cli does: the text so
// far ends with its newline, --verbose prints its summary ("ended:
// stopped") and the exit status is 130. The process died by the signal
// before, with neither.
func TestHeadlessInterrupt(t *testing.T) {
	if os.Getenv("CHAT_TEST_INTERRUPT") == "1" {
		os.Exit(run([]string{"--raw", "--prompt", "Once upon a time", "-n", "100000", "--ignore-eos", "--verbose", "--threads", "1"},
			strings.NewReader(""), os.Stdout, os.Stderr))
	}
	if testing.Short() || runtime.GOOS == "windows" {
		t.Skip("signals a child process")
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestHeadlessInterrupt$")
	cmd.Env = append(os.Environ(), "CHAT_TEST_INTERRUPT=1", "XDG_CONFIG_HOME="+t.TempDir(), "XDG_DATA_HOME="+t.TempDir())
	var stdout bytes.Buffer
	cmd.Stdout = &stdout
	stderrPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// A child that hangs (before its mode line, or after Ctrl+C) is killed,
	// so the reads below end and the test fails instead of waiting out go
	// test's timeout.
	hung := time.AfterFunc(2*testmodels.HangAfter, func() { cmd.Process.Kill() })
	defer hung.Stop()
	// Read stderr here, no copier beside the test: up to the mode line, then
	// Ctrl+C at once (the earliest a script could send it), then the rest.
	r := bufio.NewReader(stderrPipe)
	var stderr strings.Builder
	for !strings.Contains(stderr.String(), "raw mode") && !strings.Contains(stderr.String(), "chat mode") {
		line, err := r.ReadString('\n')
		stderr.WriteString(line)
		if err != nil {
			break
		}
	}
	cmd.Process.Signal(os.Interrupt) // right after the mode line: its handler is in place before it
	rest, _ := io.ReadAll(r)
	stderr.Write(rest)
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != 130 || !strings.HasSuffix(stdout.String(), "\n") || !strings.Contains(stderr.String(), "ended: stopped") {
		t.Errorf("exit %d, stdout ends %q, stderr %q; want 130, a newline and the summary", code, stdout.String()[max(0, stdout.Len()-20):], stderr.String())
	}
}

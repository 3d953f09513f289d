package config

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"chat/engine/sampler"
)

// isolate points XDG_CONFIG_HOME and HOME at a temp dir, so no test reads
// the real config, and returns where the default config file goes.
func isolate(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", filepath.Join(dir, "xdg"))
	t.Setenv("HOME", filepath.Join(dir, "home"))
	return filepath.Join(dir, "xdg", "chat", "config.toml")
}

func write(t *testing.T, path, body string) {
	t.Helper()
	os.MkdirAll(filepath.Dir(path), 0o700)
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
}

func parse(t *testing.T, args ...string) *Config {
	t.Helper()
	c, err := Parse(args, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestDefaultsWithoutFile(t *testing.T) {
	isolate(t)
	c := parse(t)
	want := sampler.Params{Temperature: 0.8, Seed: 1}
	if c.Sampler != want || c.Theme != "auto" || c.File != "" || c.Mode != "" || c.Tokens != 0 || !equalKeys(c.Keys, DefaultKeys()) {
		t.Errorf("defaults: %+v", c)
	}
}

const fileBody = `# my settings
model = "models/student.pt"
mode = "raw"
system = "You tell short stories."
max_tokens = 200
threads = 2
theme = "light"

[sampler]
temperature = 0.7
top_p = 0.9
top_k = 40
min_p = 0.05
repeat_penalty = 1.1
seed = 3
greedy = false

[keys]
temperature_up = "F2"
newline = ["Alt+Enter", "ctrl+J"]
`

// defaults < file < flags, knob by knob.
func TestPrecedence(t *testing.T) {
	path := isolate(t)
	write(t, path, fileBody)
	c := parse(t)
	if c.File != path || c.Model != filepath.Join(filepath.Dir(path), "models/student.pt") || c.Mode != "raw" ||
		c.System != "You tell short stories." || c.Tokens != 200 || c.Threads != 2 || c.Theme != "light" {
		t.Errorf("file settings: %+v", c)
	}
	want := sampler.Params{Temperature: 0.7, TopP: 0.9, TopK: 40, MinP: 0.05, RepeatPenalty: 1.1, Seed: 3}
	if c.Sampler != want {
		t.Errorf("file sampler = %+v, want %+v", c.Sampler, want)
	}
	if !slices.Equal(c.Keys["temperature_up"], []string{"f2"}) || !slices.Equal(c.Keys["temperature_down"], []string{"alt+2"}) ||
		!slices.Equal(c.Keys["newline"], []string{"alt+enter", "ctrl+j"}) || !slices.Equal(c.Keys["send"], []string{"enter"}) {
		t.Errorf("keys: %v", c.Keys)
	}
	// The mode defaults do not override knobs the file set.
	c.ApplyModeDefaults("raw")
	if c.Sampler.TopK != 40 || c.Tokens != 200 {
		t.Errorf("mode defaults overrode the file: top_k %d, tokens %d", c.Sampler.TopK, c.Tokens)
	}

	c = parse(t, "--temperature", "1.2", "--chat", "--system", "", "-n", "50", "--theme", "dark", "--model", "/abs/x.gguf", "--seed", "9")
	want.Temperature, want.Seed = 1.2, 9
	if c.Sampler != want || c.Mode != "chat" || c.System != "" || c.Tokens != 50 || c.Theme != "dark" || c.Model != "/abs/x.gguf" || c.Threads != 2 {
		t.Errorf("flags over file: %+v", c)
	}
	if !c.Given["temperature"] || !c.Given["system"] || c.Given["top-p"] {
		t.Errorf("Given = %v", c.Given)
	}

	other := filepath.Join(t.TempDir(), "other.toml")
	write(t, other, "[sampler]\ntemperature = 0.1\n")
	c = parse(t, "--config", other)
	if c.File != other || c.Sampler.Temperature != 0.1 || c.Mode != "" || c.Sampler.TopK != 0 {
		t.Errorf("--config FILE: %+v", c)
	}
	if c = parse(t, "--config", ""); c.File != "" || c.Sampler.Temperature != 0.8 {
		t.Errorf(`--config "": %+v`, c)
	}
	if _, err := Parse([]string{"--config", other + ".missing"}, io.Discard); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Errorf("missing --config file: %v", err)
	}
}

func TestHomeFallbackAndTilde(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("XDG_CONFIG_HOME", "")
	t.Setenv("HOME", dir)
	write(t, filepath.Join(dir, ".config", "chat", "config.toml"), "model = \"~/m.gguf\"\n")
	if c := parse(t); c.Model != filepath.Join(dir, "m.gguf") {
		t.Errorf("model = %q", c.Model)
	}
}

func TestBadFiles(t *testing.T) {
	path := isolate(t)
	for body, want := range map[string]string{
		"model = ":                                 ":1:",
		"threads = \"x\"":                          ":1:11: threads is a TOML string; want an integer",
		"\n\ntemprature = 1":                       `:3:1: unknown setting "temprature"`,
		"[sampler]\ntop_k = \"x\"":                 ":2:9: sampler.top_k is a TOML string",
		"[sampler]\ntemperature = -1":              ":2: temperature must be ≥ 0",
		"[sampler]\ntop_p = 1.5":                   ":2: top_p must be between 0 and 1",
		"[sampler]\nseed = -1":                     ":2: seed must be ≥ 0",
		"[sampler]\ntop_k = -1":                    ":2: top_k must be ≥ 0",
		"theme = \"blue\"":                         ":1: theme \"blue\"",
		"\nmode = \"poem\"":                        ":2: mode \"poem\"",
		"max_tokens = -5":                          ":1: max_tokens",
		"threads = -1":                             ":1: threads",
		"[keys]\nfoo = \"f3\"":                     `:2: unknown action "foo"`,
		"[keys]\nsend = \"hyper+banana\"":          `unknown key "banana"`,
		"[keys]\nsend = \"ctrl+ctrl+a\"":           "ctrl given twice",
		"[keys]\nsend = \"f3\"\nhelp = \"F3\"":     `key "f3" is bound to both help and send`,
		"[keys]\nsend = 3":                         ":2: keys.send: want a key name",
		"[keys]\nsend = [\"enter\", 3]":            "key names are strings",
		"model = \"a\"\nmodel = \"b\"":             ":2:1:",
		"[sampler]\n[sampler]":                     ":2:",
		"[keys]\nsend = \"\"":                      "empty key name",
		"[keys]\nsend = \"f64\"":                   `unknown key "f64"`,
		"[keys]\nsend = \" \"":                     "empty key name",
		"\x00":                                     ":1:",
		"[sampler]\ntemperature = nan":             "temperature must be",
		"[sampler]\nfrequency_penalty = inf":       "frequency_penalty must be a finite number",
		"system = \"unterminated\nmodel = \"x\"\n": ":1:",
	} {
		write(t, path, body)
		_, err := Parse(nil, io.Discard)
		if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want the file name and %q", body, err, want)
		}
	}
}

func TestFlagErrors(t *testing.T) {
	isolate(t)
	for _, args := range [][]string{
		{"--raw", "--chat"}, {"--resume", "--continue", "x"}, {"--theme", "pink"}, {"--temperature", "NaN"},
		{"-n", "-1"}, {"--nope"}, {"stray"},
	} {
		if _, err := Parse(args, io.Discard); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
	if _, err := Parse([]string{"-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
	var help bytes.Buffer
	Parse([]string{"-h"}, &help)
	for _, want := range []string{"--resume", "-print-config", "config.toml", "Sampler order"} {
		if !strings.Contains(help.String(), want) {
			t.Errorf("-h lacks %q", want)
		}
	}
	c := parse(t, "--resume", "--sessions", "--print-config")
	if !c.Resume || !c.ListSessions || !c.PrintConfig {
		t.Errorf("%+v", c)
	}
	if c := parse(t, "--continue", "dogs"); c.Continue != "dogs" {
		t.Errorf("--continue: %q", c.Continue)
	}
}

// --print-config writes a file that gives the same settings when read back.
func TestPrintConfigRoundTrip(t *testing.T) {
	path := isolate(t)
	write(t, path, fileBody)
	c := parse(t, "--temperature", "1.25", "--system", "Say \"hi\"\n\tthen stop.")
	var out bytes.Buffer
	if err := c.WriteTOML(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"temperature = 1.25", "mode = \"raw\"", `system = "Say \"hi\"\n\tthen stop."`, "top_k = 40", "temperature_up = [\"f2\"]", "< " + path + " < flags"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("print-config lacks %q:\n%s", want, out.String())
		}
	}
	printed := filepath.Join(t.TempDir(), "printed.toml")
	write(t, printed, out.String())
	back := parse(t, "--config", printed)
	if back.Sampler != c.Sampler || back.Model != c.Model || back.Mode != c.Mode || back.System != c.System ||
		back.Tokens != c.Tokens || back.Threads != c.Threads || back.Theme != c.Theme || !equalKeys(back.Keys, c.Keys) {
		t.Errorf("read back differs:\n%+v\n%+v", back, c)
	}

	// With the mode left to the model, the mode-dependent knobs stay unset.
	isolate(t)
	out.Reset()
	parse(t).WriteTOML(&out)
	for _, want := range []string{"# top_k: 0 (off) in chat mode, 50 in raw mode", "# top_p: 0.95", "# max_tokens: 256", `model = "" # the embedded model`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("print-config without a mode lacks %q:\n%s", want, out.String())
		}
	}
	write(t, printed, out.String())
	back = parse(t, "--config", printed)
	if back.SamplerSet["top-p"] || back.SamplerSet["top-k"] || back.Tokens != 0 {
		t.Errorf("read back set mode-dependent knobs: %v %d", back.SamplerSet, back.Tokens)
	}
	// A mode from a flag makes its defaults effective, so they are printed.
	out.Reset()
	parse(t, "--chat").WriteTOML(&out)
	if !strings.Contains(out.String(), "top_p = 0.95") || !strings.Contains(out.String(), "max_tokens = 256") {
		t.Errorf("print-config --chat:\n%s", out.String())
	}
}

func TestNormalizeKey(t *testing.T) {
	for in, want := range map[string]string{
		"F3": "f3", "Shift+Ctrl+Up": "ctrl+shift+up", "escape": "esc", "ctrl++": "ctrl++", "?": "?", "A": "A",
		"alt+A": "alt+a", "PageDown": "pgdown", "control+j": "ctrl+j", "super+space": "super+space", "é": "é",
	} {
		if got, err := NormalizeKey(in); err != nil || got != want {
			t.Errorf("NormalizeKey(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "ctrl+", "f0", "f07", "banana", "win+a", "\t"} {
		if _, err := NormalizeKey(bad); err == nil {
			t.Errorf("NormalizeKey(%q) accepted", bad)
		}
	}
}

func equalKeys(a, b map[string][]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

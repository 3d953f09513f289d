package config

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"testing"

	"chat/config/settings"
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
	c, err := Parse(args)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// withPeerDefaults is p with llama.cpp's defaults of the knobs of the
// samplers it has beyond the course's (all off), written out so that a
// wrong default in the settings table fails the tests that use it.
func withPeerDefaults(p sampler.Params) sampler.Params {
	p.DRYBase, p.DRYAllowedLength, p.DRYPenaltyLastN = 1.75, 2, -1
	p.DRYBreakers = sampler.JoinBreakers([]string{"\n", ":", "\"", "*"})
	p.TopNSigma, p.TypicalP, p.XTCThreshold, p.MirostatTau, p.MirostatEta = -1, 1, 0.1, 5, 0.1
	return p
}

func TestDefaultsWithoutFile(t *testing.T) {
	isolate(t)
	c := parse(t)
	want := withPeerDefaults(sampler.Params{Temperature: 0.8, TopP: 0.95, PenaltyWindow: 64})
	if c.Sampler != want || !c.RandomSeed || c.Theme != "auto" || c.File != "" || c.Mode != "" || c.MaxTokens != 256 || !equalKeys(c.Keys, settings.DefaultKeys()) {
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

// The views but step mode start on from the config file too; step mode
// only from its flag.
func TestViewsFromFile(t *testing.T) {
	path := isolate(t)
	write(t, path, "next_token = true\ntoken_view = true\nkv_map = true\nsparklines = true\n")
	if c := parse(t); !c.ViewNext || !c.ViewTokens || !c.ViewKV || !c.ViewSpark || c.Step {
		t.Errorf("views from the file: %+v", c.Values)
	}
	write(t, path, "step = true\n")
	if _, err := Parse(nil); err == nil {
		t.Error("step = true in the config file: no error")
	}
}

// defaults < file < flags, knob by knob.
func TestPrecedence(t *testing.T) {
	path := isolate(t)
	write(t, path, fileBody)
	c := parse(t)
	if c.File != path || c.Model != filepath.Join(filepath.Dir(path), "models/student.pt") || c.Mode != "raw" ||
		c.System != "You tell short stories." || c.MaxTokens != 200 || c.Threads != 2 || c.Theme != "light" {
		t.Errorf("file settings: %+v", c)
	}
	want := withPeerDefaults(sampler.Params{Temperature: 0.7, TopP: 0.9, TopK: 40, MinP: 0.05, RepeatPenalty: 1.1, Seed: 3, PenaltyWindow: 64})
	if c.Sampler != want || c.RandomSeed {
		t.Errorf("file sampler = %+v, want %+v", c.Sampler, want)
	}
	if !slices.Equal(c.Keys["temperature_up"], []string{"f2"}) || !slices.Equal(c.Keys["temperature_down"], []string{"alt+2"}) ||
		!slices.Equal(c.Keys["newline"], []string{"alt+enter", "ctrl+j"}) || !slices.Equal(c.Keys["send"], []string{"enter"}) {
		t.Errorf("keys: %v", c.Keys)
	}
	// The mode defaults do not override knobs the file set.
	c.ApplyModeDefaults("raw")
	if c.Sampler.TopK != 40 || c.MaxTokens != 200 {
		t.Errorf("mode defaults overrode the file: top_k %d, tokens %d", c.Sampler.TopK, c.MaxTokens)
	}

	c = parse(t, "--temperature", "1.2", "--chat", "--system", "", "-n", "50", "--theme", "dark", "--model", "/abs/x.gguf", "--seed", "9")
	want.Temperature, want.Seed = 1.2, 9
	if c.Sampler != want || c.Mode != "chat" || c.System != "" || c.MaxTokens != 50 || c.Theme != "dark" || c.Model != "/abs/x.gguf" || c.Threads != 2 {
		t.Errorf("flags over file: %+v", c)
	}
	if !c.Given["temperature"] || !c.Given["system"] || !c.Given["max_tokens"] || !c.Given["mode"] || c.Given["top_p"] {
		t.Errorf("Given = %v", c.Given)
	}

	other := filepath.Join(t.TempDir(), "other.toml")
	write(t, other, "[sampler]\ntemperature = 0.1\n")
	c = parse(t, "--config", other)
	if c.File != other || c.Sampler.Temperature != 0.1 || c.Mode != "" || c.Sampler.TopK != 0 || c.Set["top_k"] {
		t.Errorf("--config FILE: %+v", c)
	}
	if c = parse(t, "--config", ""); c.File != "" || c.Sampler.Temperature != 0.8 {
		t.Errorf(`--config "": %+v`, c)
	}
	if _, err := Parse([]string{"--config", other + ".missing"}); err == nil || !strings.Contains(err.Error(), "missing") {
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
		"threads = \"x\"":                          `:1: threads must be a whole number, got "x"`,
		"\n\ntemprature = 1":                       `:3: unknown setting "temprature" at the top level`,
		"[sampler]\ntemprature = 1":                `:2: unknown setting "temprature" in [sampler] (did you mean temperature?)`,
		"temperature = 1":                          `:1: unknown setting "temperature" here; write temperature in [sampler]`,
		"[sampler]\ntop_k = \"x\"":                 `:2: top_k must be a whole number, got "x"`,
		"[sampler]\ntemperature = -1":              ":2: temperature must be ≥ 0, got -1",
		"[sampler]\ntop_p = 1.5":                   ":2: top_p must be between 0 and 1, got 1.5",
		"[sampler]\nseed = -2":                     ":2: seed must be",
		"[sampler]\ntop_k = -2":                    ":2: top_k must be between 0 and",
		"theme = \"blue\"":                         `:1: theme must be one of auto, dark, light, got "blue"`,
		"\nmode = \"poem\"":                        `:2: mode must be one of chat, raw, got "poem"`,
		"max_tokens = -5":                          ":1: max_tokens must be between 1 and",
		"max_tokens = 0":                           ":1: max_tokens must be between 1 and",
		"threads = -1":                             ":1: threads",
		"stop = [1]":                               ":1: stop must be texts in quotes",
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
		"[sampler]\nfrequency_penalty = inf":       "frequency_penalty must be a number",
		"system = \"unterminated\nmodel = \"x\"\n": ":1:",
	} {
		write(t, path, body)
		_, err := Parse(nil)
		if err == nil || !strings.Contains(err.Error(), path) || strings.Contains(err.Error(), "print-config") || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: err = %v, want the file name and %q", body, err, want)
		}
	}
}

func TestFlagErrors(t *testing.T) {
	isolate(t)
	for _, args := range [][]string{
		{"--raw", "--chat"}, {"--resume", "--continue", "x"}, {"--theme", "pink"}, {"--temperature", "NaN"},
		{"-n", "-2"}, {"-n", "0.5"}, {"--nope"}, {"a.pt", "stray"}, {"--model", "a.pt", "b.pt"}, {"--top-p", "2"}, {"--min-p", "5"},
		{"--prompt", "x", "-f", "y"}, {"--format", "json", "--regex", "a"}, {"--json-schema", "{}", "--grammar", "g.gbnf"},
	} {
		if _, err := Parse(args); err == nil {
			t.Errorf("%q: no error", args)
		}
	}
	if _, err := Parse([]string{"-h"}); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
	var help bytes.Buffer
	WriteUsage(&help)
	for _, want := range []string{"--resume", "--print-config", "config.toml", "Sampler order", "chat bench", "chat quant-report", "int8-a8", "--ctx-size", "--stop", "--ignore-eos", "--version"} {
		if !strings.Contains(help.String(), want) {
			t.Errorf("-h lacks %q", want)
		}
	}
	c := parse(t, "--resume", "--sessions", "--print-config")
	if !c.Resume || !c.ListSessions || !c.PrintConfig {
		t.Errorf("%+v", c)
	}
	// The views start on from a flag or the config file.
	if c := parse(t, "--next-token", "--token-view", "--kv-map", "--sparklines", "--step"); !c.ViewNext || !c.ViewTokens || !c.ViewKV || !c.ViewSpark || !c.Step {
		t.Errorf("view flags: %+v", c.Values)
	}
	if c := parse(t, "--continue", "dogs"); c.Continue != "dogs" {
		t.Errorf("--continue: %q", c.Continue)
	}
	if c := parse(t, "student.pt", "-n", "3"); c.Model != "student.pt" || c.MaxTokens != 3 {
		t.Errorf("positional model: %q %d", c.Model, c.MaxTokens)
	}
	if c := parse(t, "--stop", "a", "--stop", "\\n\\n", "--seed", "5", "--ignore-eos", "--ctx-size", "128"); !slices.Equal(c.Stop, []string{"a", "\\n\\n"}) ||
		c.RandomSeed || c.Sampler.Seed != 5 || !c.IgnoreEOS || c.Context != 128 {
		t.Errorf("stop/seed/ignore-eos/ctx: %+v", c.Values)
	}
	if c := parse(t, "--draft", "d.pt"); c.Spec != "draft" || c.Draft != "d.pt" {
		t.Errorf("--draft: spec %q", c.Spec)
	}
	// --spec draft alone ran and failed at the first message, naming the
	// TUI's /draft.
	if _, err := Parse([]string{"--spec", "draft", "-p", "hi"}); err == nil || !strings.Contains(err.Error(), "--spec draft needs a draft model: give it with --draft FILE") {
		t.Errorf("--spec draft without --draft: %v", err)
	}
	if c := parse(t, "--spec", "draft", "--draft", "d.pt"); c.Spec != "draft" {
		t.Errorf("--spec draft --draft d.pt: %q", c.Spec)
	}
	if _, err := Parse([]string{"--trace", "-", "-p", "hi"}); err == nil || !strings.Contains(err.Error(), "--trace -: stdout carries the reply") {
		t.Errorf("--trace -: %v", err)
	}
}

// TestPeerFlags: llama-cli's spellings are the flags they name, and
// `chat run MODEL PROMPT...` is ollama's run.
func TestPeerFlags(t *testing.T) {
	isolate(t)
	c := parse(t, "-m", "m.gguf", "-p", "hi", "-c", "128", "-t", "2", "-s", "7", "--temp", "0.5", "-sys", "be brief")
	if c.Model != "m.gguf" || c.Prompt != "hi" || !c.Given["prompt"] || c.Context != 128 || c.Threads != 2 ||
		c.Sampler.Seed != 7 || c.RandomSeed || c.Sampler.Temperature != 0.5 || c.System != "be brief" || !c.Given["temperature"] || !c.Given["model"] {
		t.Errorf("llama-cli flags: %+v", c)
	}
	// Bug: llama-cli's long spellings of -n and of the penalty window were
	// unknown flags.
	if c := parse(t, "--n-predict", "5", "--repeat-last-n", "32"); c.MaxTokens != 5 || c.Sampler.PenaltyWindow != 32 {
		t.Errorf("--n-predict 5 --repeat-last-n 32: max_tokens %d, penalty window %d", c.MaxTokens, c.Sampler.PenaltyWindow)
	}
	// llama-cli's -r (--reverse-prompt) was refused with "did you mean
	// --stop?": it is --stop, repeatable as llama-cli's is.
	if c := parse(t, "-r", "User:", "--reverse-prompt", "###"); !slices.Equal(c.Stop, []string{"User:", "###"}) || !c.Given["stop"] {
		t.Errorf("-r User: --reverse-prompt ###: stop %q", c.Stop)
	}
	// llama-cli's long -sys, its -j/-jf/--json-schema-file (a schema, or
	// its file: --json-schema takes either), --grammar-file and
	// --typical-p were unknown flags.
	if c := parse(t, "--system-prompt", "be brief", "-j", "{}", "--typical-p", "0.9"); c.System != "be brief" || c.JSONSchema != "{}" || c.Sampler.TypicalP != 0.9 {
		t.Errorf("--system-prompt -j --typical-p: system %q schema %q typical %v", c.System, c.JSONSchema, c.Sampler.TypicalP)
	}
	if c := parse(t, "--grammar-file", "g.gbnf"); c.Grammar != "g.gbnf" {
		t.Errorf("--grammar-file g.gbnf: grammar %q", c.Grammar)
	}
	for _, flag := range []string{"-jf", "--json-schema-file"} {
		if c := parse(t, flag, "s.json"); c.JSONSchema != "s.json" {
			t.Errorf("%s s.json: schema %q", flag, c.JSONSchema)
		}
	}
	if c := parse(t, "--predict", "7"); c.MaxTokens != 7 {
		t.Errorf("--predict 7: max_tokens %d", c.MaxTokens)
	}
	// Bug: -no-cnv, llama-cli's way to complete a prompt without the chat
	// template, was refused with "without --prompt the TUI is interactive"
	// although --prompt was given.
	for _, flag := range []string{"-no-cnv", "--no-conversation"} {
		if c := parse(t, "-p", "Once", flag); c.Mode != "raw" || !c.Given["mode"] {
			t.Errorf("%s: mode %q, given %v; want raw", flag, c.Mode, c.Given["mode"])
		}
	}
	// Bug: -e, llama-cli's switch that turns the \n typed in a prompt into a
	// newline, was an unknown flag. It is --escape, done by llama.cpp's rule.
	if c := parse(t, "-e", "-p", "x"); !c.Escape {
		t.Error("-e is not --escape")
	}
	for in, want := range map[string]string{`a\nb\tc\rd`: "a\nb\tc\rd", `q\"\'\\`: `q"'\`, `\x41\x4a!`: "AJ!",
		`\q \x4 \xzz \`: `\q \x4 \xzz \`, `C:\\new`: `C:\new`, "日本\\n": "日本\n"} {
		if got := settings.Unescape(in); got != want {
			t.Errorf("Unescape(%q) = %q, want %q", in, got, want)
		}
	}
	if _, err := Parse([]string{"-m", "a.gguf", "b.gguf"}); err == nil {
		t.Error("-m and a model argument: no error")
	}
	run := func(args ...string) *Config {
		t.Helper()
		c, err := ParseRun(args)
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	if c := run("m.gguf", "why", "is the sky", "blue", "-n", "5"); c.Model != "m.gguf" || c.Prompt != "why is the sky blue" || !c.Given["prompt"] || c.MaxTokens != 5 {
		t.Errorf("run with a prompt: %q %q %v", c.Model, c.Prompt, c.Given["prompt"])
	}
	if c := run("m.gguf"); c.Model != "m.gguf" || c.Given["prompt"] {
		t.Errorf("run without a prompt: %+v", c)
	}
	if _, err := ParseRun([]string{"m.gguf", "hi", "--prompt", "there"}); err == nil {
		t.Error("run with two prompts: no error")
	}
}

// -h names every other tool's spelling of a flag on the flag's line, and
// README lists them all in -h's order: "`-m` (`--model`), ..., `-no-cnv` or
// `--no-conversation` (`--raw`), ... and `--mirostat-eta` (`--mirostat-lr`)".
// (Both were written by hand; the table's --top-n-sigma and --mirostat-tau
// were missing.)
func TestPeerSpellingsListed(t *testing.T) {
	var help strings.Builder
	WriteUsage(&help)
	peers := peerSpellings()
	for _, p := range peers {
		flagAt := "\n  " + settings.Dashed(p.flag) + " "
		_, line, _ := strings.Cut(help.String(), flagAt)
		line, _, _ = strings.Cut(line, "\n  -") // a long flag has its help on the next line
		_, also, _ := strings.Cut(line, "(also ")
		also, _, _ = strings.Cut(also, ")")
		if !slices.Contains(strings.Split(also, ", "), p.peer) {
			t.Errorf("-h: %s's line lacks %s: %q", settings.Dashed(p.flag), p.peer, line)
		}
	}

	readme, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	var list []string
	for i := 0; i < len(peers); {
		var names []string
		j := i
		for ; j < len(peers) && peers[j].flag == peers[i].flag; j++ {
			names = append(names, "`"+peers[j].peer+"`")
		}
		list = append(list, strings.Join(names, " or ")+" (`"+settings.Dashed(peers[i].flag)+"`)")
		i = j
	}
	want := strings.Join(list[:len(list)-1], ", ") + " and " + list[len(list)-1]
	if !strings.Contains(strings.Join(strings.Fields(string(readme)), " "), want) {
		t.Errorf("README lacks the list of other tools' spellings; want\n%s", want)
	}
}

// Every other spelling in the settings table works: a PeerFlags entry is
// the setting's flag (-c, --temp, --mirostat-tau), and it and every alias
// name the setting in /set; the flags' Given names the setting.
func TestTableSpellings(t *testing.T) {
	isolate(t)
	value := map[settings.Kind]string{settings.Float: "0.5", settings.Int: "3", settings.Seed: "7", settings.Text: "x", settings.List: "x"}
	for _, s := range settings.All() {
		text := value[s.Kind]
		if s.Kind == settings.Choice {
			text = s.Choices[len(s.Choices)-1]
		}
		for _, peer := range s.PeerFlags {
			if s.Where&settings.Flag == 0 || s.Kind == settings.Bool {
				t.Errorf("%s: peer flag %s of a setting that takes no flag value", s.Name, peer)
				continue
			}
			want, got := parse(t, s.Dashed(), text), parse(t, peer, text)
			if !reflect.DeepEqual(got.Values, want.Values) || !got.Given[s.Name] {
				t.Errorf("%s %s: %+v, given %v; want %s's %+v", peer, text, got.Values, got.Given, s.Dashed(), want.Values)
			}
			if reflect.DeepEqual(want.Values, parse(t).Values) {
				t.Errorf("%s %s changes nothing: pick another test value", s.Dashed(), text)
			}
		}
		if s.Where&settings.Set == 0 {
			continue
		}
		for _, name := range append(slices.Clone(s.Aliases), s.PeerFlags...) {
			name = strings.TrimLeft(name, "-")
			n, v := settings.SetArgs(name + " " + text)
			if got := settings.Lookup(n); got != s {
				t.Errorf("/set %s names %v, want %s", name, got, s.Name)
			} else if err := got.SetText(&settings.Values{}, v); err != nil {
				t.Errorf("/set %s %s: %v", name, v, err)
			}
		}
	}
}

// Bug: --top-p 2 and --min-p 5 were taken silently as "off", -n 0 meant the
// default, and --temperature -1 did not name the knob, while /set refused
// them. A value is read by the setting's one rule everywhere, with one
// message: the flags and the file say the same words.
func TestOneRuleOneMessage(t *testing.T) {
	path := isolate(t)
	for _, c := range []struct {
		flag, value, file, want string
	}{
		{"--top-p", "2", "[sampler]\ntop_p = 2", "top_p must be between 0 and 1, got 2"},
		{"--min-p", "5", "[sampler]\nmin_p = 5", "min_p must be between 0 and 1, got 5"},
		{"-n", "-5", "max_tokens = -5", "max_tokens must be between 1 and 1048576 (or -1), got -5"},
		{"--temperature", "-1", "[sampler]\ntemperature = -1", "temperature must be ≥ 0, got -1"},
		{"--draft-k", "17", "draft_k = 17", "draft_k must be between 1 and 16, got 17"},
		{"--quant", "int3", "quant = \"int3\"", "quant must be one of " + strings.Join(settings.QuantFormats, ", ") + `, got "int3"`},
	} {
		_, err := Parse([]string{c.flag, c.value})
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), "("+c.flag+")") {
			t.Errorf("%s %s: %v; want %q naming the flag", c.flag, c.value, err, c.want)
		}
		write(t, path, c.file)
		_, err = Parse(nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("file %q: %v; want %q", c.file, err, c.want)
		}
		os.Remove(path)
		s := settings.Lookup(strings.TrimLeft(c.flag, "-"))
		var v settings.Values
		if err := s.SetText(&v, c.value); err == nil || err.Error() != c.want {
			t.Errorf("/set %s %s: %v; want %q", s.Name, c.value, err, c.want)
		}
	}
	// An unknown flag is one line, with a near name.
	if _, err := Parse([]string{"--temprature", "1"}); err == nil || err.Error() != "unknown flag --temprature (did you mean --temperature?) (see chat -h)" {
		t.Errorf("unknown flag: %v", err)
	}
	// A setting's other spellings (--top_k, --num-ctx, --num-predict) got no
	// hint, and the flag was quoted with the wrong dashes. (llama-cli's -m,
	// -p, -c, --temp, --n-predict are flags: TestPeerFlags.)
	for _, c := range []struct{ args, want string }{
		{"--topk 5", "unknown flag --topk (did you mean --top-k?)"},
		{"--int8", "unknown flag --int8 (did you mean --quant int8?)"},
		{"--num-ctx 256", "unknown flag --num-ctx (did you mean --ctx-size?)"},
		{"--num-predict 5", "unknown flag --num-predict (did you mean -n?)"},
		{"--num_thread 4", "unknown flag --num_thread (did you mean --threads?)"},
		{"--foo", "unknown flag --foo"},
		{"--model", "flag needs an argument: --model"},
		// llama-cli's and ollama's flags: the equivalent, or why none is
		// needed, quoted with the dashes they were typed with.
		{"--cont-batching", "unknown flag --cont-batching (llama.cpp's memory and batching switches have no counterpart here: drop it)"},
		{"-hf org/model", "unknown flag -hf (models are not downloaded: download the GGUF file and give its path)"},
		{"-ctk=q8_0", "unknown flag -ctk (did you mean --kv-quant-k?)"},
		{"--tfs 0.9", "unknown flag --tfs (a sampler this app does not have)"},
		{"--verbose-prompt", "unknown flag --verbose-prompt (--json lists the prompt's token ids (prompt_ids); the TUI's token view (Alt+h) shows its tokens)"},
		{"--prompt-file p.txt", "unknown flag --prompt-file (did you mean -f?)"},
		{"--show-timings", "unknown flag --show-timings (did you mean --verbose?)"},
		{"--in-prefix", "unknown flag --in-prefix (llama-cli's interactive mode's: the TUI frames each message with the model's chat template)"},
	} {
		if _, err := Parse(strings.Fields(c.args)); err == nil || err.Error() != c.want+" (see chat -h)" {
			t.Errorf("%s: %v; want %q", c.args, err, c.want)
		}
	}
}

// llama.cpp's flags that change nothing here (-ngl 99, --mlock) are taken
// and ignored, one notice line each, so a llama-cli command line runs as
// it is: they were refused, and the model file after -ngl's value was
// still found.
func TestIgnoredFlags(t *testing.T) {
	c, err := Parse([]string{"-m", "x.gguf", "-ngl", "99", "--n-gpu-layers=99", "--mlock", "-p", "hi"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"-ngl is ignored: this app runs on the CPU", "--n-gpu-layers is ignored: this app runs on the CPU",
		"--mlock is ignored: llama.cpp's memory and batching switches have no counterpart here"}
	if c.Model != "x.gguf" || c.Prompt != "hi" || !slices.Equal(c.Ignored, want) {
		t.Errorf("model %q prompt %q ignored %q; want x.gguf, hi, %q", c.Model, c.Prompt, c.Ignored, want)
	}
	// llama-server's usual line; a bare -fa (the old spelling) must not
	// take the flag after it as its value.
	c, err = Parse([]string{"-m", "x.gguf", "-fa", "on", "--flash-attn=auto", "--jinja", "-ub", "512", "--no-warmup", "-p", "hi"})
	if err != nil || c.Model != "x.gguf" || c.Prompt != "hi" || len(c.Ignored) != 5 || c.Ignored[4] != "--no-warmup is ignored: llama.cpp's memory and batching switches have no counterpart here" {
		t.Errorf("-fa on --jinja ...: %v, %q", err, c.Ignored)
	}
	// llama-cli's -b 512 was refused as an unknown flag, though -ub was
	// taken: the chat needs no batch size (chat serve refuses it, naming
	// --batch-tokens: main's TestBatchSizeFlagNamesBatchTokens).
	c, err = Parse([]string{"-m", "x.gguf", "-b", "512", "--batch-size=2048", "-p", "hi"})
	if want := []string{"-b is ignored: llama.cpp's batch size: chat serve --batch-tokens N bounds a step's tokens; chat needs none",
		"--batch-size is ignored: llama.cpp's batch size: chat serve --batch-tokens N bounds a step's tokens; chat needs none"}; err != nil || c.Prompt != "hi" || !slices.Equal(c.Ignored, want) {
		t.Errorf("-b 512 --batch-size=2048: %v, %q; want %q", err, c.Ignored, want)
	}
	if _, err := Parse([]string{"-m", "x.gguf", "-fa", "-p", "hi"}); err == nil || !strings.Contains(err.Error(), "want one of on, off, auto, 1, 0") {
		t.Errorf("a bare -fa: %v", err)
	}
	if c, err := Parse([]string{"--no-escape", "--log-disable", "--no-display-prompt", "-p", `a\n`}); err != nil || c.Escape || !slices.Equal(c.Ignored, []string{"--no-escape is ignored: the prompt is taken as typed here unless -e is given",
		"--log-disable is ignored: chat writes no log, only its notices on stderr", "--no-display-prompt is ignored: only the reply is printed, not the prompt before it"}) {
		t.Errorf("--no-escape: %v, %q", err, c.Ignored)
	}
	for typed := range ignoredFlags {
		if PeerNote(strings.TrimLeft(typed, "-")) == "" {
			t.Errorf("%s has no note", typed)
		}
	}
	var b strings.Builder
	WriteUsage(&b)
	if strings.Contains(b.String(), "ngl") {
		t.Error("chat -h lists -ngl")
	}
}

// The course's scripts/chat.py command line (--ckpt, --max_new_tokens,
// --top_k, --top_p) was refused a flag at a time: "unknown flag --ckpt".
func TestCourseChatFlags(t *testing.T) {
	isolate(t)
	c, err := Parse(strings.Fields("--ckpt student.pt --prompt hi --max_new_tokens 50 --top_k 40 --top_p 0.9 --temperature 0.7"))
	if err != nil || c.Model != "student.pt" || c.MaxTokens != 50 || c.Sampler.TopK != 40 || c.Sampler.TopP != 0.9 || c.Sampler.Temperature != 0.7 {
		t.Fatalf("%v, %+v", err, c)
	}
	if c, err := Parse(strings.Fields("--checkpoint tiny.pt")); err != nil || c.Model != "tiny.pt" {
		t.Fatalf("--checkpoint: %v", err)
	}
}

// ollama run's switches were refused ("unknown flag --nowordwrap ...:
// drop it"), so an ollama command line did not run as typed; they change
// nothing here and are taken with a notice each, as llama.cpp's are.
func TestOllamaRunFlagsIgnored(t *testing.T) {
	isolate(t)
	c, err := ParseRun([]string{"x.gguf", "--keepalive", "5m", "--nowordwrap", "--think=false", "--hidethinking", "--insecure", "hi"})
	want := []string{"--keepalive is ignored: ollama run's: the model stays loaded while chat runs",
		"--nowordwrap is ignored: ollama run's: replies always wrap at the window's width here",
		"--think is ignored: ollama run's: the models this app runs have no thinking mode",
		"--hidethinking is ignored: ollama run's: the models this app runs have no thinking mode",
		"--insecure is ignored: ollama run's: nothing is downloaded here"}
	if err != nil || c.Model != "x.gguf" || c.Prompt != "hi" || !slices.Equal(c.Ignored, want) {
		t.Fatalf("%v, %+v", err, c)
	}
	if _, err := ParseRun([]string{"x.gguf", "--think=maybe"}); err == nil {
		t.Error("--think=maybe was taken")
	}
}

// FlagMessage names a flag as it is typed in each of the flag package's
// errors (the subcommands' flags are plain flag.FlagSets).
func TestFlagMessage(t *testing.T) {
	fs := flag.NewFlagSet("serve", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Int("parallel", 1, "")
	fs.Int("n", 1, "")
	for _, c := range []struct {
		args          []string
		want, unknown string
	}{
		{[]string{"--parallel", "x"}, `invalid value "x" for flag --parallel: parse error`, ""},
		{[]string{"-n", "y"}, `invalid value "y" for flag -n: parse error`, ""},
		{[]string{"--port", "1"}, "unknown flag --port", "port"},
		{[]string{"--parallel"}, "flag needs an argument: --parallel", ""},
	} {
		msg, unknown := FlagMessage(fs.Parse(c.args))
		if msg != c.want || unknown != c.unknown {
			t.Errorf("%v: %q, %q; want %q, %q", c.args, msg, unknown, c.want, c.unknown)
		}
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
		back.MaxTokens != c.MaxTokens || back.Threads != c.Threads || back.Theme != c.Theme || !equalKeys(back.Keys, c.Keys) {
		t.Errorf("read back differs:\n%+v\n%+v", back, c)
	}

	// With the mode left to the model, the mode-dependent knobs stay unset.
	isolate(t)
	out.Reset()
	parse(t).WriteTOML(&out)
	for _, want := range []string{"# top_k: off in chat mode, 50 in raw mode", "# top_p: 0.95 in chat mode, off in raw mode", "# max_tokens: 256", `model = "" # the embedded model`, `seed = "random"`,
		"ctx_size = 0 # the model's, at most 4096\n", "threads = 0 # all cores\n", "min_p = 0.0 # off\n"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("print-config without a mode lacks %q:\n%s", want, out.String())
		}
	}
	write(t, printed, out.String())
	back = parse(t, "--config", printed)
	if back.Set["top_p"] || back.Set["top_k"] || back.Set["max_tokens"] || !back.RandomSeed {
		t.Errorf("read back set mode-dependent knobs: %v", back.Set)
	}
	// A mode from a flag makes its defaults effective, so they are printed.
	out.Reset()
	parse(t, "--chat").WriteTOML(&out)
	if !strings.Contains(out.String(), "top_p = 0.95") || !strings.Contains(out.String(), "max_tokens = 256") {
		t.Errorf("print-config --chat:\n%s", out.String())
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

// Any file gives settings or one error naming the file, never a panic and
// never a Go type name.
func FuzzConfigFile(f *testing.F) {
	f.Add([]byte(fileBody))
	f.Add([]byte("[sampler]\ntop_p = 2\nstop = [\"a\", 3]\n[keys]\nsend = [\"ctrl+\"]"))
	f.Add([]byte("max_tokens = 1e9\nseed = \"random\"\nmodel = 3"))
	f.Add([]byte("model = \"m.pt\"\n[sampler]\ntop_k = 5\n[keys]\nsend = [\"f3\"]"))
	f.Add([]byte("\uFEFFsampler = 5\n[keys]\nsend = {a = [1]}\n"))
	f.Add([]byte("[model]\nx=1\na.a.a.b = 1"))
	f.Add([]byte("mode = \"\\u001b[31m\"\n[keys]\nsend = \"ctrl+ctrl+\\u009b\""))
	f.Fuzz(func(t *testing.T, data []byte) {
		c, _ := newFlagSet()
		err := c.readFile("fuzz.toml", data)
		if err == nil {
			return
		}
		if msg := err.Error(); !strings.HasPrefix(msg, "fuzz.toml") || strings.Contains(msg, "interface {}") || strings.Contains(msg, "config.") {
			t.Fatalf("error %q", msg)
		}
	})
}

// The samplers llama.cpp has beyond the course's take llama-cli's flags,
// and the same values read back from --print-config and through /set.
func TestAddedSamplersRoundTrip(t *testing.T) {
	isolate(t)
	c := parse(t, "--dry-multiplier", "0.8", "--dry-base", "2", "--dry-allowed-length", "3", "--dry-penalty-last-n", "128",
		"--dry-sequence-breaker", `\n`, "--dry-sequence-breaker", `"::"`, "--top-nsigma", "1.5", "--typical", "0.9",
		"--xtc-probability", "0.5", "--xtc-threshold", "0.2", "--mirostat", "2", "--mirostat-ent", "4", "--mirostat-lr", "0.2")
	want := sampler.Params{Temperature: 0.8, TopP: 0.95, PenaltyWindow: 64,
		DRYMultiplier: 0.8, DRYBase: 2, DRYAllowedLength: 3, DRYPenaltyLastN: 128, DRYBreakers: sampler.JoinBreakers([]string{"\n", "::"}),
		TopNSigma: 1.5, TypicalP: 0.9, XTCProbability: 0.5, XTCThreshold: 0.2, Mirostat: 2, MirostatTau: 4, MirostatEta: 0.2}
	if c.Sampler != want {
		t.Fatalf("flags: %+v\nwant %+v", c.Sampler, want)
	}
	// ollama's and llama-server's spellings are flags too.
	if c := parse(t, "--mirostat-tau", "3", "--mirostat-eta", "0.3", "--top-n-sigma", "2"); c.Sampler.MirostatTau != 3 || c.Sampler.MirostatEta != 0.3 || c.Sampler.TopNSigma != 2 {
		t.Errorf("peer spellings: %+v", c.Sampler)
	}
	var out bytes.Buffer
	if err := c.WriteTOML(&out); err != nil {
		t.Fatal(err)
	}
	printed := filepath.Join(t.TempDir(), "printed.toml")
	write(t, printed, out.String())
	if back := parse(t, "--config", printed); back.Sampler != want {
		t.Errorf("config file read back %+v\nwant %+v\n%s", back.Sampler, want, out.String())
	}
	v := settings.Defaults("chat")
	for _, kv := range [][2]string{{"dry_multiplier", "0.8"}, {"dry_base", "2"}, {"dry_allowed_length", "3"}, {"dry_penalty_last_n", "128"},
		{"dry_sequence_breakers", "none"}, {"dry_sequence_breakers", `\n`}, {"dry_sequence_breakers", `"::"`}, {"top_n_sigma", "1.5"},
		{"typical_p", "0.9"}, {"xtc_probability", "0.5"}, {"xtc_threshold", "0.2"}, {"mirostat", "2"}, {"mirostat_tau", "4"}, {"mirostat_eta", "0.2"}} {
		if err := settings.Lookup(kv[0]).SetText(&v, kv[1]); err != nil {
			t.Fatal(err)
		}
	}
	if v.Sampler.Seed, v.RandomSeed = want.Seed, true; v.Sampler != want {
		t.Errorf("/set: %+v\nwant %+v", v.Sampler, want)
	}
	for _, bad := range [][2]string{{"--mirostat", "3"}, {"--typical", "2"}, {"--dry-multiplier", "-1"}, {"--dry-penalty-last-n", "-2"}} {
		if _, err := Parse(bad[:]); err == nil {
			t.Errorf("%v: no error", bad)
		}
	}
}

func FuzzUnescape(f *testing.F) {
	for _, s := range []string{`\n`, `a\x41b`, `\`, `\x4`, `\q`, "plain", `\\n`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		u := settings.Unescape(s)
		if len(u) > len(s) {
			t.Fatalf("%q unescaped to the longer %q", s, u)
		}
		if !strings.Contains(s, `\`) && u != s {
			t.Fatalf("%q without escapes became %q", s, u)
		}
		// What strconv.Quote writes (less its quotes and \u forms) reads back.
		if q := strconv.Quote(s); !strings.Contains(q, `\u`) && !strings.Contains(q, `\U`) {
			if back := settings.Unescape(q[1 : len(q)-1]); back != s {
				t.Fatalf("%q quoted as %s read back as %q", s, q, back)
			}
		}
	})
}

// llama-cli's switches that change nothing here were refused (exit 2)
// though the note said to drop them: `llama-cli -m M -cnv`, `-p TEXT -st`
// (its one-reply line) and `--color` / `-co on` (its flag takes on, off or
// auto, or nothing) now run with one notice each. -cnv with a prompt is
// still refused, in today's llama-cli's terms: there the prompt is the
// first message of a chat that goes on, here one reply.
func TestLlamaCliConversationFlags(t *testing.T) {
	for _, c := range []struct {
		args []string
		want []string
	}{
		{[]string{"-m", "x.gguf", "-cnv"}, []string{"-cnv is ignored: chat's TUI is llama-cli's conversation"}},
		{[]string{"-m", "x.gguf", "--conversation", "-i", "-if"}, []string{"--conversation is ignored: chat's TUI is llama-cli's conversation",
			"-i is ignored: chat's TUI is llama-cli's conversation", "-if is ignored: chat's TUI is llama-cli's conversation"}},
		{[]string{"-m", "x.gguf", "-p", "hi", "-st"}, []string{"-st is ignored: a --prompt reply is a single turn, and the TUI goes on until you quit"}},
		{[]string{"--color", "-m", "x.gguf", "-p", "hi"}, []string{"--color is ignored: a headless reply is plain text; the TUI has colours (--theme; NO_COLOR turns them off)"}},
		// The value is its own, not the model file; -p's value is -p's.
		{[]string{"--color", "on", "x.gguf", "-co", "auto", "-p", "hi"}, []string{"--color is ignored: a headless reply is plain text; the TUI has colours (--theme; NO_COLOR turns them off)",
			"-co is ignored: a headless reply is plain text; the TUI has colours (--theme; NO_COLOR turns them off)"}},
		{[]string{"-m", "x.gguf", "--color=off", "-p", "hi"}, []string{"--color is ignored: a headless reply is plain text; the TUI has colours (--theme; NO_COLOR turns them off)"}},
	} {
		cfg, err := Parse(c.args)
		if err != nil {
			t.Errorf("%q: %v", c.args, err)
			continue
		}
		if cfg.Model != "x.gguf" || !slices.Equal(cfg.Ignored, c.want) {
			t.Errorf("%q: model %q, ignored %q; want x.gguf, %q", c.args, cfg.Model, cfg.Ignored, c.want)
		}
	}
	if cfg, err := Parse([]string{"-m", "x.gguf", "-p", "--color", "on"}); err == nil {
		t.Errorf("-p --color on: model %q prompt %q; want \"on\" an unexpected second model", cfg.Model, cfg.Prompt)
	}
	for _, c := range []struct{ args, want string }{
		{"-m x.gguf -cnv -p hi", "-cnv with a prompt: llama-cli chats on after its reply, chat prints the reply and exits; for a chat drop the prompt and type it in the TUI (--system TEXT sets a system prompt), for one reply drop -cnv"},
		{"-m x.gguf -f p.txt --interactive", "--interactive with a prompt: llama-cli chats on after its reply, chat prints the reply and exits; for a chat drop the prompt and type it in the TUI (--system TEXT sets a system prompt), for one reply drop --interactive"},
		{"-m x.gguf --color=red", `invalid value "red" for flag --color: want one of on, off, auto (see chat -h)`},
	} {
		if _, err := Parse(strings.Fields(c.args)); err == nil || err.Error() != c.want {
			t.Errorf("%s: %v; want %q", c.args, err, c.want)
		}
	}
	// Each conversation switch (one list) has the conversation's note and
	// is refused with a prompt.
	for _, name := range conversationFlags {
		if note := PeerNote(name); note != "chat's TUI is llama-cli's conversation: drop it" {
			t.Errorf("PeerNote(%s) = %q", name, note)
		}
		if _, err := Parse([]string{"-m", "x.gguf", "--" + name, "-p", "hi"}); err == nil || !strings.Contains(err.Error(), "with a prompt: llama-cli chats on") {
			t.Errorf("--%s -p hi: %v", name, err)
		}
	}
}

// More of llama-cli's flags as typed: -sp was told "did you mean --stop?"
// and -rea "did you mean --beam?", near names of other things; -mli,
// --no-show-timings and the reasoning switches change nothing here and
// are taken with a notice; the rest say what stands for them.
func TestLlamaCliFlagNotes(t *testing.T) {
	for _, c := range []struct{ args, want string }{
		{"-sp", "unknown flag -sp (control tokens are left out of replies, as llama.cpp leaves them without it; --json's ids keep them)"},
		{"--special", "unknown flag --special (control tokens are left out of replies, as llama.cpp leaves them without it; --json's ids keep them)"},
		{"-sysf s.txt", `unknown flag -sysf (the system prompt from a file: --system "$(cat FILE)")`},
		{"-v", "unknown flag -v (did you mean --verbose?)"},
		{"--lora-scaled a.gguf:0.5", "unknown flag --lora-scaled (did you mean --lora?)"},
		// --keep was told "did you mean --seed?".
		{"--keep 5", "unknown flag --keep (a reply that outgrows the context follows the course's window rule (raw mode) or stops at its end (chat mode); no tokens are kept pinned)"},
		{"--context-shift", "unknown flag --context-shift (a reply that outgrows the context follows the course's window rule (raw mode) or stops at its end (chat mode); no tokens are kept pinned)"},
		{"-o out.txt", "unknown flag -o (the reply is printed on stdout: redirect it (> FILE))"},
		// --samplers was an unknown flag with no word of why.
		{"--samplers top_k;top_p", "unknown flag --samplers (the sampler order is fixed (chat -h lists it); each knob turns its stage on or off)"},
		// --prompt-cache was an unknown flag with no word of what stands for it.
		{"--prompt-cache p.bin", "unknown flag --prompt-cache (the prefix cache keeps prompts' keys and values in memory; in the TUI, /kv save FILE and /kv load FILE write and read them)"},
		{"--prompt-cache-all", "unknown flag --prompt-cache-all (the prefix cache keeps prompts' keys and values in memory; in the TUI, /kv save FILE and /kv load FILE write and read them)"},
	} {
		if _, err := Parse(strings.Fields(c.args)); err == nil || err.Error() != c.want+" (see chat -h)" {
			t.Errorf("%s: %v; want %q", c.args, err, c.want)
		}
	}
	// -dt and -lv, of many a llama.cpp command line, were unknown flags.
	if c, err := Parse([]string{"-m", "x.gguf", "-dt", "0.1", "-lv", "1", "-p", "hi"}); err != nil || !slices.Equal(c.Ignored, []string{
		"-dt is ignored: the KV cache is a pool of blocks that never needs defragmenting",
		"-lv is ignored: chat writes no log, only its notices on stderr"}) {
		t.Errorf("-dt 0.1 -lv 1: %v, %q", err, c.Ignored)
	}
	c, err := Parse([]string{"-m", "x.gguf", "-mli", "--no-show-timings", "-rea", "off", "--reasoning-budget", "0", "-p", "hi"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"-mli is ignored: the TUI takes several lines already (Alt+Enter or Ctrl+J, or \"\"\" as in ollama)",
		"--no-show-timings is ignored: timings are printed only with --verbose",
		"-rea is ignored: the models this app runs have no thinking mode", "--reasoning-budget is ignored: the models this app runs have no thinking mode"}
	if c.Model != "x.gguf" || c.Prompt != "hi" || !slices.Equal(c.Ignored, want) {
		t.Errorf("model %q prompt %q ignored %q; want x.gguf, hi, %q", c.Model, c.Prompt, c.Ignored, want)
	}
}

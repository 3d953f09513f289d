// Package config turns the config file and command-line flags into the
// settings the app runs with: built-in defaults < the config file
// (file.go) < flags. It knows nothing about models or the engine; main wires
// the result up.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"chat/engine/constrain"
	"chat/engine/sampler"
)

// Config is the effective settings of one run.
type Config struct {
	Model  string // model file; "" means the embedded default
	Prompt string // headless: generate a reply to this and exit
	Tokens int    // reply budget (-n); 0 means the mode's default
	JSON   bool   // headless: print one JSON line
	Mode   string // "chat", "raw" or "" (chosen from the checkpoint)
	System string // system prompt for chat mode

	Sampler sampler.Params
	// SamplerSet names the sampler flags given explicitly, so that a mode's
	// defaults apply only to the knobs the user did not set.
	SamplerSet map[string]bool

	Threads int // compute threads; 0 means all cores

	KVMem         int    // KV block pool budget in MB; 0 means the engine's default
	NoPrefixCache bool   // prefill every prompt in full (for A/B comparisons)
	KVQuantK      string // KV cache key storage: "" or "f32", or "int8"
	KVQuantV      string // KV cache value storage: "" or "f32", or "int8"

	// Constrained replies, at most one: --format json, --json-schema
	// FILE|JSON, --regex R, --grammar FILE (engine/constrain).
	Format, JSONSchema, Regex, Grammar string

	Quant  string // weight format: "" (as loaded), "f32", "int8", "int4-g32", "int4-g64", "int4-g128", "fp8"
	Draft  string // draft model file for speculative decoding
	Spec   string // speculative decoding: "off", "draft", "ngram", "lookup" ("" = draft when --draft is given)
	DraftK int    // guesses per speculative round

	File  string              // the config file that was read, "" for none
	Theme string              // "auto", "dark" or "light"
	Keys  map[string][]string // TUI action → keys (KeyActions; DefaultKeys merged with the file's [keys])

	Resume       bool   // --resume: continue the latest saved session
	Continue     string // --continue ID: continue this saved session (id, name or number)
	ListSessions bool   // --sessions: list saved sessions and exit
	PrintConfig  bool   // --print-config: print the effective settings as TOML and exit

	// Given names the flags given on the command line: they also override
	// the settings a resumed session brings.
	Given map[string]bool

	rawFlag, chatFlag bool // --raw, --chat: they override the file's mode
}

// Usage is printed for -h and after a flag error.
const Usage = `chat: talk to small GPT/Llama-style models in the terminal.

Usage:
  chat [--model FILE] [flags]                 open the chat TUI (the embedded model without --model)
  chat --model FILE --prompt TEXT [flags]     print a reply and exit (headless)
  chat --resume | --continue ID               continue a saved conversation
  chat --sessions                             list saved conversations
  chat --print-config                         print the effective settings as TOML

Defaults come from $XDG_CONFIG_HOME/chat/config.toml (~/.config/chat/config.toml)
when it exists; flags override it. Conversations are saved in
$XDG_DATA_HOME/chat/sessions (~/.local/share/chat/sessions).

Flags:
`

// Parse reads the config file and args (without the program name). It
// returns flag.ErrHelp for -h.
//
// The flags are parsed twice: once to find --config and catch bad flags,
// then, after the file has been applied, again over it, so that only the
// flags actually given override the file.
func Parse(args []string, stderr io.Writer) (*Config, error) {
	first, fs := newFlagSet(stderr)
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected argument %q (flags start with --; see chat -h)", fs.Arg(0))
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })

	c, fs := newFlagSet(io.Discard)
	c.SamplerSet, c.Given, c.Theme, c.Keys = map[string]bool{}, given, "auto", DefaultKeys()
	path, must := first.File, given["config"]
	if !must {
		path = DefaultFile()
	}
	if path != "" {
		if err := c.loadFile(path, must); err != nil {
			return nil, err
		}
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	for name := range given {
		c.SamplerSet[name] = true
	}
	if err := c.finish(); err != nil {
		return nil, err
	}
	return c, nil
}

// newFlagSet defines the flags on a new Config, which gets the built-in
// defaults.
func newFlagSet(stderr io.Writer) (*Config, *flag.FlagSet) {
	c := &Config{}
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, Usage)
		fs.PrintDefaults()
		fmt.Fprintf(stderr, "\nSampler order: %s\n", strings.Join(sampler.Order(), " → "))
	}
	fs.StringVar(&c.Model, "model", "", "model file: a course checkpoint (.pt) or a GGUF file")
	fs.StringVar(&c.Prompt, "prompt", "", "headless: generate for this prompt, print the result and exit")
	fs.IntVar(&c.Tokens, "n", 0, "maximum new tokens (default 256 in chat mode, 100 in raw mode)")
	fs.BoolVar(&c.JSON, "json", false, "headless: print one JSON line with prompt ids, ids, text and stats")
	fs.StringVar(&c.System, "system", "", "system prompt (chat mode)")
	fs.IntVar(&c.Threads, "threads", 0, "compute threads (default: all cores)")
	fs.IntVar(&c.KVMem, "kv-mem", 0, "KV block pool budget in MB (default: 256 MB or 16 context windows, whichever is smaller)")
	fs.BoolVar(&c.NoPrefixCache, "no-prefix-cache", false, "do not reuse cached KV across turns (prefill every prompt in full)")
	fs.StringVar(&c.KVQuantK, "kv-quant-k", "f32", "KV cache key storage: f32, or int8 (a scale per position and head; more context per MB)")
	fs.StringVar(&c.KVQuantV, "kv-quant-v", "f32", "KV cache value storage: f32, or int8 (a scale per position and head; more context per MB)")
	fs.StringVar(&c.Quant, "quant", "", "weight format for course checkpoints: f32, int8 (the course's), int4-g32|g64|g128, fp8")
	fs.StringVar(&c.Draft, "draft", "", "draft model for speculative decoding (same tokenizer as --model)")
	fs.StringVar(&c.Spec, "spec", "", "speculative decoding: off, draft, ngram (from the reply so far) or lookup (copy from the prompt)")
	fs.IntVar(&c.DraftK, "draft-k", 4, "guesses per speculative round (1-16)")
	fs.StringVar(&c.Format, "format", "", "constrain replies: json (any JSON value)")
	fs.StringVar(&c.JSONSchema, "json-schema", "", "constrain replies to a JSON Schema: a file, or the schema itself ({...})")
	fs.StringVar(&c.Regex, "regex", "", "constrain replies to match this regex as a whole")
	fs.StringVar(&c.Grammar, "grammar", "", "constrain replies to a GBNF grammar file (llama.cpp's format)")
	fs.StringVar(&c.File, "config", "", "config file (default $XDG_CONFIG_HOME/chat/config.toml; \"\" reads none)")
	fs.StringVar(&c.Theme, "theme", "auto", "colours: auto, dark or light")
	fs.BoolVar(&c.Resume, "resume", false, "continue the latest saved conversation")
	fs.StringVar(&c.Continue, "continue", "", "continue the saved conversation with this id, name or number (see --sessions)")
	fs.BoolVar(&c.ListSessions, "sessions", false, "list saved conversations and exit")
	fs.BoolVar(&c.PrintConfig, "print-config", false, "print the effective settings (config file + flags) as TOML and exit")
	fs.BoolVar(&c.rawFlag, "raw", false, "raw completion mode: continue the text, no chat template")
	fs.BoolVar(&c.chatFlag, "chat", false, "chat mode: the chat template, stop at end of turn (default for chat-tuned checkpoints)")

	p := &c.Sampler
	fs.BoolVar(&p.Greedy, "greedy", false, "greedy decoding (argmax); other sampler knobs are ignored")
	fs.Float64Var(&p.Temperature, "temperature", 0.8, "sampling temperature (0 divides by 1e-6, as the course does; use --greedy for argmax)")
	fs.IntVar(&p.TopK, "top-k", 0, "keep the k most likely tokens (0 = off; raw mode defaults to 50 like the course's generate_text.py)")
	fs.Float64Var(&p.TopP, "top-p", 0, "nucleus sampling threshold (off unless 0<p<1; chat mode defaults to 0.95 like the course's chat.py)")
	fs.Float64Var(&p.MinP, "min-p", 0, "drop tokens less likely than min-p × the most likely (off unless 0<m<1)")
	fs.Float64Var(&p.RepeatPenalty, "repeat-penalty", 0, "repetition penalty (1 or 0 = off)")
	fs.Float64Var(&p.FrequencyPenalty, "frequency-penalty", 0, "frequency penalty (0 = off)")
	fs.Float64Var(&p.PresencePenalty, "presence-penalty", 0, "presence penalty (0 = off)")
	fs.Uint64Var(&p.Seed, "seed", 1, "random seed; the same seed, model and prompt give the same text")
	return c, fs
}

// finish settles the mode and checks the values the flags allow but that
// mean nothing.
func (c *Config) finish() error {
	p := &c.Sampler
	switch {
	case c.rawFlag && c.chatFlag:
		return errors.New("--raw and --chat exclude each other")
	case c.rawFlag:
		c.Mode = "raw"
	case c.chatFlag:
		c.Mode = "chat"
	}
	if c.Resume && c.Continue != "" {
		return errors.New("--resume and --continue exclude each other")
	}
	if !slices.Contains(Themes, c.Theme) {
		return fmt.Errorf("--theme %q: want %s", c.Theme, strings.Join(Themes, ", "))
	}
	if c.Tokens < 0 {
		return fmt.Errorf("-n must be positive, got %d", c.Tokens)
	}
	if c.Threads < 0 {
		return fmt.Errorf("--threads must be positive, got %d", c.Threads)
	}
	if c.KVMem < 0 {
		return fmt.Errorf("--kv-mem must be positive, got %d", c.KVMem)
	}
	for _, q := range []struct{ flag, v string }{{"--kv-quant-k", c.KVQuantK}, {"--kv-quant-v", c.KVQuantV}} {
		if q.v != "" && q.v != "f32" && q.v != "int8" {
			return fmt.Errorf("%s %q: want f32 or int8", q.flag, q.v)
		}
	}
	if c.NoPrefixCache && (c.KVQuantK == "int8" || c.KVQuantV == "int8") {
		return errors.New("--kv-quant-k/--kv-quant-v int8 need the paged KV cache; drop --no-prefix-cache")
	}
	if _, err := c.Constraint(); err != nil {
		return err
	}
	if c.DraftK < 1 || c.DraftK > 16 {
		return fmt.Errorf("--draft-k must be 1 to 16, got %d", c.DraftK)
	}
	if p.Temperature < 0 || p.TopK < 0 || p.TopP < 0 || p.MinP < 0 {
		return errors.New("sampler knobs must not be negative")
	}
	return p.Validate()
}

// Constraint is the constraint the flags ask for (a zero Spec for none).
func (c *Config) Constraint() (constrain.Spec, error) {
	var out []constrain.Spec
	switch c.Format {
	case "":
	case "json":
		out = append(out, constrain.Spec{Kind: constrain.KindJSON})
	default:
		return constrain.Spec{}, fmt.Errorf("--format %q: want json (or use --json-schema, --regex, --grammar)", c.Format)
	}
	for _, f := range []struct{ kind, v string }{{constrain.KindSchema, c.JSONSchema}, {constrain.KindRegex, c.Regex}, {constrain.KindGrammar, c.Grammar}} {
		if f.v != "" {
			out = append(out, constrain.Spec{Kind: f.kind, Arg: f.v})
		}
	}
	switch len(out) {
	case 0:
		return constrain.Spec{}, nil
	case 1:
		return out[0], nil
	}
	return constrain.Spec{}, errors.New("--format, --json-schema, --regex and --grammar exclude each other")
}

// ApplyModeDefaults fills the knobs the user did not set with the course's
// defaults for mode: chat.py (T 0.8, top-p 0.95) or generate_text.py
// (T 0.8, top-k 50).
func (c *Config) ApplyModeDefaults(mode string) {
	if mode == "raw" {
		if !c.SamplerSet["top-k"] {
			c.Sampler.TopK = 50
		}
		if c.Tokens == 0 {
			c.Tokens = 100
		}
		return
	}
	if !c.SamplerSet["top-p"] {
		c.Sampler.TopP = 0.95
	}
	if c.Tokens == 0 {
		c.Tokens = 256
	}
}

// GivenSampler returns p with the sampler knobs typed on the command line
// put back, for a resumed session whose saved knobs replace the others.
func (c *Config) GivenSampler(p sampler.Params) sampler.Params {
	q := c.Sampler
	for name, set := range map[string]func(){
		"greedy": func() { p.Greedy = q.Greedy }, "temperature": func() { p.Temperature = q.Temperature },
		"top-k": func() { p.TopK = q.TopK }, "top-p": func() { p.TopP = q.TopP }, "min-p": func() { p.MinP = q.MinP },
		"repeat-penalty": func() { p.RepeatPenalty = q.RepeatPenalty }, "frequency-penalty": func() { p.FrequencyPenalty = q.FrequencyPenalty },
		"presence-penalty": func() { p.PresencePenalty = q.PresencePenalty }, "seed": func() { p.Seed = q.Seed },
	} {
		if c.Given[name] {
			set()
		}
	}
	return p
}

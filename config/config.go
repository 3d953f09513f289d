// Package config turns the config file and command-line flags into the
// settings the app runs with: built-in defaults < the config file
// (file.go) < flags. The knobs themselves, and how each validates, are
// declared once in config/settings; this package only reads them from the
// command line and the file. It knows nothing about models or the engine;
// main wires the result up.
package config

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"slices"
	"strings"

	"chat/config/settings"
	"chat/engine/sampler"
)

// Config is the effective settings of one run.
type Config struct {
	settings.Values

	// Set names the settings the file or a flag gave, so that a mode's
	// defaults apply only to the others.
	Set map[string]bool
	// Given names the settings and flags given on the command line: they
	// also override what a resumed session brings.
	Given map[string]bool

	Model      string // model file; "" means the embedded default
	Draft      string // draft model file for speculative decoding
	Remote     string // --remote URL: replies from an OpenAI-compatible server instead of a model file
	APIKey     string // --api-key for the remote server
	RemoteName string // --remote-model: the model to ask the server for ("" = its first)
	Prompt     string // headless: generate a reply to this and exit (Given["prompt"] tells "" from none)
	PromptFile string // -f: read the prompt from this file
	Escape     bool   // -e: the prompt's and the stop strings' backslash escapes are processed (Unescape)
	JSON       bool   // headless: print one JSON line
	Verbose    bool   // headless: a timing summary on stderr
	// NoReply: -n 0, llama-cli's "generate nothing": a headless run loads
	// the model and exits without a reply (max_tokens keeps its value:
	// the setting's rule, in the file and /set, is 1 or more).
	NoReply bool

	// Constrained replies, at most one (engine/constrain): --format json,
	// --json-schema FILE|JSON, --regex R, --grammar FILE.
	Format, JSONSchema, Regex, Grammar string

	File string              // the config file that was read, "" for none
	Keys map[string][]string // TUI action → keys (settings.DefaultKeys merged with the file's [keys])

	Resume       bool   // --resume: continue the latest saved session
	Continue     string // --continue ID: continue this saved session (id, name or number)
	ListSessions bool   // --sessions: list saved sessions and exit
	PrintConfig  bool   // --print-config: print the effective settings as TOML and exit
	Version      bool   // --version

	// Ignored says, one line each, which of llama.cpp's flags were taken and
	// ignored (-ngl 99: "-ngl is ignored: this app runs on the CPU").
	Ignored []string

	rawFlag, chatFlag bool            // --raw, --chat: shorthands for --mode
	listFlag          map[string]bool // list settings a flag has given (the first one replaces the file's)
	flagErr           error           // the last value a setting's flag refused,
	flagErrAt         string          // and the flag
}

// Usage is printed for -h, before the flags.
const Usage = `chat: talk to small GPT/Llama-style models in the terminal.

Usage:
  chat [MODEL] [flags]                    open the chat TUI (the embedded model without MODEL)
  chat [MODEL] --prompt TEXT [flags]      print a reply and exit (headless; also -f FILE or text on stdin)
  chat run MODEL [PROMPT...] [flags]      as ollama run: the TUI, or with a prompt a reply printed
  chat --resume | --continue ID           continue a saved conversation
  chat --sessions                         list saved conversations
  chat --print-config                     print the effective settings as TOML
  chat --remote URL [--api-key K] [--remote-model NAME] [--prompt TEXT]
                                          the TUI (or a headless reply) on an OpenAI-compatible server
  chat serve [MODEL] [--addr 127.0.0.1:8080 --parallel N --kv-mem MB --api-key K]
                                          serve the model: OpenAI /v1, ollama /api, Prometheus /metrics
  chat bench serve [URL] --concurrency C --requests R --max-tokens N
                                          aggregate tok/s, TTFT and inter-token latency of a server, one JSON line
  chat bench [MODEL] [--threads T --gen N --prompt-tokens P --quant F --kv-quant F]
                                          prefill and decode speed as one JSON line
  chat quant-report [MODEL] [--text FILE] [--calib FILE] [--json]
                                          weight bytes, logit cosine, top-1 agreement and loss per weight format
  chat convert IN OUT.gguf [--type T]     a checkpoint as a GGUF file llama.cpp runs, or a GGUF file re-quantised
  chat prune IN OUT.gguf (--magnitude S | --nm 2:4) [--method magnitude|wanda|sparsegpt] [--calib FILE]
                                          zero weights, write the pruned model, report loss and top-1
  chat merge-lora BASE ADAPTER[:SCALE]... OUT.gguf [--type T]
                                          the base with LoRA adapters merged into its weights
  chat show [MODEL] [--template] [--metadata]
                                          what a model file is: architecture, size, context, vocabulary, chat template
  chat plan --model M [--ctx N] [--batch B] [--quant F] [--kv-quant F] [--mem SIZE]
                                          weight and KV bytes, roofline bounds on this machine, measured speed

MODEL is a course checkpoint (.pt) or a GGUF file (--model FILE says the same).
A flag's "(also -c)" names other tools' spellings of it (llama-cli's, ollama's).
Defaults come from $XDG_CONFIG_HOME/chat/config.toml (~/.config/chat/config.toml)
when it exists; flags override it. Conversations are saved in
$XDG_DATA_HOME/chat/sessions (~/.local/share/chat/sessions).
`

// otherFlags are the flags that are not settings, with their help; the
// settings' flags come from the settings table.
var otherFlags = []struct{ name, arg, help string }{
	{"model", "FILE", "model file: a course checkpoint (.pt) or a GGUF file, or give it as the first argument"},
	{"prompt", "TEXT", "headless: generate for this prompt, print the result and exit (\"\" continues from the start of a text)"},
	{"f", "FILE", "headless: read the prompt from FILE (- reads stdin)"},
	{"escape", "", "turn \\n, \\r, \\t, \\\\, \\\", \\' and \\xHH in the prompt and --stop strings into their characters"},
	{"json", "", "headless: print one JSON line with prompt ids, ids, text, seed and stats"},
	{"verbose", "", "headless: print a timing summary on stderr"},
	{"raw", "", "raw completion mode: continue the text, no chat template (--mode raw)"},
	{"chat", "", "chat mode: the chat template, stop at end of turn (--mode chat)"},
	{"draft", "FILE", "draft model for speculative decoding (same tokenizer as the model)"},
	{"format", "json", "constrain replies to any JSON value"},
	{"json-schema", "FILE|JSON", "constrain replies to a JSON Schema: a file, or the schema itself ({...})"},
	{"regex", "R", "constrain replies to match this regex as a whole"},
	{"grammar", "FILE", "constrain replies to a GBNF grammar file (llama.cpp's format)"},
	{"remote", "URL", "the TUI or a headless reply on an OpenAI-compatible server (chat serve, vLLM, SGLang, llama-server, ollama); the server runs the model, so " + localFlags() + " are ignored"},
	{"api-key", "KEY", "with --remote: sent as Authorization: Bearer KEY"},
	{"remote-model", "NAME", "with --remote: the model to ask for (default: the server's first)"},
	{"config", "FILE", "config file (default $XDG_CONFIG_HOME/chat/config.toml; \"\" reads none)"},
	{"resume", "", "continue the latest saved conversation"},
	{"continue", "ID", "continue the saved conversation with this id, name or number (see --sessions)"},
	{"sessions", "", "list saved conversations and exit"},
	{"print-config", "", "print the effective settings (config file + flags) as TOML and exit"},
	{"version", "", "print the version and exit"},
}

// localFlags lists the flags --remote ignores (settings.Local).
func localFlags() string {
	var names []string
	for _, s := range settings.Local() {
		names = append(names, s.Dashed())
	}
	return strings.Join(names, ", ")
}

// Parse reads the config file and args (without the program name). It
// returns flag.ErrHelp for -h.
//
// The flags are parsed twice: once to find --config and catch bad flags,
// then, after the file has been applied, again over it, so that only the
// flags actually given override the file.
func Parse(args []string) (*Config, error) { return parseArgs(args, false) }

// ParseRun is Parse for `chat run MODEL [PROMPT...]`, ollama's habit: the
// words after the model are a headless prompt, joined by spaces as
// `ollama run` joins them.
func ParseRun(args []string) (*Config, error) { return parseArgs(args, true) }

func parseArgs(args []string, run bool) (*Config, error) {
	first, fs := newFlagSet()
	pos, err := parseFlags(fs, args, first)
	if err != nil {
		return nil, err
	}
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) {
		name := peerFlag(f.Name)
		if s := settings.Lookup(name); s != nil && name != "raw" && name != "chat" {
			given[s.Name] = true
		} else {
			given[name] = true
		}
	})
	prompt := ""
	if run && len(pos) > 1 {
		if given["prompt"] || given["f"] {
			return nil, errors.New("the prompt is given twice: after the model and with --prompt or -f")
		}
		prompt, pos = strings.Join(pos[1:], " "), pos[:1]
	}
	if given["raw"] || given["chat"] {
		given["mode"] = true
	}
	if err := conversationPrompt(given, args); err != nil {
		return nil, err
	}
	model := ""
	switch len(pos) {
	case 0:
	case 1:
		if given["model"] {
			return nil, fmt.Errorf("the model is given twice: --model %s and %s", first.Model, pos[0])
		}
		model = pos[0]
	default:
		return nil, fmt.Errorf("unexpected argument %q: give one model file, and quote a prompt (--prompt \"...\")", pos[1])
	}

	c, fs := newFlagSet()
	c.Given = given
	path, must := first.File, given["config"]
	if !must {
		path = DefaultFile()
	}
	if path != "" {
		if err := c.loadFile(path, must); err != nil {
			return nil, err
		}
	}
	if _, err := parseFlags(fs, args, c); err != nil {
		return nil, err
	}
	if model != "" {
		c.Model = model
	}
	if prompt != "" {
		c.Prompt, c.Given["prompt"] = prompt, true
	}
	for name := range given {
		c.Set[name] = true
	}
	if err := c.finish(); err != nil {
		return nil, err
	}
	return c, nil
}

// parseFlags parses args into c's flag set and returns the arguments that
// are not flags (the model file), which may come before, between or after
// the flags. A value a setting refuses is reported in the setting's own
// words (settings.Error), as /set and the config file report it.
func parseFlags(fs *flag.FlagSet, args []string, c *Config) ([]string, error) {
	var pos []string
	args = JoinOptionalValues(fs, args)
	for {
		err := fs.Parse(args)
		if err != nil {
			return nil, flagError(err, c, args)
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

func flagError(err error, c *Config, args []string) error {
	if errors.Is(err, flag.ErrHelp) {
		return err
	}
	var se *settings.Error
	if errors.As(c.flagErr, &se) {
		return fmt.Errorf("%w (%s)", c.flagErr, c.flagErrAt)
	}
	msg, unknown := FlagMessage(err)
	if unknown != "" {
		msg = "unknown flag " + TypedFlag(args, unknown)
		// A peer's flag's own note before a near name: -st is llama-cli's
		// --single-turn, not a misspelt --stop.
		if note := PeerNote(unknown); note != "" {
			msg += " (" + note + ")"
		} else if near := nearFlag(unknown); near != "" {
			msg += " (did you mean " + near + "?)"
		}
	}
	return fmt.Errorf("%s (see chat -h)", msg)
}

// PeerNote says why a flag of llama.cpp or ollama that nothing here has
// is not needed, or what to do instead ("" for other names).
func PeerNote(name string) string {
	return peerNotes[strings.ReplaceAll(strings.ToLower(name), "-", "_")]
}

// TypedFlag is the unknown flag name as args spell it: llama.cpp's
// one-dash names (-ngl, -cnv) are quoted with one dash.
func TypedFlag(args []string, name string) string {
	for _, a := range args {
		a, _, _ = strings.Cut(a, "=")
		if a == "-"+name || a == "--"+name {
			return a
		}
		if a == "--" {
			break
		}
	}
	return settings.Dashed(name)
}

// FlagMessage is a flag package error's text with the flag named as it is
// typed ("-n", "--model"), and the name of a flag nobody defined ("" for
// other errors).
func FlagMessage(err error) (msg, unknown string) {
	msg = err.Error()
	if name, ok := strings.CutPrefix(msg, "flag needs an argument: -"); ok {
		return "flag needs an argument: " + settings.Dashed(name), ""
	}
	if name, ok := strings.CutPrefix(msg, "flag provided but not defined: -"); ok {
		return "unknown flag " + settings.Dashed(name), name
	}
	// `invalid boolean value "x" for -color: want one of ...` (a flag
	// whose value may be left out)
	if rest, ok := strings.CutPrefix(msg, "invalid boolean value "); ok {
		if v, after, ok := strings.Cut(rest, " for -"); ok {
			msg = "invalid value " + v + " for flag -" + after
		}
	}
	// `invalid value "x" for flag -parallel: parse error`
	if before, after, ok := strings.Cut(msg, " for flag -"); ok {
		name, rest, _ := strings.Cut(after, ":")
		return before + " for flag " + settings.Dashed(name) + ":" + rest, ""
	}
	return msg, ""
}

// peerFlags are llama-cli's spellings of the flags that are no setting, as
// it types them, taken as the flags they name (-m model.gguf -p "..."); the
// settings' (-c 2048 -t 4 --temp 0) are their table rows' PeerFlags.
// -no-cnv completes the prompt as plain text, without the chat template:
// raw mode.
// -j takes a schema and -jf a schema's file: --json-schema takes either.
// The course's scripts/chat.py takes --ckpt, its generate.py --checkpoint
// (with the settings' --max_new_tokens, --top_k, --top_p, a chat.py
// command line runs as typed).
var peerFlags = []peerSpelling{{"-m", "model"}, {"--ckpt", "model"}, {"--checkpoint", "model"}, {"-p", "prompt"}, {"-e", "escape"}, {"-no-cnv", "raw"}, {"--no-conversation", "raw"},
	{"-j", "json-schema"}, {"-jf", "json-schema"}, {"--json-schema-file", "json-schema"}, {"--grammar-file", "grammar"}}

// peerSpelling is another tool's spelling of a flag, as it types it.
type peerSpelling struct{ peer, flag string }

// peerSpellings are all other tools' spellings of the flags, in -h's
// order: peerFlags, then the settings' PeerFlags.
func peerSpellings() []peerSpelling {
	out := slices.Clone(peerFlags)
	for _, s := range settings.All() {
		for _, peer := range s.PeerFlags {
			out = append(out, peerSpelling{peer, s.FlagName()})
		}
	}
	return out
}

// peerFlag is the flag that the flag package's name (no dashes) of a peer's
// spelling stands for; other names are themselves.
func peerFlag(name string) string {
	for _, p := range peerSpellings() {
		if strings.TrimLeft(p.peer, "-") == name {
			return p.flag
		}
	}
	return name
}

// alsoNote is " (also -c)" for -h: the other tools' spellings of flag.
func alsoNote(flag string) string {
	var peers []string
	for _, p := range peerSpellings() {
		if p.flag == flag {
			peers = append(peers, p.peer)
		}
	}
	if len(peers) == 0 {
		return ""
	}
	return " (also " + strings.Join(peers, ", ") + ")"
}

// peerHints are other peers' spellings, for the hint of an unknown flag.
var peerHints = map[string]string{
	"file": "-f", "system_prompt": "--system", "n_predict": "-n", "ctx": "--ctx-size",
	"ctk": "--kv-quant-k", "cache_type_k": "--kv-quant-k",
	"ctv": "--kv-quant-v", "cache_type_v": "--kv-quant-v", "md": "--draft", "model_draft": "--draft",
	"draft_max": "--draft-k", "tb": "--threads", "threads_batch": "--threads", "num_thread": "--threads",
	"prompt_file": "-f", "perf": "--verbose", "show_timings": "--verbose",
	"v": "--verbose", "log_verbose": "--verbose", "lora_scaled": "--lora",
	"int8": "--quant int8", // the course's chat.py --int8
}

// peerNotes say why a flag of llama-cli or ollama that has no counterpart
// here is not needed, or what to do instead.
var peerNotes = map[string]string{}

func init() {
	for note, names := range map[string]string{
		"this app runs on the CPU: drop it":                                                                                                        "ngl n_gpu_layers gpu_layers num_gpu main_gpu mg split_mode sm tensor_split ts device dev no_kv_offload nkvo",
		"chat's TUI is llama-cli's conversation: drop it":                                                                                          strings.ReplaceAll(strings.Join(conversationFlags, " "), "-", "_"),
		"a --prompt reply is a single turn, and the TUI goes on until you quit: drop it":                                                           "st single_turn",
		"models are not downloaded: download the GGUF file and give its path":                                                                      "hf hf_repo hfr hf_file hff model_url mu",
		"the chat template is the model's own; chat show MODEL --template prints it (/template in the TUI)":                                        "jinja chat_template chat_template_file",
		"llama.cpp's memory and batching switches have no counterpart here: drop it":                                                               "mlock no_mmap mmap numa flash_attn fa ub ubatch_size cont_batching no_warmup",
		"ollama run's: the model stays loaded while chat runs; drop it":                                                                            "keepalive keep_alive",
		"ollama run's: replies always wrap at the window's width here; drop it":                                                                    "nowordwrap",
		"ollama run's: the models this app runs have no thinking mode; drop it":                                                                    "think hidethinking",
		"ollama run's: nothing is downloaded here; drop it":                                                                                        "insecure",
		"llama.cpp's batch size: chat serve --batch-tokens N bounds a step's tokens; chat needs none":                                              "b batch_size",
		"llama-server's: chat serve --parallel N":                                                                                                  "np",
		"chat serve always serves /metrics: drop it":                                                                                               "metrics",
		"the prompt is taken as typed here unless -e is given: drop it":                                                                            "no_escape",
		"--json lists the prompt's token ids (prompt_ids); the TUI's token view (Alt+h) shows its tokens":                                          "verbose_prompt",
		"a headless reply is plain text; the TUI has colours (--theme; NO_COLOR turns them off): drop it":                                          "color co",
		"chat writes no log, only its notices on stderr: drop it":                                                                                  "log_disable lv log_verbosity",
		"only the reply is printed, not the prompt before it: drop it":                                                                             "no_display_prompt",
		"timings are printed only with --verbose: drop it":                                                                                         "no_perf no_show_timings",
		"the headless output is plain text already: drop it":                                                                                       "simple_io",
		"llama-cli's interactive mode's: the TUI frames each message with the model's chat template":                                               "in_prefix in_suffix in_prefix_bos",
		"a sampler this app does not have":                                                                                                         "tfs",
		"control tokens are left out of replies, as llama.cpp leaves them without it; --json's ids keep them":                                      "sp special",
		"the system prompt from a file: --system \"$(cat FILE)\"":                                                                                  "sysf system_prompt_file",
		"the TUI takes several lines already (Alt+Enter or Ctrl+J, or \"\"\" as in ollama): drop it":                                               "mli multiline_input",
		"the models this app runs have no thinking mode: drop it":                                                                                  "rea reasoning reasoning_budget reasoning_format",
		"a reply that outgrows the context follows the course's window rule (raw mode) or stops at its end (chat mode); no tokens are kept pinned": "keep context_shift no_context_shift",
		"the reply is printed on stdout: redirect it (> FILE)":                                                                                     "o output output_file",
		"the KV cache is a pool of blocks that never needs defragmenting: drop it":                                                                 "dt defrag_thold",
		"the sampler order is fixed (chat -h lists it); each knob turns its stage on or off":                                                       "samplers sampling_seq sampler_seq",
		"the prefix cache keeps prompts' keys and values in memory; in the TUI, /kv save FILE and /kv load FILE write and read them":               "prompt_cache prompt_cache_all prompt_cache_ro",
	} {
		for _, n := range strings.Fields(names) {
			peerNotes[n] = note
		}
	}
}

// nearFlag is the flag an unknown one probably meant: the flag of a setting
// it names by another spelling (--top_k, --num-ctx), a peer's spelling
// (--n-predict), or a near name (--temprature).
func nearFlag(name string) string {
	key := strings.ReplaceAll(strings.ToLower(name), "-", "_")
	if s := settings.Lookup(name); s != nil && s.Where&settings.Flag != 0 {
		return s.Dashed()
	}
	if f := peerHints[key]; f != "" {
		return f
	}
	if near := settings.Suggest(name, settings.Flag); near != "" {
		return settings.Lookup(near).Dashed()
	}
	return ""
}

// newFlagSet defines the flags on a new Config with the built-in defaults.
func newFlagSet() (*Config, *flag.FlagSet) {
	c := &Config{Values: settings.Defaults(""), Set: map[string]bool{}, Given: map[string]bool{},
		Keys: settings.DefaultKeys(), listFlag: map[string]bool{}}
	fs := flag.NewFlagSet("chat", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	fs.StringVar(&c.Model, "model", "", "")
	fs.StringVar(&c.Prompt, "prompt", "", "")
	fs.StringVar(&c.PromptFile, "f", "", "")
	fs.BoolVar(&c.Escape, "escape", false, "")
	fs.BoolVar(&c.JSON, "json", false, "")
	fs.BoolVar(&c.Verbose, "verbose", false, "")
	fs.BoolVar(&c.rawFlag, "raw", false, "")
	fs.BoolVar(&c.chatFlag, "chat", false, "")
	fs.StringVar(&c.Draft, "draft", "", "")
	fs.StringVar(&c.Format, "format", "", "")
	fs.StringVar(&c.JSONSchema, "json-schema", "", "")
	fs.StringVar(&c.Regex, "regex", "", "")
	fs.StringVar(&c.Grammar, "grammar", "", "")
	fs.StringVar(&c.Remote, "remote", "", "")
	fs.StringVar(&c.APIKey, "api-key", "", "")
	fs.StringVar(&c.RemoteName, "remote-model", "", "")
	fs.StringVar(&c.File, "config", "", "")
	fs.BoolVar(&c.Resume, "resume", false, "")
	fs.StringVar(&c.Continue, "continue", "", "")
	fs.BoolVar(&c.ListSessions, "sessions", false, "")
	fs.BoolVar(&c.PrintConfig, "print-config", false, "")
	fs.BoolVar(&c.Version, "version", false, "")
	for _, s := range settings.All() {
		if s.Where&settings.Flag == 0 {
			continue
		}
		fn := func(text string) error {
			if s.Name == "max_tokens" {
				// -n 0 is llama-cli's "generate nothing" (the flag alone:
				// a later -n N gives a budget again).
				c.NoReply = strings.TrimSpace(text) == "0"
				if c.NoReply {
					return nil
				}
			}
			if s.Kind == settings.List && !c.listFlag[s.Name] {
				c.listFlag[s.Name] = true
				s.Put(&c.Values, []string(nil)) // flags replace the file's list
			}
			err := s.SetText(&c.Values, text)
			if err != nil {
				c.flagErr, c.flagErrAt = err, s.Dashed()
			}
			return err
		}
		if s.Kind == settings.Bool {
			fs.BoolFunc(s.FlagName(), "", fn)
		} else {
			fs.Func(s.FlagName(), "", fn)
		}
	}
	AddPeerFlags(fs)
	ignored := func(note string) { c.Ignored = append(c.Ignored, note) }
	AddIgnoredFlags(fs, ignored)
	addIgnored(fs, chatIgnoredFlags, ignored)
	return c, fs
}

// AddPeerFlags gives fs other tools' spellings (peerSpellings) of the
// flags it has, llama-server's and llama-bench's -m among them.
func AddPeerFlags(fs *flag.FlagSet) {
	for _, p := range peerSpellings() {
		name := strings.TrimLeft(p.peer, "-")
		if f := fs.Lookup(p.flag); f != nil && fs.Lookup(name) == nil {
			fs.Var(f.Value, name, "another tool's spelling of "+settings.Dashed(p.flag))
		}
	}
}

// ignoredFlags are llama.cpp's flags that change nothing in this app, as
// they are typed, with the value they take: "" none, "N" any, else the
// values allowed (-fa's: a bare -fa, llama.cpp's old spelling, must not
// swallow the flag after it; llama-bench's -fa is 1 or 0). They are taken and ignored with a
// notice, so that a llama-cli or llama-server command line
// (`-m x.gguf -ngl 99 -fa on --jinja`) runs as it is; other flags of
// llama.cpp that this app lacks are refused with a note (peerNotes), as
// they would change what is computed.
var ignoredFlags = map[string]string{
	"-ngl": "N", "--n-gpu-layers": "N", "--gpu-layers": "N", "-mg": "N", "--main-gpu": "N",
	"-sm": "N", "--split-mode": "N", "-ts": "N", "--tensor-split": "N", "-dev": "N", "--device": "N",
	"-nkvo": "", "--no-kv-offload": "", "--mlock": "", "--no-mmap": "", "--mmap": "", "--no-warmup": "",
	"-fa": "on|off|auto|1|0", "--flash-attn": "on|off|auto|1|0", "-ub": "N", "--ubatch-size": "N", "--numa": "N",
	"-dt": "N", "--defrag-thold": "N", "-lv": "N", "--log-verbosity": "N",
	"--jinja": "", "--no-escape": "", "--log-disable": "", "--no-display-prompt": "", "--no-perf": "", "--simple-io": "",
	// llama-cli's conversation switches: the TUI is its conversation mode
	// (with a prompt they are refused: conversationPrompt); -st, one turn.
	"-cnv": "", "--conversation": "", "-i": "", "--interactive": "", "-if": "", "--interactive-first": "",
	"-st": "", "--single-turn": "", "-mli": "", "--multiline-input": "", "--no-show-timings": "",
	"-rea": "on|off|auto", "--reasoning": "on|off|auto", "--reasoning-budget": "N", "--reasoning-format": "N",
	// llama-cli's -co/--color [on|off|auto], bare as before 2025 too.
	"-co": "?on|off|auto", "--color": "?on|off|auto",
	// ollama run's switches: the TUI and a headless reply behave as they
	// ask, or have nothing for them to change (chat run llama.gguf
	// --nowordwrap was refused).
	"--keepalive": "N", "--nowordwrap": "", "--insecure": "", "--hidethinking": "", "--think": "?true|false|high|medium|low",
}

// chatIgnoredFlags change nothing for the chat (the TUI and a headless
// reply) but are refused by the tools, where they would mean something
// else: llama-cli's batch size (-b 512 in many a command line; a prompt is
// prefilled here without it) is chat serve's --batch-tokens, and chat
// bench's --batch counts sequences.
var chatIgnoredFlags = map[string]string{"-b": "N", "--batch-size": "N"}

// conversationFlags are llama-cli's switches into its interactive
// conversation, by the flag package's names (peerNotes' note for them is
// made from this list).
var conversationFlags = []string{"cnv", "conversation", "i", "interactive", "if", "interactive-first"}

// conversationPrompt refuses llama-cli's -cnv -p TEXT: there TEXT is the
// conversation's first message (its system prompt before 2025), here -p
// prints one reply and exits, so dropping -cnv alone would not do what
// was asked.
func conversationPrompt(given map[string]bool, args []string) error {
	if !given["prompt"] && !given["f"] {
		return nil
	}
	for _, name := range conversationFlags {
		if given[name] {
			return fmt.Errorf("%s with a prompt: llama-cli chats on after its reply, chat prints the reply and exits; "+
				"for a chat drop the prompt and type it in the TUI (--system TEXT sets a system prompt), for one reply drop %[1]s", TypedFlag(args, name))
		}
	}
	return nil
}

// JoinOptionalValues joins the value of a flag whose value may be left
// out (llama-cli's --color [on|off|auto]) to it (--color=on), for the
// flag package, which cannot tell a flag's optional value from the
// argument after it. The value of another flag (-p --color) is left alone.
func JoinOptionalValues(fs *flag.FlagSet, args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		out = append(out, a)
		if a == "--" {
			return append(out, args[i+1:]...)
		}
		if !strings.HasPrefix(a, "-") || strings.Contains(a, "=") || i+1 == len(args) {
			continue
		}
		if takes, ok := ignoredFlags[a]; ok && strings.HasPrefix(takes, "?") && slices.Contains(strings.Split(takes[1:], "|"), args[i+1]) {
			out[len(out)-1] = a + "=" + args[i+1]
			i++
			continue
		}
		if f := fs.Lookup(strings.TrimLeft(a, "-")); f != nil {
			if b, ok := f.Value.(interface{ IsBoolFlag() bool }); !ok || !b.IsBoolFlag() {
				out = append(out, args[i+1]) // its value
				i++
			}
		}
	}
	return out
}

// AddIgnoredFlags gives fs llama.cpp's flags that change nothing here
// (ignoredFlags); note is told one line for each one given.
func AddIgnoredFlags(fs *flag.FlagSet, note func(string)) { addIgnored(fs, ignoredFlags, note) }

func addIgnored(fs *flag.FlagSet, flags map[string]string, note func(string)) {
	for typed, takes := range flags {
		name := strings.TrimLeft(typed, "-")
		if fs.Lookup(name) != nil {
			continue
		}
		line := typed + " is ignored: " + strings.TrimSuffix(strings.TrimSuffix(PeerNote(name), ": drop it"), "; drop it")
		switch {
		case takes == "":
			fs.BoolFunc(name, "", func(string) error { note(line); return nil })
		case takes == "N":
			fs.Func(name, "", func(string) error { note(line); return nil })
		case strings.HasPrefix(takes, "?"): // bare, or with one of the values joined by JoinOptionalValues
			fs.BoolFunc(name, "", func(v string) error {
				if v != "true" && !slices.Contains(strings.Split(takes[1:], "|"), v) {
					return fmt.Errorf("want one of %s", strings.ReplaceAll(takes[1:], "|", ", "))
				}
				note(line)
				return nil
			})
		default:
			fs.Func(name, "", func(v string) error {
				if !slices.Contains(strings.Split(takes, "|"), v) {
					return fmt.Errorf("want one of %s", strings.ReplaceAll(takes, "|", ", "))
				}
				note(line)
				return nil
			})
		}
	}
}

func ignoredFlag(name string) bool {
	_, one := ignoredFlags["-"+name]
	_, two := ignoredFlags["--"+name]
	return one || two
}

// WriteUsage prints -h: the usage, every flag with its default, and the
// sampler order.
func WriteUsage(w io.Writer) {
	var b strings.Builder
	b.WriteString(Usage)
	b.WriteString("\nFlags:\n")
	for _, f := range otherFlags {
		flagLine(&b, f.name, f.arg, f.help+alsoNote(f.name))
	}
	for _, s := range settings.All() {
		if s.Where&settings.Flag == 0 {
			continue
		}
		flagLine(&b, s.FlagName(), argName(s), s.Help+defaultNote(s)+alsoNote(s.FlagName()))
	}
	fmt.Fprintf(&b, "\nSampler order: %s\n", strings.Join(sampler.Order(), " → "))
	io.WriteString(w, b.String())
}

// WriteFlags prints a subcommand's flags as WriteUsage prints the chat's
// ("--type T   help"), not as the flag package does ("-type string").
func WriteFlags(w io.Writer, fs *flag.FlagSet) {
	var b strings.Builder
	fs.VisitAll(func(f *flag.Flag) {
		if ignoredFlag(f.Name) {
			return
		}
		arg, help := flag.UnquoteUsage(f)
		switch {
		case arg == "string" && (fileFlags[f.Name] || strings.HasSuffix(f.Name, "-file")):
			arg = "FILE"
		case arg == "string":
			arg = "TEXT"
		case arg == "int" || arg == "uint" || arg == "int64" || arg == "uint64":
			arg = "N"
		case arg == "float":
			arg = "X"
		case arg == "duration":
			arg = "D"
		case arg == "value":
			arg = "V"
		}
		// -1 marks a flag not given (prune's --magnitude): no default.
		if d := f.DefValue; d != "" && d != "0" && d != "-1" && d != "false" && !strings.Contains(help, "(default") {
			help += " (default " + d + ")"
		}
		flagLine(&b, f.Name, arg, help)
	})
	io.WriteString(w, b.String())
}

// fileFlags are the subcommands' flags that name a file.
var fileFlags = map[string]bool{"model": true, "m": true, "calib": true, "text": true, "draft": true, "config": true}

// flagLine is one flag's line of -h: "  --name ARG" and its help in a
// column, or on the next line when the left part is too wide.
func flagLine(b *strings.Builder, name, arg, help string) {
	left := "  -" + name
	if len(name) > 1 {
		left = "  --" + name
	}
	if arg != "" {
		left += " " + arg
	}
	if len(left) < 26 {
		fmt.Fprintf(b, "%-26s %s\n", left, help)
	} else {
		fmt.Fprintf(b, "%s\n  %-24s %s\n", left, "", help)
	}
}

func argName(s *settings.Setting) string {
	if s.Arg != "" {
		return s.Arg
	}
	switch s.Kind {
	case settings.Bool:
		return ""
	case settings.Choice:
		return strings.Join(s.Choices, "|")
	case settings.Int:
		return "N"
	case settings.Seed:
		return "S|random"
	case settings.Float:
		return "X"
	}
	return "TEXT"
}

// defaultNote is " (default …)" for the help, per mode when it differs.
func defaultNote(s *settings.Setting) string {
	var d string
	if s.ModeDefault {
		d = s.DefaultText("chat") + " in chat mode, " + s.DefaultText("raw") + " in raw mode"
	} else {
		d = s.DefaultText("")
		if d == "—" || d == "none" || d == "off" && (s.Kind == settings.Bool || s.ZeroMeans() != "") {
			return ""
		}
	}
	if s.Off != "" {
		d += "; " + s.Off
	}
	return " (default " + d + ")"
}

// finish settles the mode and checks the combinations that mean nothing.
func (c *Config) finish() error {
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
	if c.Given["prompt"] && c.PromptFile != "" {
		return errors.New("--prompt and -f exclude each other")
	}
	if c.Format != "" && c.Format != "json" {
		return fmt.Errorf("--format %q: want json (or use --json-schema, --regex, --grammar)", c.Format)
	}
	n := 0
	for _, v := range []string{c.Format, c.JSONSchema, c.Regex, c.Grammar} {
		if v != "" {
			n++
		}
	}
	if n > 1 {
		return errors.New("--format, --json-schema, --regex and --grammar exclude each other")
	}
	if c.Draft != "" && !c.Set["spec"] {
		c.Spec = "draft"
	}
	if c.Spec == "draft" && c.Draft == "" && c.Remote == "" {
		// Else told at the first message, as the TUI's "/draft FILE loads one".
		return errors.New("--spec draft needs a draft model: give it with --draft FILE (a small model with the same tokenizer); --spec ngram and lookup need none")
	}
	if c.Trace == "-" {
		// It made a file named "-".
		return errors.New("--trace -: stdout carries the reply; give a file (--trace /dev/stderr writes the trace to stderr)")
	}
	return nil
}

// ApplyModeDefaults fills the settings the user did not set with the
// course's defaults for mode: chat.py (T 0.8, top-p 0.95) or
// generate_text.py (T 0.8, top-k 50).
func (c *Config) ApplyModeDefaults(mode string) {
	settings.ApplyModeDefaults(&c.Values, mode, c.Set)
}

// Command chat is a terminal chat app with its own inference engine for small
// GPT/Llama-style models: course checkpoints (.pt) and GGUF files.
//
// main only wires things up: flags → config → model → session → TUI or a
// headless run.
package main

import (
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"strings"
	"sync/atomic"

	"chat/config"
	"chat/config/settings"
	"chat/engine"
	"chat/engine/bench"
	"chat/engine/constrain"
	"chat/engine/speculative"
	"chat/models"
	"chat/models/embedded"
	"chat/models/kernels"
	"chat/models/kvcache"
	"chat/models/load"
	"chat/models/quant/report"
	"chat/models/regular"
	"chat/models/weights"
	"chat/session"
	"chat/session/store"
	"chat/session/termtext"
	"chat/ui"

	"github.com/charmbracelet/x/term"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
}

// isTerminal reports whether f is a terminal (a variable for the tests).
var isTerminal = func(f any) bool {
	file, ok := f.(*os.File)
	return ok && term.IsTerminal(file.Fd())
}

// storeCommands are ollama's commands on its model store, which a user of
// ollama types first (chat pull llama3): chat runs files, so each gets one
// line saying so instead of "open model: open pull: no such file".
var storeCommands = map[string]bool{
	"pull": true, "push": true, "list": true, "ls": true, "ps": true, "rm": true, "cp": true, "create": true, "stop": true,
}

// isTool reports whether name is a subcommand's first word, for chat
// help TOOL.
func isTool(name string) bool {
	return name == "bench" || name == "serve" || name == "quant-report" || subcommands[name] != nil
}

// maxPrompt bounds a prompt read from stdin or -f: far more than any context
// this app runs, and small enough to hold.
const maxPrompt = 16 << 20

func run(args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	// Messages quote file names, config strings, pickle globals and model
	// metadata: none of their control characters reaches the terminal raw.
	stderr = termtext.EscapeWriter(stderr)
	if len(args) >= 2 && args[0] == "help" && isTool(args[1]) {
		// git's, go's and ollama's habit: chat help serve is chat serve -h.
		args = append(slices.Clone(args[1:]), "-h")
	} else if len(args) == 2 && args[0] == "help" && args[1] == "run" {
		args = []string{"--help"} // chat -h is run's help
	} else if len(args) == 2 && isTool(args[0]) && args[1] == "help" {
		if _, err := os.Stat(args[1]); err != nil { // chat serve help: a model named help, or the help
			args = []string{args[0], "-h"}
		}
	}
	if len(args) > 0 && args[0] == "bench" {
		if len(args) > 1 && args[1] == "serve" {
			return benchServeCmd(args[2:], stdout, stderr)
		}
		return benchCmd(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "serve" {
		return serveCmd(args[1:], stdout, stderr)
	}
	if len(args) > 0 && args[0] == "quant-report" {
		return quantReportCmd(args[1:], stdout, stderr)
	}
	if len(args) > 0 && subcommands[args[0]] != nil {
		return subcommands[args[0]](args[1:], stdout, stderr)
	}
	if len(args) == 1 && (args[0] == "help" || args[0] == "version") { // ollama's and go's habits
		if _, err := os.Stat(args[0]); err != nil {
			args = []string{"--" + args[0]}
		}
	}
	if len(args) > 0 && storeCommands[args[0]] {
		if _, err := os.Stat(args[0]); err != nil {
			fmt.Fprintf(stderr, "chat: no %s command: chat keeps no model store and downloads nothing; give the path of a GGUF or .pt file (see chat -h)\n", args[0])
			return 2
		}
	}
	parse := config.Parse
	if len(args) > 0 && args[0] == "run" {
		parse, args = config.ParseRun, args[1:]
	}
	cfg, err := parse(args)
	if errors.Is(err, flag.ErrHelp) {
		config.WriteUsage(stderr)
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "chat:", err)
		return 2
	}
	switch {
	case cfg.Version:
		fmt.Fprintln(stdout, version())
		return 0
	case cfg.PrintConfig:
		var b strings.Builder
		cfg.WriteTOML(&b)
		io.WriteString(stdout, termtext.JSON(b.String())) // the file's strings, control characters escaped
		return 0
	case cfg.ListSessions:
		return listSessions(stdout, stderr)
	}
	headless, err := readPrompt(cfg, stdin, stdout)
	if err == nil && cfg.NoReply && !headless {
		err = errors.New("-n 0 generates nothing: it is for a headless run (--prompt TEXT, -f FILE or stdin), which loads the model and exits; the TUI's replies need a budget of 1 or more")
	}
	if err != nil {
		fmt.Fprintln(stderr, "chat:", err)
		return 2
	}
	if cfg.Escape {
		cfg.Prompt = settings.Unescape(cfg.Prompt)
		for i, stop := range cfg.Stop {
			cfg.Stop[i] = settings.Unescape(stop)
		}
	}
	if cfg.Threads > 0 {
		kernels.SetThreads(cfg.Threads)
	}
	if cfg.Model == "" && cfg.Remote == "" {
		// --resume without a model file continues on the conversation's own.
		if path := resumedModel(cfg); path != "" {
			cfg.Model = path
			fmt.Fprintln(stderr, "chat: continuing on the conversation's model,", path)
		}
	}
	// The run's notices: flags taken and ignored, a window cut to the
	// trained context. Headless they go to stderr, else to the TUI's
	// notice line.
	notices := slices.Clone(cfg.Ignored)
	if n := runtime.NumCPU(); cfg.Threads > n && cfg.Remote == "" {
		// SetThreads caps it: say so, rather than let the user think 64 run.
		notices = append(notices, fmt.Sprintf("--threads %d is more than the %d cores here: running on %d", cfg.Threads, n, n))
	}
	var m models.Model
	mode := cfg.Mode
	if cfg.Remote != "" {
		if cfg.Model != "" || cfg.Draft != "" {
			fmt.Fprintln(stderr, "chat: --remote runs on the server's model: give no model file (--remote-model names one of the server's)")
			return 2
		}
		if mode == "" {
			mode = session.RemoteDefaultMode(session.RemoteOptions{URL: cfg.Remote, APIKey: cfg.APIKey, Model: cfg.RemoteName})
		}
		for _, st := range settings.Local() {
			if cfg.Given[st.Name] {
				notices = append(notices, st.Dashed()+" is ignored with --remote: the server runs the model")
			}
		}
	} else {
		if m, err = openModel(cfg.Model); err != nil {
			fmt.Fprintln(stderr, "chat:", err)
			return 1
		}
		if mode == "" {
			mode = session.DefaultMode(m)
		}
		if note := ctxCutNote("--ctx-size", cfg.Context, m.Info()); note != "" && cfg.Given["ctx_size"] {
			notices = append(notices, note)
		}
	}
	if headless {
		for _, note := range notices {
			fmt.Fprintln(stderr, "chat:", note)
		}
	}
	if cfg.Mode == "" && headless && cfg.Prompt == "" {
		mode = "raw" // an empty prompt continues from the start of a text, as llama.cpp does
	}
	cfg.Mode = mode
	cfg.ApplyModeDefaults(mode)
	if mode == "raw" && cfg.Given["system"] && cfg.Values.System != "" {
		// A raw-mode model continues the prompt as text: a system prompt
		// has nowhere to go, and `-sys` had no effect without a word.
		note := "--system is used in chat mode only: this model runs in raw mode, which continues the prompt as text (--chat puts both in its chat template)"
		if headless {
			fmt.Fprintln(stderr, "chat:", note)
		} else {
			notices = append(notices, note)
		}
	}
	if headless && cfg.Prompt == "" && mode == "chat" {
		fmt.Fprintln(stderr, "chat: chat mode needs a message: give one, or drop --chat to continue from the start of a text")
		return 2
	}
	modelPath := cfg.Model
	if abs, err := filepath.Abs(modelPath); err == nil && modelPath != "" {
		modelPath = abs // a saved conversation finds its model from any folder
	}
	opts := session.Options{Settings: cfg.Values, DraftPath: cfg.Draft, ModelPath: modelPath, Open: openModel,
		Constraint: constraintSpec(cfg), Probe: !headless, Warm: !headless}
	if cfg.Model == "" && cfg.Remote == "" {
		opts.ModelIdentity = store.IdentityOf(embedded.Model)
	}
	if cfg.Remote == "" { // with --remote the notice says --lora is ignored
		if opts.Adapters, err = loadAdapters(cfg.Lora); err != nil {
			fmt.Fprintln(stderr, "chat:", err)
			return 1
		}
	}
	if cfg.Draft != "" {
		if opts.Draft, err = load.Open(cfg.Draft); err != nil {
			fmt.Fprintln(stderr, "chat: draft model:", err)
			return 1
		}
	}
	// The TUI saves every conversation; a headless run only when it
	// continues a saved one.
	if !headless || cfg.Resume || cfg.Continue != "" {
		if opts.Store, err = openStore(); err != nil {
			fmt.Fprintln(stderr, "chat:", err, "(conversations will not be saved)")
		}
	}
	switch {
	case cfg.TopLogprobs > 0 && (!headless || !cfg.JSON || cfg.Remote != "" || cfg.Beam > 0):
		fmt.Fprintln(stderr, "chat: --top-logprobs adds to a headless --json reply on a model file (not --remote, not --beam)")
		return 2
	case cfg.Trace != "" && (!headless || cfg.Remote != "" || cfg.Beam > 0):
		fmt.Fprintln(stderr, "chat: --trace records a headless reply on a model file (not --remote, not --beam)")
		return 2
	}
	var trace *traceFile
	if cfg.Trace != "" {
		if trace, err = openTrace(cfg.Trace, m.Tokenizer()); err != nil {
			fmt.Fprintln(stderr, "chat:", err)
			return 1
		}
		opts.OnStep = trace.step
	}
	var out *errWriter
	if headless {
		out = &errWriter{w: stdout}
		stdout = out
	}
	if headless && !cfg.JSON {
		// The model's text, without escape sequences or control characters
		// other than newline and tab (--json has it exactly).
		clean := termtext.Stream{KeepTab: true}
		opts.OnText = func(s string) { io.WriteString(stdout, clean.Clean(s)) }
	}
	if q := cfg.Values.Quant; m != nil && q != "" && q != m.Info().Quant && isTerminal(os.Stderr) {
		// Re-encoding the weights takes seconds (a 110M model to q4_k: ~10 s
		// on 2 cores), before the TUI draws anything: say what is going on.
		fmt.Fprintf(stderr, "chat: making %s weights from %s ...\n", q, m.Info().Quant)
	}
	s, err := startSession(m, cfg, opts)
	if err != nil {
		fmt.Fprintln(stderr, "chat:", err)
		return 1
	}
	defer s.Close()
	if headless {
		code := runHeadless(s, cfg, stdout, stderr)
		if out.err != nil && code == 0 {
			fmt.Fprintln(stderr, "chat: writing the reply:", out.err)
			code = 1
		}
		if trace != nil {
			if err := trace.close(); err != nil {
				fmt.Fprintln(stderr, "chat:", err)
				code = max(code, 1)
			}
		}
		return code
	}
	if err := ui.Run(s, ui.Options{Theme: cfg.Theme, Keys: cfg.Keys, Notice: strings.Join(notices, " · ")}); err != nil {
		fmt.Fprintln(stderr, "chat:", err)
		return 1
	}
	return 0
}

// readPrompt settles whether this is a headless run and its prompt:
// --prompt (even ""), -f FILE, or stdin when it is not a terminal. Without
// any, the TUI needs a terminal.
func readPrompt(cfg *config.Config, stdin io.Reader, stdout io.Writer) (headless bool, err error) {
	switch {
	case cfg.Given["prompt"]:
		return true, nil
	case cfg.PromptFile == "-": // llama-cli's and most tools' name for stdin
		cfg.Prompt, err = readAll(stdin, "the prompt on stdin")
		return true, err
	case cfg.PromptFile != "":
		b, err := regular.ReadFile(cfg.PromptFile, maxPrompt) // a FIFO or pipe too, without hanging
		if err != nil {
			return false, fmt.Errorf("prompt file: %w", err)
		}
		cfg.Prompt = strings.TrimSuffix(string(b), "\n")
		return true, nil
	case !isTerminal(stdin):
		cfg.Prompt, err = readAll(stdin, "the prompt on stdin")
		if err == nil && strings.TrimSpace(cfg.Prompt) == "" {
			err = errors.New("no prompt on stdin (it is not a terminal, so the prompt is read from it): give one with --prompt TEXT or -f FILE")
		}
		return true, err
	case cfg.JSON:
		return false, errors.New("--json prints a headless reply: give the prompt with --prompt TEXT, -f FILE or on stdin")
	case !isTerminal(stdout):
		return false, errors.New("the chat TUI needs a terminal; use --prompt TEXT (or -f FILE, or the prompt on stdin) for a reply on stdout")
	}
	return false, nil
}

// readAll reads a prompt of at most maxPrompt bytes.
func readAll(r io.Reader, what string) (string, error) {
	b, err := io.ReadAll(io.LimitReader(r, maxPrompt+1))
	if err != nil {
		return "", fmt.Errorf("%s: %w", what, err)
	}
	if len(b) > maxPrompt {
		return "", fmt.Errorf("%s is over %d MB", what, maxPrompt>>20)
	}
	return strings.TrimSuffix(string(b), "\n"), nil
}

// version is the module version and VCS revision the binary was built from.
func version() string {
	v, rev, dirty := "(devel)", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if bi.Main.Version != "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.modified":
				dirty = s.Value == "true"
			}
		}
	}
	out := "chat " + v
	if rev != "" {
		out += " " + rev[:min(12, len(rev))]
		if dirty {
			out += "+dirty"
		}
	}
	return out + " " + runtime.Version()
}

// startSession starts the conversation — on the model, or on the server
// --remote names — continuing a saved one when --resume or --continue asks
// for it.
func startSession(m models.Model, cfg *config.Config, opts session.Options) (*session.Session, error) {
	var s *session.Session
	var err error
	if cfg.Remote != "" {
		s, err = session.NewRemote(session.RemoteOptions{URL: cfg.Remote, APIKey: cfg.APIKey, Model: cfg.RemoteName}, opts)
	} else {
		s, err = session.New(m, opts)
	}
	if err != nil {
		return nil, err
	}
	if err := resume(s, cfg); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func openModel(path string) (models.Model, error) {
	if path == "" {
		return load.Embedded()
	}
	update, done := progressBar("loading", filepath.Base(path))
	defer done()
	return load.OpenProgress(path, update)
}

// jsonModel is --json's "model": "context_length" is the window, and
// "train_context" the longer context the model was trained for, if any.
func jsonModel(info session.Info, quant string) map[string]any {
	m := map[string]any{"name": info.Model, "arch": info.Arch, "quant": quant, "params": info.Params,
		"context_length": info.ContextLength, "mode": info.Mode}
	if info.TrainContext > 0 {
		m["train_context"] = info.TrainContext
	}
	return m
}

// runHeadless prints the reply to one prompt (or one JSON line) and exits:
// the scripting twin of the course's generate_text.py / chat.py --prompt.
func runHeadless(s *session.Session, cfg *config.Config, stdout, stderr io.Writer) int {
	// Ctrl+C stops the reply (below). Its handler is in place before the
	// mode line, which a script may take as the sign the run has begun: a
	// Ctrl+C right after it stops the reply instead of killing the process.
	// Beam search and -n 0 have no reply to stop: the signal ends them.
	interrupted := make(chan os.Signal, 1)
	if !cfg.NoReply && cfg.Beam == 0 {
		signal.Notify(interrupted, os.Interrupt)
		defer signal.Stop(interrupted)
	}
	info := s.Info()
	// Like generate_text.py's "Loaded ..." line, on stderr so stdout stays the text.
	if cfg.Remote != "" {
		fmt.Fprintf(stderr, "chat: %s on %s · %s mode\n", info.Model, cfg.Remote, info.Mode)
	} else {
		fmt.Fprintf(stderr, "chat: %s · %s · %s · %s params · %s · %s mode\n",
			info.Model, info.Arch, info.Quant, session.ParamCount(info.Params), session.ContextText(info), info.Mode)
	}
	if cfg.NoReply {
		// -n 0: nothing is generated and the prompt is not evaluated, as
		// llama-cli's -n 0 loads the model and exits: the empty reply's
		// line, or --json's object with no ids.
		return printReply(s, cfg, engine.Result{Reason: engine.ReasonLength, StopID: -1}, stdout)
	}
	if cfg.Beam > 0 {
		return runBeam(s, cfg, stdout, stderr)
	}
	if err := s.Send(cfg.Prompt); err != nil {
		fmt.Fprintln(stderr, "chat:", err)
		return 1
	}
	for _, n := range s.Notices() { // a resumed conversation's, the turn's
		fmt.Fprintln(stderr, "chat:", n)
	}
	// Ctrl+C stops the reply, as in the TUI and llama-cli: what was
	// generated ends with its newline and the --verbose summary, and the
	// exit status says it was interrupted. One that came before Send waits
	// in the channel.
	var stopped atomic.Bool
	go func() {
		if _, ok := <-interrupted; ok {
			stopped.Store(true)
			s.Stop()
		}
	}()
	res := s.Wait()
	signal.Stop(interrupted)
	close(interrupted)
	if res.Err == nil && !cfg.JSON {
		// The text's newline before the notices: on a terminal both
		// streams share the screen, and a notice ran on from the text.
		fmt.Fprintln(stdout)
	}
	for _, n := range s.Notices() { // the reply's: the text outgrew the context
		fmt.Fprintln(stderr, "chat:", n)
	}
	if res.Err != nil {
		fmt.Fprintln(stderr, "\nchat:", res.Err)
		return 1
	}
	st := res.Stats
	if cfg.Verbose {
		fmt.Fprintln(stderr, timingSummary(res.Reason, st, s.LastSeed()))
	}
	if stopped.Load() {
		return 130 // 128 + SIGINT, as a shell reports it
	}
	if err := s.Saved().Err; err != nil {
		// --resume/--continue: the reply was not saved (full or read-only disk).
		fmt.Fprintln(stderr, "chat:", err)
		return 1
	}
	return printReply(s, cfg, res, stdout)
}

// printReply ends a headless run's output: nothing more after the streamed
// text, or --json's object.
func printReply(s *session.Session, cfg *config.Config, res engine.Result, stdout io.Writer) int {
	if !cfg.JSON {
		if cfg.NoReply {
			fmt.Fprintln(stdout)
		}
		return 0
	}
	info, st := s.Info(), res.Stats
	out := struct {
		Model     any    `json:"model"`
		PromptIDs []int  `json:"prompt_ids"`
		IDs       []int  `json:"ids"`
		Text      string `json:"text"`
		Reason    string `json:"reason"`
		Seed      uint64 `json:"seed"`
		Stats     any    `json:"stats"`
		Logprobs  any    `json:"logprobs,omitempty"`
	}{jsonModel(info, s.Quant()),
		s.LastPrompt(), res.IDs, res.Text, res.Reason, s.LastSeed(), map[string]any{
			"prompt_tokens": st.PromptTokens, "reused_tokens": st.ReusedTokens, "gen_tokens": st.GenTokens,
			"prefill_tok_s": st.PrefillTokS, "decode_tok_s": st.DecodeTokS, "ttft_ms": float64(st.TTFT.Microseconds()) / 1000,
			"kv_used": st.KVUsed, "kv_cap": st.KVCap, "window_cuts": st.WindowCuts, "quant": s.Quant(),
			"kv_pool": map[string]any{"blocks": st.PoolBlocks, "used": st.PoolUsed, "seq_blocks": st.SeqBlocks,
				"tree_blocks": st.TreeBlocks, "block_size": st.BlockSize, "evictions": st.Evictions,
				"k_format": st.KVFormatK, "v_format": st.KVFormatV, "block_bytes": st.BlockBytes,
				"reuse": ratio(st.ReusedTokens, st.PromptTokens), "hit_rate": st.HitRate,
				"total_prompt_tokens": st.TotalPromptTokens, "total_reused_tokens": st.TotalReusedTokens},
			"spec": specJSON(st.Spec),
		}, nil}
	if cfg.TopLogprobs > 0 {
		out.Logprobs = logprobsJSON(res.Logprobs, s.Tokenizer())
	}
	if c := s.Constraint(); c != "" {
		out.Stats.(map[string]any)["constraint"] = map[string]any{"spec": c, "mask_us": float64(st.MaskTime.Nanoseconds()) / 1000}
	}
	if out.IDs == nil {
		out.IDs = []int{}
	}
	if out.PromptIDs == nil {
		out.PromptIDs = []int{} // --remote: the server tokenizes
	}
	b, _ := json.Marshal(out)
	fmt.Fprintln(stdout, termtext.JSON(string(b)))
	return 0
}

// errWriter keeps the first error writing to w: a headless reply that did
// not reach stdout (a full disk) must not exit 0 as if it had.
type errWriter struct {
	w   io.Writer
	err error
}

func (e *errWriter) Write(p []byte) (int, error) {
	n, err := e.w.Write(p)
	if err != nil && e.err == nil {
		e.err = err
	}
	return n, err
}

// timingSummary is --verbose's line: prefill, decode, time to first token,
// why the reply ended and the seed that reproduces it.
func timingSummary(reason string, st engine.Stats, seed uint64) string {
	seen := st.PromptTokens
	if st.KVCap > 0 {
		seen = min(seen, st.KVCap) // the window rule: the first forward sees the prompt's latest window
	}
	prefilled := seen - st.ReusedTokens
	pre := fmt.Sprintf("prefill %s (%d reused)", tokens(prefilled), st.ReusedTokens)
	if seen < st.PromptTokens {
		pre = fmt.Sprintf("prefill %s, the window's, of a %d-token prompt (%d reused)", tokens(prefilled), st.PromptTokens, st.ReusedTokens)
	}
	if st.PrefillTokS > 0 && prefilled >= 8 {
		pre += fmt.Sprintf(" at %.0f tok/s", st.PrefillTokS)
	}
	dec := "decode " + tokens(st.GenTokens)
	if st.DecodeTokS > 0 {
		dec += fmt.Sprintf(" at %.1f tok/s", st.DecodeTokS)
	}
	sp := ""
	if st.Spec.Method != speculative.Off {
		sp = fmt.Sprintf(" · spec %s %.0f%% accepted, %.2f tokens/pass", st.Spec.Method, 100*st.Spec.AcceptanceRate(), st.Spec.TokensPerPass())
	}
	return fmt.Sprintf("chat: %s · %s · time to first token %.1f ms · ended: %s · seed %d%s",
		pre, dec, float64(st.TTFT.Microseconds())/1000, reason, seed, sp)
}

// tokens is "1 token", "5 tokens".
func tokens(n int) string {
	if n == 1 {
		return "1 token"
	}
	return fmt.Sprintf("%d tokens", n)
}

func openStore() (*store.Store, error) {
	dir, err := store.DefaultDir()
	if err != nil {
		return nil, err
	}
	return store.Open(dir), nil
}

// resume continues the saved conversation --resume or --continue names. It
// brings the settings it kept; the settings typed on this command line
// still win over them.
func resume(s *session.Session, cfg *config.Config) error {
	var err error
	switch {
	case cfg.Resume:
		err = s.Resume()
	case cfg.Continue != "":
		err = s.Load(cfg.Continue)
	default:
		return nil
	}
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%w (see chat --sessions)", err)
	}
	if err != nil {
		return err
	}
	v := s.Settings()
	for _, st := range settings.All() {
		if st.Persist && cfg.Given[st.Name] {
			st.Put(&v, st.Get(&cfg.Values))
		}
	}
	return s.Apply(v)
}

// ctxCutNote says that flag (--ctx-size, plan's --ctx) asked for more
// than the model runs, and the window it gets; "" when it did not.
func ctxCutNote(flag string, asked int, in models.Info) string {
	if asked <= in.MaxContext() {
		return ""
	}
	return fmt.Sprintf("%s %d is more than the %d tokens the model was trained for: the window is %d", flag, asked, in.MaxContext(), in.MaxContext())
}

// resumedModel is the model file of the conversation --resume or
// --continue names, when the file is still there; "" otherwise (resume
// then says what is wrong, or that the model differs).
func resumedModel(cfg *config.Config) string {
	if !cfg.Resume && cfg.Continue == "" {
		return ""
	}
	st, err := openStore()
	if err != nil {
		return ""
	}
	var r *store.Record
	if cfg.Resume {
		r, err = st.Latest()
	} else if id, rerr := st.Resolve(cfg.Continue); rerr == nil {
		r, err = st.Load(id)
	}
	if err != nil || r == nil || r.Model.Path == "" {
		return ""
	}
	if _, err := os.Stat(r.Model.Path); err != nil {
		return ""
	}
	return r.Model.Path
}

// maxSkippedShown is how many unreadable session files chat --sessions
// names: a folder of thousands would flood the terminal.
const maxSkippedShown = 10

// listSessions is chat --sessions.
func listSessions(stdout, stderr io.Writer) int {
	st, err := openStore()
	if err != nil {
		fmt.Fprintln(stderr, "chat:", err)
		return 1
	}
	list, skipped, err := st.Scan()
	if err != nil {
		fmt.Fprintln(stderr, "chat:", err)
		return 1
	}
	for i, e := range skipped {
		if i == maxSkippedShown {
			fmt.Fprintf(stderr, "chat: skipped %d more files that could not be read\n", len(skipped)-i)
			break
		}
		fmt.Fprintln(stderr, "chat: skipped:", e)
	}
	if len(list) == 0 {
		fmt.Fprintln(stderr, "chat: no saved conversations in", st.Dir())
		return 0
	}
	fmt.Fprintln(stdout, session.FormatList(list, ""))
	return 0
}

// benchCmd prints one JSON line of prefill and decode speed in the format of
// ../shared/bench/README.md, for compare.sh to divide by llama.cpp's.
func benchCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chat bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	model := fs.String("model", "", "model file (default: the embedded model)")
	threads := fs.Int("threads", 0, "compute threads (default: all cores)")
	gen := fs.Int("gen", 128, "tokens to generate greedily (one forward pass each)")
	prompt := fs.Int("prompt-tokens", 128, "prompt tokens in the one batched prefill (BOS + text)")
	file := fs.String("prompt-file", "", "prompt text (default: ../shared/models/text/TinyStories-valid-head.txt if present)")
	quantFmt := fs.String("quant", "", "weight format to run in (int8, int8-a8, int4-g32, fp8, q8_0, f16, ...; from float weights)")
	batch := fs.Int("batch", 1, "sequences decoded together (different prompts); > 1 also measures one sequence alone and a rollout")
	calib := fs.String("calib", "", "calibration text of GPTQ and AWQ formats (default: ../shared/models/text/TinyStories-valid-head.txt if present)")
	kvQuant := fs.String("kv-quant", "auto", "KV cache storage of keys and values: "+strings.Join(settings.KVChoices, ", ")+" (auto: f16 for a GGUF model, f32 for a course checkpoint)")
	// llama-bench's -p 512 -n 128: its pp512 and tg128 are one run here.
	fs.Var(fs.Lookup("prompt-tokens").Value, "p", "llama-bench's spelling of --prompt-tokens")
	fs.Var(fs.Lookup("gen").Value, "n", "llama-bench's spelling of --gen")
	if err := parseOneArg(fs, args, "model", model); err != nil {
		return flagExit(stderr, "bench", err)
	}
	if *threads < 0 {
		fmt.Fprintln(stderr, "chat bench: --threads must be positive")
		return 2
	}
	if *quantFmt != "" {
		if _, err := settings.Lookup("quant").Parse(*quantFmt); err != nil {
			fmt.Fprintln(stderr, "chat bench:", err)
			return 2
		}
	}
	if _, err := kvcache.FormatFor(*kvQuant, models.Info{}); err != nil {
		fmt.Fprintln(stderr, "chat bench:", err)
		return 2
	}
	if *threads > 0 {
		kernels.SetThreads(*threads)
	}
	m, err := openModel(*model)
	if err != nil {
		fmt.Fprintln(stderr, "chat bench:", err)
		return 1
	}
	kf, _ := kvcache.FormatFor(*kvQuant, m.Info())
	if *quantFmt != "" && *quantFmt != m.Info().Quant {
		q, ok := m.(models.Quantizer)
		if !ok {
			fmt.Fprintf(stderr, "chat bench: %s cannot be quantized in memory\n", m.Info().Name)
			return 1
		}
		if weights.Calibrated(*quantFmt) {
			c, ok := m.(models.CalibQuantizer)
			text, err := bench.NeedText(*calib, "--calib")
			if err == nil && !ok {
				err = fmt.Errorf("%s cannot be calibrated", m.Info().Name)
			}
			if err == nil {
				m, err = c.QuantizeCalib(*quantFmt, text)
			}
			if err != nil {
				fmt.Fprintln(stderr, "chat bench:", err)
				return 1
			}
		} else if m, err = q.Quantize(*quantFmt); err != nil {
			fmt.Fprintln(stderr, "chat bench:", err)
			return 1
		}
	}
	text, err := bench.ReadText(*file)
	if err != nil {
		fmt.Fprintln(stderr, "chat bench:", err)
		return 1
	}
	if *batch < 1 {
		fmt.Fprintln(stderr, "chat bench: --batch must be at least 1")
		return 2
	}
	r, err := bench.Run(m, text, kernels.Threads(), *prompt, *gen, *batch, kf)
	if err != nil {
		fmt.Fprintln(stderr, "chat bench:", err)
		return 1
	}
	if *model != "" {
		r.Model = filepath.Base(*model) // compare.sh labels rows by file name
	}
	b, _ := json.Marshal(r)
	fmt.Fprintln(stdout, termtext.JSON(string(b)))
	return 0
}

// quantReportCmd prints, for each weight format, bytes, logit cosine and
// top-1 agreement against float, and held-out loss (the course's int8 table).
func quantReportCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chat quant-report", flag.ContinueOnError)
	fs.SetOutput(stderr)
	model := fs.String("model", "", "float32 course checkpoint (default: the embedded model)")
	text := fs.String("text", "", "held-out text (default: ../shared/models/text/TinyStories-valid-head.txt if present)")
	asJSON := fs.Bool("json", false, "print JSON instead of a table")
	calib := fs.String("calib", "", "calibration text of the GPTQ and AWQ rows (default: the held-out text's first tokens, which the windows then skip)")
	if err := parseOneArg(fs, args, "model", model); err != nil {
		return flagExit(stderr, "quant-report", err)
	}
	m, err := openModel(*model)
	if err != nil {
		fmt.Fprintln(stderr, "chat quant-report:", err)
		return 1
	}
	txt, err := bench.NeedText(*text, "--text")
	if err != nil {
		fmt.Fprintln(stderr, "chat quant-report:", err)
		return 1
	}
	opt := report.Options{CalibText: txt, CalibHeldOut: true}
	if *calib != "" {
		if opt.CalibText, err = bench.ReadText(*calib); err != nil {
			fmt.Fprintln(stderr, "chat quant-report:", err)
			return 1
		}
		opt.CalibHeldOut = false
	}
	t, err := report.Report(m, txt, opt)
	if err != nil {
		fmt.Fprintln(stderr, "chat quant-report:", err)
		return 1
	}
	if *asJSON {
		b, err := t.JSON()
		if err != nil {
			fmt.Fprintln(stderr, "chat quant-report:", err)
			return 1
		}
		fmt.Fprintln(stdout, termtext.JSON(string(b)))
		return 0
	}
	fmt.Fprint(stdout, termtext.Clean(t.Text(), true))
	return 0
}

// ratio is a/b, or 0 when b is 0.
func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// specJSON is the speculative decoding part of --json; plain decoding has
// only its method.
func specJSON(sp speculative.Stats) map[string]any {
	if sp.Method == speculative.Off {
		return map[string]any{"method": sp.Method.String()}
	}
	out := map[string]any{"method": sp.Method.String(), "k": sp.K, "k_last": sp.KNow, "proposed": sp.Proposed,
		"accepted": sp.Accepted, "target_passes": sp.TargetPasses,
		"acceptance_rate": sp.AcceptanceRate(), "tokens_per_pass": sp.TokensPerPass()}
	if sp.Note != "" {
		out["note"] = sp.Note
	}
	return out
}

// constraintSpec is the constraint the flags ask for (a zero Spec for
// none; config checks that at most one is given).
func constraintSpec(cfg *config.Config) constrain.Spec {
	switch {
	case cfg.Format == "json":
		return constrain.Spec{Kind: constrain.KindJSON}
	case cfg.JSONSchema != "":
		return constrain.Spec{Kind: constrain.KindSchema, Arg: cfg.JSONSchema}
	case cfg.Regex != "":
		return constrain.Spec{Kind: constrain.KindRegex, Arg: cfg.Regex}
	case cfg.Grammar != "":
		return constrain.Spec{Kind: constrain.KindGrammar, Arg: cfg.Grammar}
	}
	return constrain.Spec{}
}

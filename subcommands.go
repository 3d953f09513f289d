package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"unicode"

	"chat/config"
	"chat/models"
	"chat/models/lora"
	"chat/models/quote"
	"chat/models/regular"
	"chat/ui"

	"github.com/charmbracelet/x/term"
)

// subcommands are the tools beside the chat: each takes its own arguments
// and writes to stdout and stderr.
var subcommands = map[string]func(args []string, stdout, stderr io.Writer) int{
	"convert":    convertCmd,
	"plan":       planCmd,
	"merge-lora": mergeLoraCmd,
	"prune":      pruneCmd,
	"show":       showCmd,
}

// parseArgs parses args into fs, with llama.cpp's spellings of its flags
// (config.AddPeerFlags: -m, -t, -c). A wrong flag comes back as one line
// for the caller to print, as the chat's own flags do ("unknown flag
// --listen (see chat serve -h)"), where the flag package printed its
// message and then every flag's help; -h still prints the help.
func parseArgs(fs *flag.FlagSet, args []string) error {
	config.AddPeerFlags(fs)
	out := fs.Output()
	// Named as the tool's other lines are ("chat serve: ..."), not "chat:".
	config.AddIgnoredFlags(fs, func(note string) { fmt.Fprintln(out, fs.Name()+":", note) })
	fs.SetOutput(io.Discard)
	err := fs.Parse(config.JoinOptionalValues(fs, args))
	fs.SetOutput(out)
	if errors.Is(err, flag.ErrHelp) {
		writeToolUsage(out, fs)
		return err
	}
	if err == nil {
		return nil
	}
	msg, unknown := config.FlagMessage(err)
	if unknown != "" {
		msg = "unknown flag " + config.TypedFlag(args, unknown)
		if note := config.PeerNote(unknown); note != "" {
			msg += " (" + note + ")"
		}
	}
	return fmt.Errorf("%s (see %s -h)", msg, fs.Name())
}

// writeToolUsage prints a tool's -h: its lines of chat -h's usage (what it
// takes besides flags, and what it does), then its flags.
func writeToolUsage(w io.Writer, fs *flag.FlagSet) {
	fmt.Fprintln(w, "Usage:")
	in := false
	for _, line := range strings.Split(config.Usage, "\n") {
		if rest, ok := strings.CutPrefix(line, "  "+fs.Name()+" "); ok {
			// "chat bench " is not "chat bench serve ..."
			in = rest != "" && !unicode.IsLower(rune(rest[0]))
		} else if !strings.HasPrefix(line, "    ") {
			in = false
		}
		if in {
			fmt.Fprintln(w, line)
		}
	}
	fmt.Fprintln(w, "\nFlags:")
	config.WriteFlags(w, fs)
}

// flagExit is a subcommand's exit status for parseArgs's error: 0 after
// -h printed the help, else 2 with the error's one line on stderr.
func flagExit(stderr io.Writer, tool string, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintf(stderr, "chat %s: %v\n", tool, err)
	return 2
}

// parseInterspersed parses fs's flags wherever they are among args and
// returns the positional arguments (flag.Parse stops at the first one).
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := parseArgs(fs, args); err != nil {
			return nil, err
		}
		if fs.NArg() == 0 {
			return pos, nil
		}
		pos = append(pos, fs.Arg(0))
		args = fs.Args()[1:]
	}
}

// outputFlag gives a tool that writes a file (convert, prune, merge-lora),
// whose output is its last argument, -o OUT and --outfile OUT
// (convert_hf_to_gguf.py's) too, as most tools take it ("unknown flag -o"
// pointed at redirecting stdout). withOutput adds it to the arguments.
func outputFlag(fs *flag.FlagSet) *string {
	out := new(string)
	fs.StringVar(out, "o", "", "the output `FILE` (else the last argument)")
	fs.StringVar(out, "outfile", "", "the output `FILE` (else the last argument)")
	return out
}

// withOutput is pos with -o's file last, when it was given.
func withOutput(pos []string, out string) []string {
	if out == "" {
		return pos
	}
	return append(pos, out)
}

// parseOneArg parses fs's flags wherever they are among args and takes
// one positional argument as *into (the MODEL of `chat bench MODEL`, as
// `chat serve MODEL` and `chat plan MODEL` take it), unless the flag named
// flagName gave it already. flag.Parse stops at the first positional, so
// `chat bench model.gguf -t 1` ran the embedded model with every flag
// after the file dropped, and printed its speed as if it were the file's.
func parseOneArg(fs *flag.FlagSet, args []string, flagName string, into *string) error {
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Value == fs.Lookup(flagName).Value })
	switch {
	case len(pos) == 0:
		return nil
	case len(pos) == 1 && !given:
		*into = pos[0]
		return nil
	case len(pos) == 1:
		return fmt.Errorf("unexpected argument %s: --%s gives it already (see %s -h)", quote.Quote(pos[0]), flagName, fs.Name())
	}
	quoted := make([]string, len(pos))
	for i, a := range pos {
		quoted[i] = quote.Quote(a)
	}
	return fmt.Errorf("want one %s, got %d arguments: %s (see %s -h)", strings.ToUpper(flagName), len(pos), strings.Join(quoted, " "), fs.Name())
}

// wantInOut is the check of convert's and prune's IN OUT arguments.
func wantInOut(pos []string) error {
	switch len(pos) {
	case 2:
		return nil
	case 0:
		return errors.New("want an input and an output file")
	case 1:
		return fmt.Errorf("want an output file after %s", quote.Quote(pos[0]))
	}
	return fmt.Errorf("want an input and an output file, got %d arguments", len(pos))
}

// usageError prints a tool's usage line and returns the exit code 2.
func usageError(stderr io.Writer, tool, usage string, err error) int {
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "chat %s: %v\n", tool, err)
	}
	fmt.Fprintf(stderr, "usage: chat %s %s\n", tool, usage)
	return 2
}

// progressBar is a bar on stderr when it is a terminal (nil otherwise),
// and the function that clears it.
func progressBar(verb, label string) (func(done, total int64), func()) {
	if !term.IsTerminal(os.Stderr.Fd()) {
		return nil, func() {}
	}
	width, _, _ := term.GetSize(os.Stderr.Fd())
	bar := ui.NewProgress(os.Stderr, width, verb, label)
	return bar.Update, bar.Done
}

// writeAtomic writes a file through a temporary one renamed into place, so
// a failed write leaves no half file behind. The file gets the permissions
// os.Create gives (0666 less the umask), as llama-quantize's output does:
// os.CreateTemp's 0600 made a converted model unreadable to any other user
// (a server running as its own user, say). Ctrl+C or SIGTERM while it
// writes removes the temporary file, then ends the process as the signal
// would have (the default action skips deferred calls).
func writeAtomic(path string, write func(w io.Writer) error) error {
	if err := regular.Output(path); err != nil {
		return err
	}
	var tmp *os.File
	var err error
	for range 100 {
		name := filepath.Join(filepath.Dir(path), fmt.Sprintf(".%s.%d", filepath.Base(path), rand.Uint32()))
		tmp, err = os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if !errors.Is(err, fs.ErrExist) {
			break
		}
	}
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	sig := make(chan os.Signal, 1)
	for _, s := range []os.Signal{os.Interrupt, syscall.SIGTERM} {
		if !signal.Ignored(s) { // nohup, or a shell's background job: write on
			signal.Notify(sig, s)
		}
	}
	written := make(chan struct{})
	defer func() { signal.Stop(sig); close(written) }()
	go func() {
		select {
		case s := <-sig:
			os.Remove(tmp.Name())
			signal.Stop(sig)
			if p, err := os.FindProcess(os.Getpid()); err == nil {
				p.Signal(s)
			}
		case <-written:
		}
	}()
	if err := write(tmp); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// checkOutput refuses, before any work, an output path writeAtomic would
// refuse, or one naming the input file (what).
func checkOutput(in, out, what string) error {
	if err := regular.Output(out); err != nil {
		return err
	}
	if st, err := os.Stat(filepath.Dir(out)); err != nil || !st.IsDir() { // else found at the end, after a prune's minutes
		return fmt.Errorf("the output's folder %s is not there", filepath.Dir(out))
	}
	si, err1 := os.Stat(in)
	so, err2 := os.Stat(out)
	if err1 == nil && err2 == nil && os.SameFile(si, so) {
		return fmt.Errorf("the output would overwrite the %s", what)
	}
	return nil
}

// checkReplace refuses, before any work, an existing output that is not
// GGUF: OUT is the last argument, and a swapped or mistyped order (chat
// convert out.gguf model.pt) would replace the user's checkpoint. Called
// after checkOutput, whose "would overwrite the input" says more.
func checkReplace(out string) error {
	if st, err := os.Stat(out); err == nil && st.Size() > 0 && !isGGUF(out) {
		return fmt.Errorf("the output %s exists and is not a GGUF file: not overwriting it (remove it first, or name another output)", out)
	}
	return nil
}

// openModelAs opens the model at path (the embedded one for "") and
// re-encodes it in weight format ("" or its own format: as loaded).
func openModelAs(path, format string) (models.Model, error) {
	m, err := openModel(path)
	if err != nil || format == "" || format == m.Info().Quant {
		return m, err
	}
	q, ok := m.(models.Quantizer)
	if !ok {
		return nil, fmt.Errorf("%s cannot be quantized in memory", m.Info().Name)
	}
	return q.Quantize(format)
}

// loadAdapters reads the --lora adapters.
func loadAdapters(specs []string) ([]*lora.Adapter, error) {
	var out []*lora.Adapter
	for _, spec := range specs {
		a, err := lora.Load(spec)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, nil
}

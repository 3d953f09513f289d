package main

import (
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/signal"
	"syscall"

	"chat/config/settings"
	"chat/engine"
	"chat/engine/speculative"
	"chat/models/kernels"
	"chat/session/serve"
)

// maxParallel bounds --parallel: replies decoded together in one step.
const maxParallel = 1024

// serveCmd is `chat serve`: the model behind OpenAI- and ollama-compatible
// HTTP APIs, many requests batched continuously.
func serveCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chat serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	model := fs.String("model", "", "model file (default: the embedded model; also the first argument)")
	addr := fs.String("addr", "127.0.0.1:8080", "listen on HOST:PORT (beyond loopback only with --api-key)")
	host := fs.String("host", "", "llama-server's spelling: the HOST of --addr")
	port := fs.String("port", "", "llama-server's spelling: the PORT of --addr")
	parallel := fs.Int("parallel", 8, "requests decoded together (vLLM's max_num_seqs)")
	fs.Var(fs.Lookup("parallel").Value, "np", "llama-server's spelling of --parallel")
	queue := fs.Int("queue", 256, "requests that may wait for a place; more get 503 (0: none wait)")
	batchTokens := fs.Int("batch-tokens", 32, "tokens in one forward pass: decode tokens first, then prompt chunks of at most a quarter of it (vLLM's max_num_batched_tokens); 0: no bound")
	kvMem := fs.Int("kv-mem", 0, "KV pool in MB (default 256, or 16 windows if less)")
	apiKey := fs.String("api-key", "", "require Authorization: Bearer KEY on /v1 and /api")
	name := fs.String("name", "", "model id clients ask for (default: the model's name as /v1/models lists it: a GGUF file's general.name, else the file name without extension)")
	threads := fs.Int("threads", 0, "compute threads (default: all cores)")
	ctxSize := fs.Int("ctx-size", 0, "cap the context window at N tokens")
	quant := fs.String("quant", "", "weight format to serve in (int8, q8_0, ...; from float weights)")
	spec := fs.String("spec", "off", "speculative decoding for one request at a time: off, ngram, lookup")
	// The KV formats are the app's settings (their flag, default and help),
	// as llama-server's --cache-type-k/-v.
	kvK, kvV := settingFlag(fs, "kv_quant_k"), settingFlag(fs, "kv_quant_v")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return flagExit(stderr, "serve", err)
	}
	switch {
	case len(pos) > 1 || len(pos) == 1 && *model != "":
		fmt.Fprintln(stderr, "chat serve: give one model")
		return 2
	case len(pos) == 1:
		*model = pos[0]
	}
	switch {
	case *parallel < 1 || *queue < 0 || *batchTokens < 0 || *kvMem < 0 || *threads < 0 || *ctxSize < 0:
		fmt.Fprintln(stderr, "chat serve: --parallel must be at least 1, and --queue, --batch-tokens, --kv-mem, --threads, --ctx-size not negative")
		return 2
	case *parallel > maxParallel:
		// The pool holds a block for each, made resident at start:
		// --parallel 1000000 took 6 GB for stories260K before it listened.
		fmt.Fprintf(stderr, "chat serve: --parallel is at most %d, got %d\n", maxParallel, *parallel)
		return 2
	}
	if *host != "" || *port != "" {
		h, p, _ := net.SplitHostPort(*addr)
		*addr = net.JoinHostPort(cmp.Or(*host, h), cmp.Or(*port, p))
	}
	if err := serve.CheckAddr(*addr, *apiKey); err != nil {
		fmt.Fprintln(stderr, "chat serve:", err)
		return 2
	}
	method, err := speculative.ParseMethod(*spec)
	if err != nil || method == speculative.Draft {
		fmt.Fprintf(stderr, "chat serve: --spec %s: want off, ngram or lookup\n", *spec)
		return 2
	}
	if *threads > 0 {
		kernels.SetThreads(*threads)
	}
	m, err := openModelAs(*model, *quant)
	if err != nil {
		fmt.Fprintln(stderr, "chat serve:", err)
		return 1
	}
	if note := ctxCutNote("--ctx-size", *ctxSize, m.Info()); note != "" {
		fmt.Fprintln(stderr, "chat serve:", note)
	}
	var size int64
	if fi, err := os.Stat(*model); err == nil {
		size = fi.Size()
	}
	s, err := serve.New(m, serve.Options{Name: *name, APIKey: *apiKey, Size: size, File: *model, Engine: engine.Options{
		MaxSeqs: *parallel, MaxWaiting: *queue, MaxBatchTokens: *batchTokens, KVMem: int64(*kvMem) << 20, Context: *ctxSize,
		KVQuantK: *kvK, KVQuantV: *kvV}})
	if err != nil {
		fmt.Fprintln(stderr, "chat serve:", err)
		return 1
	}
	if method != speculative.Off {
		if err := s.Engine().SetSpeculation(speculative.Config{Method: method}); err != nil {
			fmt.Fprintln(stderr, "chat serve:", err)
			return 1
		}
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	err = s.ListenAndServe(ctx, *addr, func(a net.Addr) {
		fmt.Fprintf(stderr, "chat serve: %s on http://%s (OpenAI /v1, ollama /api, /metrics) · %d parallel, %d queued, %d tokens per step\n",
			s.Name(), a, *parallel, *queue, *batchTokens)
	})
	if errors.Is(err, syscall.EADDRINUSE) {
		// "listen tcp 127.0.0.1:8080: bind: address already in use", and
		// 8080 is llama-server's port too.
		fmt.Fprintf(stderr, "chat serve: %s is in use: another server listens there (stop it, or give another --port N)\n", *addr)
		return 1
	}
	if err != nil {
		fmt.Fprintln(stderr, "chat serve:", err)
		return 1
	}
	return 0
}

// settingFlag is a string flag of the settings schema's setting name: its
// flag name, default and help, and its check (Setting.Parse), so a value
// it refuses is a flag error in the words /set and the config file use.
func settingFlag(fs *flag.FlagSet, name string) *string {
	st := settings.Lookup(name)
	v := &settingValue{st, st.DefaultText("")}
	fs.Var(v, st.FlagName(), st.Help)
	return &v.text
}

// settingValue is a flag.Value checked by its setting.
type settingValue struct {
	st   *settings.Setting
	text string
}

func (v *settingValue) String() string { return v.text }
func (v *settingValue) Set(text string) error {
	var vals settings.Values
	if err := v.st.SetText(&vals, text); err != nil {
		return err
	}
	v.text = v.st.Format(&vals) // as the schema reads it: "F16" is f16
	return nil
}

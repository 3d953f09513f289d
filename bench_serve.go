package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"chat/engine/bench"
	"chat/session/remote"
)

// Bounds of chat bench serve's load.
const (
	maxBenchClients = 4096
	maxLongPrompt   = 8 << 20
)

// benchServeCmd is `chat bench serve`: C clients stream R chat completions
// of N tokens from a server and one JSON line sums them up.
func benchServeCmd(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("chat bench serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	url := fs.String("url", "http://127.0.0.1:8080", "the server (its root or its /v1)")
	key := fs.String("api-key", "", "Bearer key for the server")
	model := fs.String("model", "", "model id to ask for (default: the server's first)")
	conc := fs.Int("concurrency", 1, "clients streaming at once")
	reqs := fs.Int("requests", 0, "requests in all (default: 4 per client)")
	maxTok := fs.Int("max-tokens", 64, "tokens per reply (greedy, ignore_eos)")
	prompt := fs.String("prompt", "", "the clients' message (default: a short story opening)")
	long := fs.Int("long-prompt-chars", 0, "one more client keeps sending a prompt of this many characters of the bench text, each time a new one (numbered, so no prefix cache spares its prefill); its requests are not counted")
	if err := parseOneArg(fs, args, "url", url); err != nil {
		return flagExit(stderr, "bench serve", err)
	}
	if *conc < 1 || *reqs < 0 || *maxTok < 1 || *long < 0 {
		fmt.Fprintln(stderr, "chat bench serve: --concurrency and --max-tokens must be at least 1, --requests and --long-prompt-chars not negative")
		return 2
	}
	// A client is a goroutine and a connection, and the long prompt is built
	// whole: --concurrency 100000000 or --long-prompt-chars 1e10 ran the
	// machine out of memory before the first request.
	if *conc > maxBenchClients || *long > maxLongPrompt {
		fmt.Fprintf(stderr, "chat bench serve: --concurrency is at most %d, --long-prompt-chars at most %d (the request body chat serve takes)\n", maxBenchClients, maxLongPrompt)
		return 2
	}
	if *reqs == 0 {
		*reqs = 4 * *conc
	}
	c, err := remote.New(*url, *key)
	if err != nil {
		fmt.Fprintln(stderr, "chat bench serve:", err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if *model == "" {
		ms, err := c.Models(ctx)
		if err != nil {
			fmt.Fprintf(stderr, "chat bench serve: %s: %v\n", c.URL(), err)
			return 1
		}
		if len(ms) == 0 {
			fmt.Fprintf(stderr, "chat bench serve: %s offers no model (give --model)\n", c.URL())
			return 1
		}
		*model = ms[0].ID
	}
	o := remote.BenchOptions{Model: *model, Concurrency: *conc, Requests: *reqs, MaxTokens: *maxTok, Prompt: *prompt}
	if *long > 0 {
		text := bench.PromptText()
		for len(text) < *long {
			text += " " + text
		}
		o.LongPrompt = text[:*long]
	}
	r := c.Bench(ctx, o)
	b, _ := json.Marshal(r)
	fmt.Fprintln(stdout, string(b))
	if r.Completed == 0 {
		return 1
	}
	return 0
}

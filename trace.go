package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strings"
	"sync"

	"chat/engine"
	"chat/engine/sampler"
	"chat/models"
	"chat/models/regular"
	"chat/session/termtext"
)

// --trace FILE: one JSON line per step of a headless reply (a token, or a
// speculative round), from the engine's records (engine/observe.go): the
// candidates before and after the sampler chain, the ids each stage left,
// the drawn id, the guesses accepted and rejected, the KV blocks. The
// README documents the format.

// traceFile writes the lines; its first error is kept for close.
type traceFile struct {
	f   *os.File
	w   *bufio.Writer
	tok models.Tokenizer
	n   int

	mu  sync.Mutex
	err error
}

func openTrace(path string, tok models.Tokenizer) (*traceFile, error) {
	f, err := regular.Create(path)
	if err != nil {
		return nil, fmt.Errorf("--trace: %w", err)
	}
	return &traceFile{f: f, w: bufio.NewWriter(f), tok: tok}, nil
}

type traceCand struct {
	ID      int     `json:"id"`
	Token   string  `json:"token"`
	PBefore float64 `json:"p_before"`
	PAfter  float64 `json:"p_after"`
}

type traceStage struct {
	Stage string `json:"stage"`
	Left  int    `json:"left"`
}

type traceLine struct {
	Step      int            `json:"step"`
	Token     int            `json:"token"`
	Pos       int            `json:"pos"`
	Drawn     traceCand      `json:"drawn"`
	IDs       []int          `json:"ids"`
	Entropy   map[string]any `json:"entropy_bits"`
	Survivors []traceStage   `json:"survivors"`
	Before    []traceCand    `json:"before"`
	After     []traceCand    `json:"after"`
	Sampler   map[string]any `json:"sampler"`
	Round     map[string]any `json:"round,omitempty"`
	Blocks    map[string]int `json:"blocks"`
}

// step is the engine's OnStep: it runs in the reply's goroutine.
func (t *traceFile) step(rec *engine.StepRecord) {
	t.n++
	cand := func(c engine.Candidate) traceCand {
		return traceCand{ID: c.ID, Token: strings.ToValidUTF8(string(t.tok.TokenBytes(c.ID)), "\uFFFD"), PBefore: c.Before, PAfter: c.After}
	}
	l := traceLine{Step: t.n, Token: rec.Token, Pos: rec.Pos, Drawn: cand(rec.Drawn), IDs: rec.Taken[:rec.NTaken],
		Entropy:   map[string]any{"before": engine.JSONFinite(rec.EntropyBefore), "after": engine.JSONFinite(rec.EntropyAfter)},
		Survivors: []traceStage{{"vocab", rec.Stages.Vocab}},
		Before:    []traceCand{}, After: []traceCand{},
		Blocks: map[string]int{"seq": rec.SeqBlocks, "shared": rec.SharedBlocks, "new": rec.NewBlocks,
			"pool_used": rec.PoolUsed, "pool": rec.PoolBlocks}}
	for i, st := range sampler.Stages() {
		if rec.Stages.Applied[i] {
			l.Survivors = append(l.Survivors, traceStage{st.Name, rec.Stages.Left[i]})
		}
	}
	for _, c := range rec.Before[:rec.NBefore] {
		l.Before = append(l.Before, cand(c))
	}
	for _, c := range rec.After[:rec.NAfter] {
		l.After = append(l.After, cand(c))
	}
	p := rec.Params
	l.Sampler = map[string]any{"greedy": p.Greedy, "temperature": p.Temperature, "top_k": p.TopK, "top_p": p.TopP, "min_p": p.MinP}
	if rec.Round {
		g := rec.Guesses[:rec.NGuesses]
		l.Round = map[string]any{"drafted": g, "accepted": rec.Accepted, "rejected": g[rec.Accepted:]}
	}
	b, err := json.Marshal(l)
	if err == nil {
		_, err = fmt.Fprintln(t.w, termtext.JSON(string(b)))
	}
	if err != nil {
		t.mu.Lock()
		if t.err == nil { // the writer repeats its error for every line after
			t.err = err
		}
		t.mu.Unlock()
	}
}

// close flushes the file and reports the first error.
func (t *traceFile) close() error {
	err := t.w.Flush()
	if cerr := t.f.Close(); err == nil {
		err = cerr
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.err != nil {
		err = t.err
	}
	if err != nil {
		return fmt.Errorf("--trace: %w", err)
	}
	return nil
}

type jsonLogprob struct {
	ID      int           `json:"id"`
	Token   string        `json:"token"`
	Logprob float64       `json:"logprob"`
	Top     []jsonLogprob `json:"top_logprobs,omitempty"`
}

// logprobsJSON is --json's "logprobs" with --top-logprobs N.
func logprobsJSON(lps []engine.TokenLogprob, tok models.Tokenizer) []jsonLogprob {
	text := func(id int) string { return strings.ToValidUTF8(string(tok.TokenBytes(id)), "\uFFFD") }
	out := make([]jsonLogprob, len(lps))
	for i, lp := range lps {
		out[i] = jsonLogprob{ID: lp.ID, Token: text(lp.ID), Logprob: engine.JSONFinite(lp.Logprob), Top: []jsonLogprob{}}
		for _, t := range lp.Top {
			out[i].Top = append(out[i].Top, jsonLogprob{ID: t.ID, Token: text(t.ID), Logprob: engine.JSONFinite(t.Logprob)})
		}
	}
	return out
}

// Package bench measures prefill and decode speed the way
// ../shared/bench/llamacpp_bench.mjs measures llama.cpp, so that the two JSON
// lines can be divided by ../shared/bench/compare.sh: P prompt tokens (BOS +
// text tokens) in one batched forward pass, then N single-token greedy steps,
// after one untimed warm-up of the same shape.
package bench

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"chat/models"
)

// Fallback is the prompt text when no file is given or found (the same text
// as the llama.cpp script's fallback).
const Fallback = "Once upon a time, there was a little girl named Lily. She loved to play outside in the park. " +
	"One day, she saw a big, red ball. She wanted to play with it, but it was too high. "

// Result is the JSON line of ../shared/bench/README.md.
type Result struct {
	Engine       string  `json:"engine"`
	Model        string  `json:"model"`
	Threads      int     `json:"threads"`
	PromptTokens int     `json:"prompt_tokens"`
	GenTokens    int     `json:"gen_tokens"`
	PPTokS       float64 `json:"pp_tok_s"`
	TGTokS       float64 `json:"tg_tok_s"`
	Timer        string  `json:"timer"`
	Quant        string  `json:"quant"`
	WeightBytes  int64   `json:"weight_bytes"`
	// BandwidthGBs is weight bytes read per decoded token × tok/s: compare it
	// with the machine's measured read bandwidth.
	BandwidthGBs float64 `json:"weight_gb_s"`
}

// PromptText reads file, or finds the shared TinyStories text, or falls back.
func PromptText(file string) (string, error) {
	if file != "" {
		b, err := os.ReadFile(file)
		return string(b), err
	}
	var dirs []string
	if d := os.Getenv("CHAT_SHARED_MODELS"); d != "" {
		dirs = append(dirs, d)
	}
	dirs = append(dirs, filepath.Join("..", "shared", "models"))
	for _, d := range dirs {
		if b, err := os.ReadFile(filepath.Join(d, "text", "TinyStories-valid-head.txt")); err == nil {
			return string(b), nil
		}
	}
	return Fallback, nil
}

// Run measures m with promptTokens tokens of text and genTokens decode steps.
func Run(m models.Model, text string, threads, promptTokens, genTokens int) (Result, error) {
	info := m.Info()
	if promptTokens < 1 || genTokens < 1 {
		return Result{}, fmt.Errorf("bench: prompt and gen tokens must be positive")
	}
	st := m.NewState()
	if promptTokens+genTokens > st.Cap() {
		return Result{}, fmt.Errorf("bench: %d prompt + %d generated tokens exceed the model's %d-token context", promptTokens, genTokens, st.Cap())
	}
	toks := promptTokens1(m.Tokenizer(), text, promptTokens+1)
	pp, first := toks[:promptTokens], toks[promptTokens]

	run := func(np, ng int) (time.Duration, time.Duration, int, error) {
		st.Truncate(0)
		t0 := time.Now()
		if _, err := st.Forward(pp[:np], 1); err != nil {
			return 0, 0, 0, err
		}
		ppDur := time.Since(t0)
		tok := first
		one := []int{0}
		t1 := time.Now()
		for i := 0; i < ng; i++ {
			one[0] = tok
			logits, err := st.Forward(one, 1)
			if err != nil {
				return 0, 0, 0, err
			}
			tok = argmax(logits)
		}
		return ppDur, time.Since(t1), ng, nil
	}
	if _, _, _, err := run(min(promptTokens, 512), min(8, genTokens)); err != nil {
		return Result{}, err
	}
	ppDur, tgDur, n, err := run(promptTokens, genTokens)
	if err != nil {
		return Result{}, err
	}
	r := Result{
		Engine: "chat", Model: info.Name, Threads: threads,
		PromptTokens: promptTokens, GenTokens: n,
		PPTokS: round1(float64(promptTokens) / ppDur.Seconds()), TGTokS: round1(float64(n) / tgDur.Seconds()),
		Timer: "go_wall", Quant: info.Quant, WeightBytes: info.WeightBytes,
	}
	r.BandwidthGBs = round1(float64(info.WeightBytes) * r.TGTokS / 1e9)
	return r, nil
}

// promptTokens1 is BOS + the text's tokens, the text repeated until there are n.
func promptTokens1(tok models.Tokenizer, text string, n int) []int {
	ids := tok.Encode(text)
	if len(ids) == 0 {
		ids = tok.Encode(Fallback)
	}
	var out []int
	if b := tok.BOS(); b >= 0 {
		out = append(out, b)
	}
	for len(out) < n {
		out = append(out, ids[:min(len(ids), n-len(out))]...)
	}
	return out
}

func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

func round1(x float64) float64 { return float64(int64(x*10+0.5)) / 10 }

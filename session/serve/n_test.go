package serve

import (
	"context"
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"chat/engine"
	"chat/session"
)

// TestN: "n" replies are n sequences of the batch: greedy ones all equal
// the lone reply; sampled ones with a seed are the same n again, and their
// stream spells the same n texts choice by choice; usage counts the prompt
// once and every reply's tokens.
func TestN(t *testing.T) {
	_, _, c := start(t, Options{Engine: engine.Options{MaxSeqs: 8, MaxWaiting: 8}})
	ctx := context.Background()
	one, err := c.Chat.Completions.New(ctx, greedyChat("The cat sat", 20))
	if err != nil {
		t.Fatal(err)
	}
	p := greedyChat("The cat sat", 20)
	p.N = openai.Int(3)
	r, err := c.Chat.Completions.New(ctx, p)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Choices) != 3 || r.Usage.PromptTokens != one.Usage.PromptTokens || r.Usage.CompletionTokens != 3*one.Usage.CompletionTokens {
		t.Fatalf("greedy n=3: %d choices, usage %+v (alone %+v)", len(r.Choices), r.Usage, one.Usage)
	}
	for i, ch := range r.Choices {
		if ch.Index != int64(i) || ch.Message.Content != one.Choices[0].Message.Content {
			t.Errorf("greedy choice %d (index %d): %q, alone %q", i, ch.Index, ch.Message.Content, one.Choices[0].Message.Content)
		}
	}

	sampled := openai.ChatCompletionNewParams{Model: "stories260K", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("The cat sat")},
		Temperature: openai.Float(1), MaxTokens: openai.Int(24), Seed: openai.Int(11), N: openai.Int(4)}
	texts := func() []string {
		r, err := c.Chat.Completions.New(ctx, sampled)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, ch := range r.Choices {
			out = append(out, ch.Message.Content)
		}
		return out
	}
	a, b := texts(), texts()
	if len(a) != 4 || !slices.Equal(a, b) || a[0] == a[1] && a[1] == a[2] && a[2] == a[3] {
		t.Fatalf("sampled n=4 with a seed: %q, again %q", a, b)
	}
	s := c.Chat.Completions.NewStreaming(ctx, sampled)
	streamed := make([]strings.Builder, 4)
	finished := 0
	for s.Next() {
		for _, ch := range s.Current().Choices {
			streamed[ch.Index].WriteString(ch.Delta.Content)
			if ch.FinishReason != "" {
				finished++
			}
		}
	}
	if err := s.Err(); err != nil {
		t.Fatal(err)
	}
	for i := range streamed {
		if streamed[i].String() != a[i] {
			t.Errorf("streamed choice %d: %q, whole %q", i, streamed[i].String(), a[i])
		}
	}
	if finished != 4 {
		t.Errorf("%d choices finished in the stream, want 4", finished)
	}
}

// TestBestOf: best_of samples that many completions (the seeds of n =
// best_of) and returns the n whose tokens are likeliest, best first.
func TestBestOf(t *testing.T) {
	_, _, c := start(t, Options{Engine: engine.Options{MaxSeqs: 8, MaxWaiting: 8}})
	ctx := context.Background()
	params := func(n, bestOf int64) openai.CompletionNewParams {
		p := openai.CompletionNewParams{Model: "stories260K", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String("Once upon a time")},
			MaxTokens: openai.Int(16), Temperature: openai.Float(1), Seed: openai.Int(5), N: openai.Int(n), Logprobs: openai.Int(0)}
		if bestOf > 0 {
			p.BestOf = openai.Int(bestOf)
		}
		return p
	}
	all, err := c.Completions.New(ctx, params(4, 0))
	if err != nil {
		t.Fatal(err)
	}
	type scored struct {
		text string
		sum  float64
	}
	var want []scored
	for _, ch := range all.Choices {
		sum := 0.0
		for _, l := range ch.Logprobs.TokenLogprobs {
			sum += l
		}
		want = append(want, scored{ch.Text, sum})
	}
	slices.SortStableFunc(want, func(a, b scored) int {
		if a.sum > b.sum {
			return -1
		}
		if a.sum < b.sum {
			return 1
		}
		return 0
	})
	r, err := c.Completions.New(ctx, params(2, 4))
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Choices) != 2 || r.Choices[0].Text != want[0].text || r.Choices[1].Text != want[1].text || r.Usage.CompletionTokens != all.Usage.CompletionTokens {
		t.Errorf("best_of 4, n 2: %+v (usage %+v); the four by likelihood %+v (usage %+v)", r.Choices, r.Usage, want, all.Usage)
	}
	for _, bad := range []openai.CompletionNewParams{params(0, 0), params(17, 0), params(3, 2)} {
		var ae *openai.Error
		if _, err := c.Completions.New(ctx, bad); !errors.As(err, &ae) || ae.StatusCode != http.StatusBadRequest {
			t.Errorf("n %v best_of %v: %v", bad.N, bad.BestOf, err)
		}
	}
	st := c.Completions.NewStreaming(ctx, params(1, 3))
	for st.Next() {
	}
	var ae *openai.Error
	if err := st.Err(); !errors.As(err, &ae) || ae.StatusCode != http.StatusBadRequest {
		t.Errorf("best_of with stream: %v", err)
	}
}

// TestBeamSearch: vLLM's use_beam_search through the server: width 1 is the
// greedy completion, and best_of 4 with n 2 gives the engine's two best
// hypotheses for the same prompt ids; stream and stop strings are refused.
func TestBeamSearch(t *testing.T) {
	srv, _, c := start(t, Options{Engine: engine.Options{MaxSeqs: 8, MaxWaiting: 8}})
	ctx := context.Background()
	prompt := "Once upon a time"
	params := func(n int64) openai.CompletionNewParams {
		return openai.CompletionNewParams{Model: "stories260K", Prompt: openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)},
			MaxTokens: openai.Int(16), Temperature: openai.Float(0), N: openai.Int(n)}
	}
	greedy, err := c.Completions.New(ctx, params(1))
	if err != nil {
		t.Fatal(err)
	}
	b1, err := c.Completions.New(ctx, params(1), option.WithJSONSet("use_beam_search", true))
	if err != nil {
		t.Fatal(err)
	}
	if b1.Choices[0].Text != greedy.Choices[0].Text {
		t.Errorf("beam width 1: %q, greedy %q", b1.Choices[0].Text, greedy.Choices[0].Text)
	}
	p := params(2)
	p.BestOf = openai.Int(4)
	b4, err := c.Completions.New(ctx, p, option.WithJSONSet("use_beam_search", true), option.WithJSONSet("length_penalty", 0))
	if err != nil {
		t.Fatal(err)
	}
	want, err := srv.e.Beam(engine.BeamRequest{Prompt: session.RawIDs(srv.m.Tokenizer(), prompt), MaxTokens: 16, Width: 4,
		StopIDs: session.RawStops(srv.m)})
	if err != nil {
		t.Fatal(err)
	}
	if len(b4.Choices) != 2 || len(want.Hypotheses) < 2 {
		t.Fatalf("best_of 4, n 2: %d choices; the engine finished %d", len(b4.Choices), len(want.Hypotheses))
	}
	for i, ch := range b4.Choices {
		if w := srv.m.Tokenizer().Decode(want.Hypotheses[i].IDs); ch.Text != w {
			t.Errorf("beam choice %d: %q, the engine's hypothesis %q", i, ch.Text, w)
		}
	}
	s := c.Chat.Completions.NewStreaming(ctx, greedyChat("The cat sat", 8), option.WithJSONSet("use_beam_search", true))
	for s.Next() {
	}
	var ae *openai.Error
	if err := s.Err(); !errors.As(err, &ae) || ae.StatusCode != http.StatusBadRequest {
		t.Errorf("use_beam_search with stream: %v", err)
	}
	stop := greedyChat("The cat sat", 8)
	stop.Stop = openai.ChatCompletionNewParamsStopUnion{OfString: openai.String("x")}
	if _, err := c.Chat.Completions.New(ctx, stop, option.WithJSONSet("use_beam_search", true)); !errors.As(err, &ae) || ae.StatusCode != http.StatusBadRequest {
		t.Errorf("use_beam_search with a stop string: %v", err)
	}
}

package remote

import (
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"
)

// Bench drives a server as `chat bench serve` does: Concurrency clients
// stream Requests chat completions of MaxTokens tokens between them
// (greedy, ignore_eos, so every reply is MaxTokens long on servers that
// honour it), and the run is summed up as aggregate tokens per second,
// time to first token and inter-token latency (the gap between two
// streamed pieces) percentiles, and errors. With LongPrompt, one more
// client keeps sending that text as its message (for replies of longTokens)
// for the whole run, as a load of long prefills; each request begins with
// its own number, so that a prefix cache cannot spare the prefill after
// the first. Its requests are not in the figures.
type BenchOptions struct {
	Model       string
	Concurrency int
	Requests    int
	MaxTokens   int
	Prompt      string // the clients' message ("" = a short story opening)
	LongPrompt  string
}

// longTokens is the reply budget of the long-prompt client's requests:
// they are there for their prefill.
const longTokens = 8

// BenchResult is the JSON line.
type BenchResult struct {
	URL              string  `json:"url"`
	Model            string  `json:"model"`
	Concurrency      int     `json:"concurrency"`
	Requests         int     `json:"requests"`
	MaxTokens        int     `json:"max_tokens"`
	Completed        int     `json:"completed"`
	Errors           int     `json:"errors"`
	FirstError       string  `json:"first_error,omitempty"`
	Tokens           int     `json:"tokens"`
	Seconds          float64 `json:"seconds"`
	TokS             float64 `json:"tok_s"`
	TTFTP50          float64 `json:"ttft_ms_p50"`
	TTFTP99          float64 `json:"ttft_ms_p99"`
	ITLP50           float64 `json:"itl_ms_p50"`
	ITLP99           float64 `json:"itl_ms_p99"`
	LongRequests     int     `json:"long_requests,omitempty"`
	LongPromptTokens int     `json:"long_prompt_tokens,omitempty"`
}

// Bench runs the benchmark.
func (c *Client) Bench(ctx context.Context, o BenchOptions) BenchResult {
	res := BenchResult{URL: c.base, Model: o.Model, Concurrency: o.Concurrency, Requests: o.Requests, MaxTokens: o.MaxTokens}
	if o.Prompt == "" {
		o.Prompt = "Once upon a time, there was a little girl who"
	}
	var (
		mu       sync.Mutex
		ttft     []float64
		itl      []float64
		next     atomic.Int64
		wg       sync.WaitGroup
		longDone = make(chan struct{})
	)
	fail := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		res.Errors++
		if res.FirstError == "" {
			res.FirstError = err.Error()
		}
	}
	req := func(msg string, n int) Request {
		return Request{Model: o.Model, Messages: []Message{{Role: "user", Content: msg}}, MaxTokens: n, Greedy: true, IgnoreEOS: true}
	}
	lctx, stopLong := context.WithCancel(ctx)
	if o.LongPrompt != "" {
		go func() {
			defer close(longDone)
			for i := 1; lctx.Err() == nil; i++ {
				s, err := c.Stream(lctx, req(fmt.Sprintf("%d. %s", i, o.LongPrompt), longTokens))
				if err != nil {
					if lctx.Err() == nil {
						fail(err)
						time.Sleep(100 * time.Millisecond)
					}
					continue
				}
				for s.Next() {
					if u := s.Event().Usage; u != nil {
						mu.Lock()
						res.LongRequests++
						res.LongPromptTokens = u.PromptTokens
						mu.Unlock()
					}
				}
				s.Close()
			}
		}()
		time.Sleep(200 * time.Millisecond) // its first prefill is under way
	} else {
		close(longDone)
	}
	start := time.Now()
	for range max(o.Concurrency, 1) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(o.Requests) && ctx.Err() == nil {
				s, err := c.Stream(ctx, req(o.Prompt, o.MaxTokens))
				if err != nil {
					fail(err)
					continue
				}
				var first, last time.Time
				var gaps []float64
				pieces, tokens := 0, -1
				for s.Next() {
					ev := s.Event()
					now := time.Now()
					if ev.Text != "" {
						if pieces == 0 {
							first = now
						} else {
							gaps = append(gaps, float64(now.Sub(last).Microseconds())/1000)
						}
						pieces++
						last = now
					}
					if ev.Usage != nil {
						tokens = ev.Usage.CompletionTokens
					}
				}
				err = s.Err()
				s.Close()
				if err != nil {
					fail(err)
					continue
				}
				if tokens < 0 {
					tokens = pieces
				}
				mu.Lock()
				res.Completed++
				res.Tokens += tokens
				if pieces > 0 {
					ttft = append(ttft, float64(first.Sub(s.Sent).Microseconds())/1000)
				}
				itl = append(itl, gaps...)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	res.Seconds = time.Since(start).Seconds()
	stopLong()
	<-longDone
	if res.Seconds > 0 {
		res.TokS = float64(res.Tokens) / res.Seconds
	}
	res.TTFTP50, res.TTFTP99 = percentile(ttft, 50), percentile(ttft, 99)
	res.ITLP50, res.ITLP99 = percentile(itl, 50), percentile(itl, 99)
	return res
}

// percentile is the nearest-rank p-th percentile (0 for no values).
func percentile(v []float64, p float64) float64 {
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	i := int(math.Ceil(p/100*float64(len(v)))) - 1
	return v[max(0, min(i, len(v)-1))]
}

package remote

import (
	"math"
	"slices"
	"strings"
	"testing"
)

// Texts written after the servers' documented metric names and types.

// vLLM V1 (docs.vllm.ai, Production Metrics): counters carry _total.
const vllmText = `# HELP vllm:num_requests_running Number of requests in model execution batches.
# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 3.0
# HELP vllm:num_requests_waiting Number of requests waiting to be processed.
# TYPE vllm:num_requests_waiting gauge
vllm:num_requests_waiting{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1.0
# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.42
# HELP vllm:prefix_cache_queries_total Prefix cache queries, in terms of number of queried tokens.
# TYPE vllm:prefix_cache_queries_total counter
vllm:prefix_cache_queries_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1000.0
# HELP vllm:prefix_cache_hits_total Prefix cache hits, in terms of number of cached tokens.
# TYPE vllm:prefix_cache_hits_total counter
vllm:prefix_cache_hits_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 630.0
# HELP vllm:num_preemptions_total Cumulative number of preemption from the engine.
# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 2.0
# HELP vllm:prompt_tokens_total Number of prefill tokens processed.
# TYPE vllm:prompt_tokens_total counter
vllm:prompt_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1000.0
# HELP vllm:generation_tokens_total Number of generation tokens processed.
# TYPE vllm:generation_tokens_total counter
vllm:generation_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 5000.0
# HELP vllm:spec_decode_num_draft_tokens_total Number of draft tokens.
# TYPE vllm:spec_decode_num_draft_tokens_total counter
vllm:spec_decode_num_draft_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 400.0
# HELP vllm:spec_decode_num_accepted_tokens_total Number of accepted tokens.
# TYPE vllm:spec_decode_num_accepted_tokens_total counter
vllm:spec_decode_num_accepted_tokens_total{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 300.0
# HELP vllm:time_to_first_token_seconds Histogram of time to first token in seconds.
# TYPE vllm:time_to_first_token_seconds histogram
vllm:time_to_first_token_seconds_bucket{engine="0",le="0.001",model_name="meta-llama/Llama-3.1-8B-Instruct"} 0.0
vllm:time_to_first_token_seconds_bucket{engine="0",le="+Inf",model_name="meta-llama/Llama-3.1-8B-Instruct"} 12.0
vllm:time_to_first_token_seconds_count{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 12.0
vllm:time_to_first_token_seconds_sum{engine="0",model_name="meta-llama/Llama-3.1-8B-Instruct"} 1.3
`

// vLLM V0: the older gauge names, two data-parallel engines.
const vllmV0Text = `# TYPE vllm:num_requests_running gauge
vllm:num_requests_running{model_name="m"} 2.0
vllm:num_requests_running{model_name="m2"} 1.0
# TYPE vllm:gpu_cache_usage_perc gauge
vllm:gpu_cache_usage_perc{model_name="m"} 0.25
vllm:gpu_cache_usage_perc{model_name="m2"} 0.5
# TYPE vllm:gpu_prefix_cache_hit_rate gauge
vllm:gpu_prefix_cache_hit_rate{model_name="m"} 0.1
# TYPE vllm:spec_decode_draft_acceptance_rate gauge
vllm:spec_decode_draft_acceptance_rate{model_name="m"} 0.6
`

// llama-server --metrics (tools/server/README.md), a build that still
// reports the KV cache.
const llamaOldText = `# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.
# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 6886
# HELP llamacpp:prompt_seconds_total Prompt process time
# TYPE llamacpp:prompt_seconds_total counter
llamacpp:prompt_seconds_total 2903.63
# HELP llamacpp:tokens_predicted_total Number of generation tokens processed.
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total 3469
# HELP llamacpp:prompt_tokens_seconds Average prompt throughput in tokens/s.
# TYPE llamacpp:prompt_tokens_seconds gauge
llamacpp:prompt_tokens_seconds 2.37151
# HELP llamacpp:kv_cache_usage_ratio KV-cache usage. 1 means 100 percent usage.
# TYPE llamacpp:kv_cache_usage_ratio gauge
llamacpp:kv_cache_usage_ratio 0.25
# HELP llamacpp:kv_cache_tokens KV-cache tokens.
# TYPE llamacpp:kv_cache_tokens gauge
llamacpp:kv_cache_tokens 1024
# HELP llamacpp:requests_processing Number of requests processing.
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 1
# HELP llamacpp:requests_deferred Number of requests deferred.
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred 0
`

// A current llama-server: no KV-cache gauges any more.
const llamaText = `# TYPE llamacpp:prompt_tokens_total counter
llamacpp:prompt_tokens_total 96641
# TYPE llamacpp:tokens_predicted_total counter
llamacpp:tokens_predicted_total 23210
# TYPE llamacpp:n_decode_total counter
llamacpp:n_decode_total 23381
# TYPE llamacpp:n_tokens_max counter
llamacpp:n_tokens_max 42094
# TYPE llamacpp:prompt_tokens_seconds gauge
llamacpp:prompt_tokens_seconds 424.925
# TYPE llamacpp:predicted_tokens_seconds gauge
llamacpp:predicted_tokens_seconds 45.4769
# TYPE llamacpp:requests_processing gauge
llamacpp:requests_processing 2
# TYPE llamacpp:requests_deferred gauge
llamacpp:requests_deferred 3
# TYPE llamacpp:n_busy_slots_per_decode gauge
llamacpp:n_busy_slots_per_decode 1
`

// SGLang (docs: production metrics).
const sglangText = `# TYPE sglang:num_running_reqs gauge
sglang:num_running_reqs{model_name="qwen"} 5.0
# TYPE sglang:num_queue_reqs gauge
sglang:num_queue_reqs{model_name="qwen"} 2.0
# TYPE sglang:token_usage gauge
sglang:token_usage{model_name="qwen"} 0.3
# TYPE sglang:cache_hit_rate gauge
sglang:cache_hit_rate{model_name="qwen"} 0.7
# TYPE sglang:prompt_tokens_total counter
sglang:prompt_tokens_total{model_name="qwen"} 100.0
# TYPE sglang:generation_tokens_total counter
sglang:generation_tokens_total{model_name="qwen"} 200.0
`

func TestParseMetrics(t *testing.T) {
	nan := math.NaN()
	for name, c := range map[string]struct {
		text    string
		want    Metrics
		missing []string
	}{
		"vllm": {vllmText, Metrics{Server: "vllm", Running: 3, Waiting: 1, KVUsage: 0.42, PrefixHitRate: 0.63, Preemptions: 2,
			PromptTokens: 1000, GenTokens: 5000, SpecAcceptance: 0.75}, nil},
		"vllm v0": {vllmV0Text, Metrics{Server: "vllm", Running: 3, Waiting: nan, KVUsage: 0.5, PrefixHitRate: 0.1, Preemptions: nan,
			PromptTokens: nan, GenTokens: nan, SpecAcceptance: 0.6}, []string{"waiting requests", "preemptions"}},
		"llama.cpp old": {llamaOldText, Metrics{Server: "llama.cpp", Running: 1, Waiting: 0, KVUsage: 0.25, PrefixHitRate: nan, Preemptions: nan,
			PromptTokens: 6886, GenTokens: 3469, SpecAcceptance: nan}, []string{"prefix-cache hits", "preemptions", "speculative acceptance"}},
		"llama.cpp": {llamaText, Metrics{Server: "llama.cpp", Running: 2, Waiting: 3, KVUsage: nan, PrefixHitRate: nan, Preemptions: nan,
			PromptTokens: 96641, GenTokens: 23210, SpecAcceptance: nan}, []string{"KV cache usage", "prefix-cache hits", "preemptions", "speculative acceptance"}},
		"sglang": {sglangText, Metrics{Server: "sglang", Running: 5, Waiting: 2, KVUsage: 0.3, PrefixHitRate: 0.7, Preemptions: nan,
			PromptTokens: 100, GenTokens: 200, SpecAcceptance: nan}, []string{"preemptions", "speculative acceptance"}},
		"empty": {"", Metrics{Running: nan, Waiting: nan, KVUsage: nan, PrefixHitRate: nan, Preemptions: nan, PromptTokens: nan, GenTokens: nan, SpecAcceptance: nan},
			[]string{"running requests", "waiting requests", "KV cache usage", "prefix-cache hits", "preemptions", "speculative acceptance"}},
	} {
		got, err := ParseMetrics(strings.NewReader(c.text))
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		same := func(a, b float64) bool { return a == b || math.IsNaN(a) && math.IsNaN(b) || math.Abs(a-b) < 1e-12 }
		if got.Server != c.want.Server || !same(got.Running, c.want.Running) || !same(got.Waiting, c.want.Waiting) ||
			!same(got.KVUsage, c.want.KVUsage) || !same(got.PrefixHitRate, c.want.PrefixHitRate) || !same(got.Preemptions, c.want.Preemptions) ||
			!same(got.PromptTokens, c.want.PromptTokens) || !same(got.GenTokens, c.want.GenTokens) || !same(got.SpecAcceptance, c.want.SpecAcceptance) {
			t.Errorf("%s:\n got %+v\nwant %+v", name, got, c.want)
		}
		if m := got.Missing(); !slices.Equal(m, c.missing) {
			t.Errorf("%s: missing %q, want %q", name, m, c.missing)
		}
	}
	if _, err := ParseMetrics(strings.NewReader("not { metrics")); err == nil {
		t.Error("garbage parsed")
	}
}

// FuzzParseMetrics: any text gives metrics or an error, never a panic.
func FuzzParseMetrics(f *testing.F) {
	for _, s := range []string{vllmText, llamaText, sglangText, "a 1\n", "# TYPE x counter\nx{a=\"b\"} NaN\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { ParseMetrics(strings.NewReader(s)) })
}

// TestParseChunk: OpenAI chat and text chunks, the usage block with cached
// tokens, llama-server's timings, and an error event.
func TestParseChunk(t *testing.T) {
	ev, err := parseChunk([]byte(`{"choices":[{"index":0,"delta":{"content":"Hi"},"finish_reason":null}]}`))
	if err != nil || ev.Text != "Hi" || ev.Finish != "" || ev.Usage != nil {
		t.Errorf("chat chunk: %+v %v", ev, err)
	}
	ev, _ = parseChunk([]byte(`{"choices":[{"index":0,"text":" there","finish_reason":"length"}]}`))
	if ev.Text != " there" || ev.Finish != "length" {
		t.Errorf("text chunk: %+v", ev)
	}
	ev, _ = parseChunk([]byte(`{"choices":[],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":8}}}`))
	if u := ev.Usage; u == nil || u.PromptTokens != 10 || u.CompletionTokens != 5 || !u.Cached || u.CachedTokens != 8 {
		t.Errorf("usage: %+v", ev.Usage)
	}
	ev, _ = parseChunk([]byte(`{"choices":[{"delta":{},"finish_reason":"stop"}],"timings":{"cache_n":4,"prompt_n":6,"prompt_ms":12.5,"prompt_per_second":480,"predicted_n":20,"predicted_ms":400,"predicted_per_second":50}}`))
	if u := ev.Usage; u == nil || !u.Cached || u.CachedTokens != 4 || u.PredictedPerSecond != 50 || u.PromptPerSecond != 480 {
		t.Errorf("timings: %+v", ev.Usage)
	}
	if _, err := parseChunk([]byte(`{"error":{"message":"boom","type":"server_error"}}`)); err == nil || !strings.Contains(err.Error(), "boom") {
		t.Errorf("error event: %v", err)
	}
	if _, err := parseChunk([]byte(`{`)); err == nil {
		t.Error("bad JSON parsed")
	}
}

// FuzzParseChunk: any stream event gives an event or an error.
func FuzzParseChunk(f *testing.F) {
	for _, s := range []string{`{"choices":[{"delta":{"content":"Hi"}}]}`, `{"choices":[],"usage":{"prompt_tokens":1}}`,
		`{"timings":{"cache_n":3}}`, `{"error":"x"}`, `[]`, `null`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) { parseChunk([]byte(s)) })
}

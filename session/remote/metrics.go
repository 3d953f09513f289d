package remote

import (
	"context"
	"fmt"
	"io"
	"math"
	"strings"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// Metrics are the figures a server's Prometheus /metrics offers, read under
// the names each server uses: vLLM's vllm: (V1, and the older V0 names),
// SGLang's sglang:, llama-server's llamacpp:, and `chat serve`'s (vLLM's
// names plus chat:). A figure the server does not report is NaN; Missing
// names them.
type Metrics struct {
	Server         string  // "chat", "vllm", "sglang", "llama.cpp", or "" when no known name was found
	Running        float64 // requests being decoded
	Waiting        float64 // requests queued
	KVUsage        float64 // fraction of the KV cache in use, 0..1
	PrefixHitRate  float64 // prompt tokens found in the prefix cache / looked up, 0..1, over the server's life
	Preemptions    float64 // sequences preempted for want of KV memory
	PromptTokens   float64 // prompt tokens processed, over the server's life
	GenTokens      float64 // tokens generated, over the server's life
	SpecAcceptance float64 // accepted / proposed draft tokens, 0..1
}

// names of the figures, for Missing.
var figureNames = []struct {
	name string
	get  func(*Metrics) float64
}{
	{"running requests", func(m *Metrics) float64 { return m.Running }},
	{"waiting requests", func(m *Metrics) float64 { return m.Waiting }},
	{"KV cache usage", func(m *Metrics) float64 { return m.KVUsage }},
	{"prefix-cache hits", func(m *Metrics) float64 { return m.PrefixHitRate }},
	{"preemptions", func(m *Metrics) float64 { return m.Preemptions }},
	{"speculative acceptance", func(m *Metrics) float64 { return m.SpecAcceptance }},
}

// Missing names the figures the server did not report.
func (m *Metrics) Missing() []string {
	var out []string
	for _, f := range figureNames {
		if math.IsNaN(f.get(m)) {
			out = append(out, f.name)
		}
	}
	return out
}

// Metrics reads the server's /metrics.
func (c *Client) Metrics(ctx context.Context) (Metrics, error) {
	resp, err := c.do(ctx, "GET", "/metrics", nil)
	if err != nil {
		return unknown(), err
	}
	defer resp.Body.Close()
	return ParseMetrics(io.LimitReader(resp.Body, 32<<20))
}

func unknown() Metrics {
	n := math.NaN()
	return Metrics{Running: n, Waiting: n, KVUsage: n, PrefixHitRate: n, Preemptions: n, PromptTokens: n, GenTokens: n, SpecAcceptance: n}
}

// ParseMetrics reads a Prometheus text exposition.
func ParseMetrics(r io.Reader) (Metrics, error) {
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(r)
	m := unknown()
	if err != nil {
		return m, fmt.Errorf("remote: /metrics: %w", err)
	}
	// find sums a family's samples (max for a ratio), trying each name with
	// and without the _total a counter's samples carry.
	find := func(ratio bool, names ...string) float64 {
		for _, n := range names {
			for _, name := range []string{n, n + "_total", strings.TrimSuffix(n, "_total")} {
				f := fams[name]
				if f == nil || len(f.GetMetric()) == 0 {
					continue
				}
				v := 0.0
				for i, s := range f.GetMetric() {
					x := value(s)
					switch {
					case i == 0:
						v = x
					case ratio:
						v = math.Max(v, x)
					default:
						v += x
					}
				}
				return v
			}
		}
		return math.NaN()
	}
	rate := func(num, den float64) float64 {
		if math.IsNaN(num) || math.IsNaN(den) {
			return math.NaN()
		}
		if den == 0 {
			return 0
		}
		return num / den
	}
	has := func(prefix string) bool {
		for name := range fams {
			if strings.HasPrefix(name, prefix) {
				return true
			}
		}
		return false
	}
	switch {
	case has("chat:"):
		m.Server = "chat"
	case has("vllm:"):
		m.Server = "vllm"
	case has("sglang:"):
		m.Server = "sglang"
	case has("llamacpp:"):
		m.Server = "llama.cpp"
	}
	m.Running = find(false, "vllm:num_requests_running", "sglang:num_running_reqs", "llamacpp:requests_processing")
	m.Waiting = find(false, "vllm:num_requests_waiting", "sglang:num_queue_reqs", "llamacpp:requests_deferred")
	m.KVUsage = find(true, "vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage", "llamacpp:kv_cache_usage_ratio")
	m.PrefixHitRate = rate(find(false, "vllm:prefix_cache_hits_total"), find(false, "vllm:prefix_cache_queries_total"))
	if math.IsNaN(m.PrefixHitRate) {
		m.PrefixHitRate = find(true, "vllm:gpu_prefix_cache_hit_rate", "sglang:cache_hit_rate")
	}
	m.Preemptions = find(false, "vllm:num_preemptions_total")
	m.PromptTokens = find(false, "vllm:prompt_tokens_total", "sglang:prompt_tokens_total", "llamacpp:prompt_tokens_total")
	m.GenTokens = find(false, "vllm:generation_tokens_total", "sglang:generation_tokens_total", "llamacpp:tokens_predicted_total")
	m.SpecAcceptance = rate(find(false, "vllm:spec_decode_num_accepted_tokens_total", "llamacpp:tokens_drafted_accepted_total"),
		find(false, "vllm:spec_decode_num_draft_tokens_total", "llamacpp:tokens_drafted_total"))
	if math.IsNaN(m.SpecAcceptance) {
		m.SpecAcceptance = find(true, "vllm:spec_decode_draft_acceptance_rate")
	}
	return m, nil
}

// value is a sample's value, whatever its type.
func value(s *dto.Metric) float64 {
	switch {
	case s.Gauge != nil:
		return s.Gauge.GetValue()
	case s.Counter != nil:
		return s.Counter.GetValue()
	case s.Untyped != nil:
		return s.Untyped.GetValue()
	case s.Histogram != nil:
		return float64(s.Histogram.GetSampleCount())
	case s.Summary != nil:
		return float64(s.Summary.GetSampleCount())
	}
	return math.NaN()
}

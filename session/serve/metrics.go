package serve

import (
	"net/http"
	"time"

	"chat/engine"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Prometheus metrics, named after vLLM's (its V1 names) where vLLM has one,
// so dashboards made for vLLM read them; the rest are chat:. Every series
// has vLLM's model_name label. Gauges and the engine-wide counters are read
// from the engine when scraped.
//
// The embedding routes, which vLLM serves from a pooling model of its own
// (its prompt-token counter counts them there), have chat: counters of
// their own: vllm:prompt_tokens_total stays the generation's.
//
// vllm:kv_cache_usage_perc counts every block held, the prefix cache's
// included (those are freed on demand); chat:kv_cache_blocks_cached says how
// many of them the prefix tree holds.
type metrics struct {
	reg        *prometheus.Registry
	prompt     prometheus.Counter
	generation prometheus.Counter
	success    *prometheus.CounterVec
	ttft       prometheus.Histogram
	itl        prometheus.Histogram
	e2e        prometheus.Histogram
	drafts     prometheus.Counter
	draftToks  prometheus.Counter
	accepted   prometheus.Counter
	embeds     prometheus.Counter // embedding requests answered
	embedToks  prometheus.Counter // and the tokens of their inputs
}

func newMetrics(s *Server) *metrics {
	reg := prometheus.NewRegistry()
	labels := prometheus.Labels{"model_name": s.name}
	load := func(f func(engine.Load) float64) func() float64 {
		return func() float64 { return f(s.e.Load()) }
	}
	gauge := func(name, help string, f func(engine.Load) float64) {
		reg.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Name: name, Help: help, ConstLabels: labels}, load(f)))
	}
	counterFunc := func(name, help string, f func(engine.Load) float64) {
		reg.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels}, load(f)))
	}
	counter := func(name, help string) prometheus.Counter {
		c := prometheus.NewCounter(prometheus.CounterOpts{Name: name, Help: help, ConstLabels: labels})
		reg.MustRegister(c)
		return c
	}
	hist := func(name, help string, buckets []float64) prometheus.Histogram {
		h := prometheus.NewHistogram(prometheus.HistogramOpts{Name: name, Help: help, ConstLabels: labels, Buckets: buckets})
		reg.MustRegister(h)
		return h
	}
	gauge("vllm:num_requests_running", "Requests in the running batch.", func(l engine.Load) float64 { return float64(l.Running) })
	gauge("vllm:num_requests_waiting", "Requests waiting for a place.", func(l engine.Load) float64 { return float64(l.Waiting) })
	gauge("vllm:kv_cache_usage_perc", "Fraction of KV blocks held (1 = full), the prefix cache's included.", func(l engine.Load) float64 {
		if l.PoolBlocks == 0 {
			return 0
		}
		return float64(l.PoolUsed) / float64(l.PoolBlocks)
	})
	counterFunc("vllm:prefix_cache_queries_total", "Prompt tokens looked up in the prefix cache.", func(l engine.Load) float64 { return float64(l.PromptTokens) })
	counterFunc("vllm:prefix_cache_hits_total", "Prompt tokens found in the prefix cache.", func(l engine.Load) float64 { return float64(l.ReusedTokens) })
	counterFunc("vllm:num_preemptions_total", "Sequences preempted (recomputed later) for want of KV blocks.", func(l engine.Load) float64 { return float64(l.Preemptions) })
	gauge("chat:kv_cache_blocks", "KV blocks in the pool.", func(l engine.Load) float64 { return float64(l.PoolBlocks) })
	gauge("chat:kv_cache_blocks_used", "KV blocks held by sequences or the prefix cache.", func(l engine.Load) float64 { return float64(l.PoolUsed) })
	gauge("chat:kv_cache_blocks_cached", "KV blocks the prefix cache holds.", func(l engine.Load) float64 { return float64(l.TreeBlocks) })
	counterFunc("chat:prefix_cache_evicted_blocks_total", "Blocks evicted from the prefix cache.", func(l engine.Load) float64 { return float64(l.Evictions) })

	m := &metrics{reg: reg}
	m.prompt = counter("vllm:prompt_tokens_total", "Prompt tokens of finished requests.")
	m.generation = counter("vllm:generation_tokens_total", "Generated tokens.")
	m.success = prometheus.NewCounterVec(prometheus.CounterOpts{Name: "vllm:request_success_total", Help: "Finished requests by finish reason.", ConstLabels: labels}, []string{"finished_reason"})
	reg.MustRegister(m.success)
	lat := []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80}
	m.ttft = hist("vllm:time_to_first_token_seconds", "Time from the request to its first token (queueing included).", lat)
	m.itl = hist("vllm:inter_token_latency_seconds", "Time between two tokens of a request.", lat)
	m.e2e = hist("vllm:e2e_request_latency_seconds", "Time from the request to its last token.", []float64{0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480})
	m.drafts = counter("vllm:spec_decode_num_drafts_total", "Speculative rounds.")
	m.draftToks = counter("vllm:spec_decode_num_draft_tokens_total", "Draft tokens proposed.")
	m.accepted = counter("vllm:spec_decode_num_accepted_tokens_total", "Draft tokens accepted.")
	m.embeds = counter("chat:embedding_requests_total", "Embedding requests answered (/v1/embeddings, /api/embed, /api/embeddings).")
	m.embedToks = counter("chat:embedding_input_tokens_total", "Input tokens of the embedding requests answered.")
	return m
}

// embedded counts an embedding request answered, of tokens input tokens.
func (m *metrics) embedded(tokens int) {
	m.embeds.Inc()
	m.embedToks.Add(float64(tokens))
}

func (m *metrics) handler() http.Handler { return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{}) }

// tokens counts n new tokens, dt after the last ones (an ITL observation
// per token when there were earlier ones).
func (m *metrics) tokens(n int, dt time.Duration, earlier bool) {
	m.generation.Add(float64(n))
	if earlier {
		per := dt.Seconds() / float64(n)
		for range n {
			m.itl.Observe(per)
		}
	}
}

// finish counts a finished request.
func (m *metrics) finish(res engine.Result, start time.Time) {
	st := res.Stats
	m.prompt.Add(float64(st.PromptTokens))
	m.success.WithLabelValues(finishReason(res)).Inc()
	if st.GenTokens > 0 {
		m.ttft.Observe(st.TTFT.Seconds())
	}
	m.e2e.Observe(time.Since(start).Seconds())
	m.drafts.Add(float64(st.Spec.Rounds))
	m.draftToks.Add(float64(st.Spec.Proposed))
	m.accepted.Add(float64(st.Spec.Accepted))
}

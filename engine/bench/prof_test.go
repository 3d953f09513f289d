package bench

import (
	"os"
	"slices"
	"strconv"
	"testing"
	"time"

	"chat/models"
	"chat/models/kernels"
	"chat/models/kvcache"
	"chat/models/load"
	"chat/models/testmodels"
)

// The profiles behind BENCHMARKS.md's breakdowns of a decode step: run one
// with -cpuprofile and read it with go tool pprof -top, e.g.
//
//	CHAT_PROF_MODEL=bench110M-q8_0.gguf go test -run '^$' -bench ProfBatch8 \
//	  -benchtime 3x -cpuprofile cpu.out ./engine/bench/
//
// CHAT_PROF_MODEL names the model (default: the shared stories260K);
// CHAT_PROF_THREADS the compute threads (default 1); CHAT_PROF_KV the KV
// format of the prefill and batch benchmarks (default f32).
func profKV(b *testing.B) kvcache.Format {
	kv, err := kvcache.ParseFormat(os.Getenv("CHAT_PROF_KV"))
	if err != nil {
		b.Fatal(err)
	}
	return kv
}

// profModel is the model CHAT_PROF_MODEL names, at CHAT_PROF_THREADS.
func profModel(b *testing.B) models.Model {
	kernels.SetThreads(envInt("CHAT_PROF_THREADS", 1))
	path := os.Getenv("CHAT_PROF_MODEL")
	if path == "" {
		path = testmodels.Path(b, "stories260K/stories260K.gguf")
	}
	m, err := load.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	return m
}

// BenchmarkProfDecode: one token at position 128 of one sequence.
func BenchmarkProfDecode(b *testing.B) {
	s := kvcache.NewState(profModel(b))
	s.Forward(make([]int, 128), 1)
	tok := []int{5}
	for b.Loop() {
		s.Truncate(128)
		if _, err := s.Forward(tok, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProfPrefill: a 128-token prompt.
func BenchmarkProfPrefill(b *testing.B) {
	s, err := kvcache.NewStateAs(profModel(b), profKV(b))
	if err != nil {
		b.Fatal(err)
	}
	ids := make([]int, 128)
	for i := range ids {
		ids[i] = i % 500
	}
	for b.Loop() {
		s.Truncate(0)
		if _, err := s.Forward(ids, 1); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkProfBatch8: 8 different 128-token prompts prefilled together,
// then 128 greedy decode steps of all 8 (chat bench --batch 8's batched
// run); reports the time of one decode step.
func BenchmarkProfBatch8(b *testing.B) {
	const n, np, ng = 8, 128, 128
	r := profBatch(b, n, np, np+ng)
	var steps float64
	for b.Loop() {
		_, tg, err := r.run(n, np, ng)
		if err != nil {
			b.Fatal(err)
		}
		steps += tg.Seconds() * 1e3 / ng
	}
	b.ReportMetric(steps/float64(b.N), "ms/step")
}

// BenchmarkProfBatchStep: decode steps only, CHAT_PROF_BATCH sequences
// (default 8) from position CHAT_PROF_POS (default 192) on, each step one
// token further, so the sequences keep reaching fresh KV blocks; reports
// the mean and the slowest step (a stall shows there: page faults in the
// pool once cost 150 ms steps every 32-48 positions).
//
//	CHAT_PROF_BATCH=16 CHAT_PROF_POS=48 CHAT_PROF_MODEL=bench110M-q8_0.gguf \
//	  go test -run '^$' -bench ProfBatchStep -benchtime 300x ./engine/bench/
func BenchmarkProfBatchStep(b *testing.B) {
	n, np := envInt("CHAT_PROF_BATCH", 8), envInt("CHAT_PROF_POS", 192)
	r := profBatch(b, n, np, np+b.N+2)
	if _, _, err := r.run(n, np, 1); err != nil {
		b.Fatal(err)
	}
	var slowest time.Duration
	steps := make([]time.Duration, b.N)
	cpu0 := cpuTime()
	b.ResetTimer()
	for i := range b.N {
		t0 := time.Now()
		if err := r.step(n); err != nil {
			b.Fatal(err)
		}
		steps[i] = time.Since(t0)
		slowest = max(slowest, steps[i])
	}
	cpu := cpuTime() - cpu0
	b.ReportMetric(float64(b.Elapsed().Microseconds())/1e3/float64(b.N), "ms/step")
	b.ReportMetric(float64(slowest.Microseconds())/1e3, "max-ms/step")
	// The process's CPU time a step, which other processes on a shared
	// host, taking the core away, do not lengthen as they do wall time.
	b.ReportMetric(float64(cpu.Microseconds())/1e3/float64(b.N), "cpu-ms/step")
	// The median and the fastest step, which a shared host's interruptions
	// move less than the mean.
	slices.Sort(steps)
	b.ReportMetric(float64(steps[b.N/2].Microseconds())/1e3, "median-ms/step")
	b.ReportMetric(float64(steps[0].Microseconds())/1e3, "min-ms/step")
}

// profBatch is n sequences of the profiled model over a pool of positions
// each, with np-token prompts of the bench text.
func profBatch(b *testing.B, n, np, positions int) *batchRun {
	r, err := newBatch(profModel(b), n, positions, profKV(b))
	if err != nil {
		b.Fatal(err)
	}
	r.setPrompts(PromptText(), np)
	return r
}

func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

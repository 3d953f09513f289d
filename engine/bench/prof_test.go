package bench

import (
	"os"
	"testing"

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
// CHAT_PROF_MODEL names the model (default: the shared stories260K); one
// compute thread.
func profModel(b *testing.B) models.Model {
	kernels.SetThreads(1)
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
	s := kvcache.NewState(profModel(b))
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
	m := profModel(b)
	const n, np, ng = 8, 128, 128
	r, err := newBatch(m, n, np+ng, kvcache.F32)
	if err != nil {
		b.Fatal(err)
	}
	text, err := PromptText("")
	if err != nil {
		b.Fatal(err)
	}
	r.setPrompts(text, np)
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

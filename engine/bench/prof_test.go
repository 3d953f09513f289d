package bench

import (
	"testing"

	"chat/models/kernels"
	"chat/models/kvcache"
	"chat/models/llama"
)

func BenchmarkProfDecode(b *testing.B) {
	kernels.SetThreads(1)
	m, err := llama.Load("/work/shared/models/stories260K/stories260K.gguf")
	if err != nil {
		b.Fatal(err)
	}
	s := kvcache.NewState(m)
	s.Forward(make([]int, 128), 1)
	tok := []int{5}
	for b.Loop() {
		s.Truncate(128)
		if _, err := s.Forward(tok, 1); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkProfPrefill(b *testing.B) {
	kernels.SetThreads(1)
	m, err := llama.Load("/work/shared/models/stories260K/stories260K.gguf")
	if err != nil {
		b.Fatal(err)
	}
	s := kvcache.NewState(m)
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

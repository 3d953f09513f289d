package bench

import (
	"testing"

	"chat/models/kvcache"
	"chat/models/load"
)

func TestRunEmbedded(t *testing.T) {
	m, err := load.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	r, err := Run(m, Fallback, 1, 16, 8, 1, kvcache.F32)
	if err != nil {
		t.Fatal(err)
	}
	if r.Engine != "chat" || r.PromptTokens != 16 || r.GenTokens != 8 || r.PPTokS <= 0 || r.TGTokS <= 0 || r.Batch != 1 || r.ISA == "" || r.KV != "f32" {
		t.Errorf("result %+v", r)
	}
	for _, kv := range []kvcache.Format{kvcache.Int8, kvcache.FP8, kvcache.Int4} {
		if r, err := Run(m, Fallback, 1, 16, 8, 2, kv); err != nil || r.KV != kv.String() || r.TGTokS <= 0 {
			t.Errorf("%v KV: %+v, %v", kv, r, err)
		}
	}
	r, err = Run(m, Fallback, 1, 16, 8, 3, kvcache.F32)
	if err != nil {
		t.Fatal(err)
	}
	if r.Batch != 3 || r.TGTokSSingle <= 0 || r.BatchSpeedup <= 0 || r.RolloutSpeedup <= 0 {
		t.Errorf("batch result %+v", r)
	}
	if _, err := Run(m, Fallback, 1, m.Info().ContextLength-6, 10, 1, kvcache.F32); err == nil {
		t.Error("a run longer than the context should fail")
	}
}

func TestPromptTokens(t *testing.T) {
	m, err := load.Embedded()
	if err != nil {
		t.Fatal(err)
	}
	ids := promptTokens1(m.Tokenizer(), "ab", 7)
	if len(ids) != 7 {
		t.Fatalf("got %d ids, want 7", len(ids))
	}
}

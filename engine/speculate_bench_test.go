package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"chat/engine/sampler"
	"chat/engine/speculative"
	"chat/models/testmodels"
)

// BenchmarkSpeculative measures wall-clock decoding on student.pt with a
// warm prompt whose continuation repeats it: a story opening, the course's
// greedy continuation of it, then the opening again, so the reply copies
// the middle. Greedy, so every method gives the same ids. Run with
//
//	go test ./engine -run '^$' -bench Speculative -benchtime 5x
func BenchmarkSpeculative(b *testing.B) {
	target, draft := loadCourse(b, "student.pt"), loadCourse(b, "tiny.pt")
	raw, err := os.ReadFile(filepath.Join(testmodels.Dir(b), "course", "golden", "student.json"))
	if err != nil {
		b.Skip(err)
	}
	var g struct{ Prompts []map[string]json.RawMessage }
	if err := json.Unmarshal(raw, &g); err != nil {
		b.Fatal(err)
	}
	var open, cont []int
	json.Unmarshal(g.Prompts[0]["prompt_ids"], &open)
	json.Unmarshal(g.Prompts[0]["greedy_cache"], &cont)
	pr := append(append(append([]int{}, open...), cont...), open...)
	const n = 64
	var want []int
	for _, c := range []struct {
		name string
		cfg  speculative.Config
	}{
		{"plain", speculative.Config{}},
		{"lookup-k8", speculative.Config{Method: speculative.Lookup, K: 8}},
		{"ngram-k8", speculative.Config{Method: speculative.NGram, K: 8}},
		{"draft-tiny-k4", speculative.Config{Method: speculative.Draft, K: 4, Draft: draft}},
	} {
		b.Run(c.name, func(b *testing.B) {
			e := New(target)
			defer e.Close()
			if err := e.SetSpeculation(c.cfg); err != nil {
				b.Fatal(err)
			}
			req := Request{Prompt: pr, MaxTokens: n, Sampler: sampler.Params{Greedy: true}}
			run(b, e, req) // warm: later replies reuse the prompt's cache
			var res Result
			for b.Loop() {
				res = run(b, e, req)
			}
			if want == nil {
				want = res.IDs
			} else if !equalInts(res.IDs, want) {
				b.Fatalf("%s: other ids than plain", c.name)
			}
			b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "tok/s")
			if s := res.Stats.Spec; s.Method != speculative.Off {
				b.ReportMetric(s.AcceptanceRate(), "accept")
				b.ReportMetric(s.TokensPerPass(), "tok/pass")
			}
		})
	}
}

func equalInts(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

package engine

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"chat/engine/sampler"
	"chat/engine/speculative"
	"chat/models"
	"chat/models/course"
	"chat/models/testmodels"
)

func loadCourse(t testing.TB, name string) models.Model {
	t.Helper()
	m, err := course.Load(testmodels.Path(t, "course/"+name))
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// TestSpeculativeCourseGolden reproduces the course's speculative run
// (golden/speculative.json: target tiny-classic, draft tiny, k=4, greedy,
// 100 new tokens on 10 prompts): the same tokens, and — since drafting and
// verifying mirror the course while the text fits the context — the same
// proposed/accepted/target-call counts, even though both models here use
// KV caches where the course recomputes every window.
func TestSpeculativeCourseGolden(t *testing.T) {
	target, draft := loadCourse(t, "tiny-classic.pt"), loadCourse(t, "tiny.pt")
	raw, err := os.ReadFile(filepath.Join(testmodels.Dir(t), "course", "golden", "speculative.json"))
	if err != nil {
		t.Skipf("golden file: %v", err)
	}
	var g struct {
		K                                    int
		MaxNew                               int `json:"max_new_tokens"`
		Proposed, Accepted, Calls, Generated int
		TotalProposed                        int     `json:"total_proposed"`
		TotalAccepted                        int     `json:"total_accepted"`
		TotalCalls                           int     `json:"total_target_calls"`
		TotalGenerated                       int     `json:"total_generated"`
		Rate                                 float64 `json:"acceptance_rate"`
		PerCall                              float64 `json:"tokens_per_target_call"`
		Runs                                 []struct {
			Prompt    string
			PromptIDs []int `json:"prompt_ids"`
			Spec      []int `json:"spec_tokens"`
			Proposed  int
			Accepted  int
			Calls     int `json:"target_calls"`
			Generated int
		}
	}
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	e := New(target)
	defer e.Close()
	if err := e.SetSpeculation(speculative.Config{Method: speculative.Draft, K: g.K, Draft: draft}); err != nil {
		t.Fatal(err)
	}
	var tot speculative.Stats
	for _, c := range g.Runs {
		res := run(t, e, Request{Prompt: c.PromptIDs, MaxTokens: g.MaxNew, Sampler: sampler.Params{Greedy: true}})
		s := res.Stats.Spec
		if !slices.Equal(res.IDs, c.Spec) {
			t.Errorf("%q: tokens differ from the course:\n got %v\nwant %v", c.Prompt, res.IDs, c.Spec)
		}
		if s.Proposed != c.Proposed || s.Accepted != c.Accepted || s.TargetPasses != c.Calls || s.Generated != c.Generated {
			t.Errorf("%q: proposed/accepted/passes/generated %d/%d/%d/%d, course %d/%d/%d/%d", c.Prompt,
				s.Proposed, s.Accepted, s.TargetPasses, s.Generated, c.Proposed, c.Accepted, c.Calls, c.Generated)
		}
		tot.Proposed += s.Proposed
		tot.Accepted += s.Accepted
		tot.TargetPasses += s.TargetPasses
		tot.Rounds += s.Rounds
		tot.Generated += s.Generated
	}
	t.Logf("ours:   acceptance %.4f, tokens/target pass %.4f (%d proposed, %d accepted, %d passes, %d generated), mean tokens/round %.3f",
		tot.AcceptanceRate(), tot.TokensPerPass(), tot.Proposed, tot.Accepted, tot.TargetPasses, tot.Generated, tot.MeanAccepted())
	t.Logf("course: acceptance %.4f, tokens/target call %.4f (%d proposed, %d accepted, %d calls, %d generated)",
		g.Rate, g.PerCall, g.TotalProposed, g.TotalAccepted, g.TotalCalls, g.TotalGenerated)
}

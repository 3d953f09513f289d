package engine

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"chat/engine/sampler"
	"chat/models/course"
	"chat/models/testmodels"
)

// TestCourseGolden runs the engine greedily on the real course checkpoints
// and compares with the ids the course's own generate produced: modern
// files with the KV cache loop (greedy_cache: window/2 restarts), the
// classic file with its sliding window (greedy). One engine per file runs
// all prompts in turn, so the prefix cache is exercised too ("long" starts
// like "once").
func TestCourseGolden(t *testing.T) {
	for _, c := range []struct{ name, key string }{
		{"tiny", "greedy_cache"},
		{"student", "greedy_cache"},
		{"tiny-classic", "greedy"},
	} {
		t.Run(c.name, func(t *testing.T) {
			path := testmodels.Path(t, "course/"+c.name+".pt")
			raw, err := os.ReadFile(strings.TrimSuffix(path, c.name+".pt") + "golden/" + c.name + ".json")
			if err != nil {
				t.Skipf("golden file: %v", err)
			}
			var g struct {
				Prompts []map[string]json.RawMessage
			}
			if err := json.Unmarshal(raw, &g); err != nil {
				t.Fatal(err)
			}
			m, err := course.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			e := New(m)
			defer e.Close()
			// "long" right after "once", which it starts like, to reuse the cache.
			rank := func(p map[string]json.RawMessage) int {
				return strings.Index(`"once""long""dog"`, string(p["key"]))
			}
			slices.SortStableFunc(g.Prompts, func(a, b map[string]json.RawMessage) int { return rank(a) - rank(b) })
			for _, p := range g.Prompts {
				var key string
				var ids, want []int
				var n int
				for field, dst := range map[string]any{"key": &key, "prompt_ids": &ids, "max_new_tokens": &n, c.key: &want} {
					if err := json.Unmarshal(p[field], dst); err != nil {
						t.Fatalf("%s: %v", field, err)
					}
				}
				r, err := e.Start(Request{Prompt: ids, MaxTokens: n, Sampler: sampler.Params{Greedy: true}})
				if err != nil {
					t.Fatal(err)
				}
				res := r.Wait()
				if res.Err != nil {
					t.Fatalf("%s: %v", key, res.Err)
				}
				if !slices.Equal(res.IDs, want) {
					i := 0
					for i < min(len(res.IDs), len(want)) && res.IDs[i] == want[i] {
						i++
					}
					t.Errorf("%s/%s: first difference at new token %d of %d:\n got %v\nwant %v", c.name, key, i, len(want), res.IDs, want)
				}
				t.Logf("%s: %d prompt (%d reused), %d new, prefill %.0f tok/s, decode %.0f tok/s",
					key, len(ids), res.Stats.ReusedTokens, len(res.IDs), res.Stats.PrefillTokS, res.Stats.DecodeTokS)
			}
		})
	}
}

package llama

import (
	"chat/models/kvcache"
	"encoding/json"
	"math"
	"os"
	"testing"

	"chat/models/testmodels"
)

type goldenFile struct {
	Prompts []struct {
		Prompt    string        `json:"prompt"`
		InputIDs  []int         `json:"input_ids"`
		GreedyIDs []int         `json:"greedy_ids"`
		Top10     [][][]float64 `json:"top10"`
		At        map[string]struct {
			Position int       `json:"position"`
			Logits   []float64 `json:"logits"`
		} `json:"at"`
	} `json:"prompts"`
}

func argmax(x []float32) int {
	best := 0
	for i, v := range x {
		if v > x[best] {
			best = i
		}
	}
	return best
}

// TestStories260KGolden feeds each prompt's input_ids as one batch, then
// decodes greedily, and compares with llama.cpp: every greedy id, the top-10
// ids at every step, and the raw logits at steps 0, 10 and 50.
func TestStories260KGolden(t *testing.T) {
	m, err := Load(testmodels.Path(t, "stories260K/stories260K.gguf"))
	if err != nil {
		t.Fatal(err)
	}
	defer m.Close()
	raw, err := os.ReadFile(testmodels.Path(t, "stories260K/golden-llamacpp.json"))
	if err != nil {
		t.Fatal(err)
	}
	var g goldenFile
	if err := json.Unmarshal(raw, &g); err != nil {
		t.Fatal(err)
	}
	vocab := m.Info().VocabSize
	var idsOK, topOK, steps, logitChecks int
	var worst float64
	for _, p := range g.Prompts {
		s := kvcache.NewState(m)
		logits, err := s.Forward(p.InputIDs, 1)
		if err != nil {
			t.Fatal(err)
		}
		match := true
		for k, want := range p.GreedyIDs {
			if at, ok := p.At[itoa(k)]; ok {
				for i, w := range at.Logits {
					d := math.Abs(float64(logits[i]) - w)
					worst = max(worst, d)
					if d > 1e-4 {
						t.Errorf("%q step %d: logit[%d] = %v, llama.cpp %v", p.Prompt, k, i, logits[i], w)
						break
					}
				}
				logitChecks++
			}
			// Our ten best ids, best first, must be llama.cpp's.
			top := p.Top10[k]
			ours := topK(logits[:vocab], len(top))
			order := true
			for i, e := range top {
				order = order && ours[i] == int(e[0])
			}
			steps++
			if order {
				topOK++
			} else if match {
				t.Errorf("%q step %d: top-10 order differs", p.Prompt, k)
			}
			got := argmax(logits[:vocab])
			if got != want {
				t.Errorf("%q step %d: greedy %d, llama.cpp %d", p.Prompt, k, got, want)
				match = false
				break
			}
			logits, err = s.Forward([]int{got}, 1)
			if err != nil {
				t.Fatal(err)
			}
		}
		if match {
			idsOK++
		}
	}
	t.Logf("greedy: %d/%d prompts exact over 200 ids; top-10 order at %d/%d steps; %d logit vectors, max |diff| %.2g",
		idsOK, len(g.Prompts), topOK, steps, logitChecks, worst)
}

// topK returns the ids of the k largest values, largest first.
func topK(x []float32, k int) []int {
	ids := make([]int, 0, k+1)
	for i, v := range x {
		j := len(ids)
		for j > 0 && x[ids[j-1]] < v {
			j--
		}
		if j < k {
			ids = append(ids, 0)
			copy(ids[j+1:], ids[j:])
			ids[j] = i
			if len(ids) > k {
				ids = ids[:k]
			}
		}
	}
	return ids
}

func itoa(k int) string {
	b, _ := json.Marshal(k)
	return string(b)
}

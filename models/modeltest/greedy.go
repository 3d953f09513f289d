package modeltest

import (
	"testing"

	"chat/models"
	"chat/models/kvcache"
)

// Greedy is n greedy ids of m after prompt, one cached sequence: the
// reference a converted or adapted model's ids are compared with (the
// first of equal logits wins).
func Greedy(t testing.TB, m models.Model, prompt []int, n int) []int {
	t.Helper()
	st := kvcache.NewState(m)
	var out []int
	in := prompt
	for range n {
		lg, err := st.Forward(in, 1)
		if err != nil {
			t.Fatal(err)
		}
		best := 0
		for i, v := range lg {
			if v > lg[best] {
				best = i
			}
		}
		out = append(out, best)
		in = []int{best}
	}
	return out
}

package llama

import (
	"math"
	"os"
	"testing"

	"chat/models/kvcache"
	"chat/models/testmodels"
)

// TestBigModelLlamaCpp compares 32 greedy ids of a large GGUF file (a 1B
// model: CHAT_BIG_MODEL=FILE, for example the random-weight Llama 3.2 1B
// that scripts/bigmodel writes) with llama.cpp's (CHAT_LLAMACPP=1), from
// one prompt, both with float32 K and V. The log lists each step's top-2
// log-prob gaps in both engines.
//
// On the 1B stand-in's F16 file all 32 ids agree, the gaps within 0.016.
// Its Q8_0 file parts at step 5 (gaps 0.099 here, 0.089 in llama.cpp):
// sixteen layers of random weights amplify each activation that float
// noise puts on the other side of a Q8_0 rounding boundary (chat's own
// float32 and f16 caches give a first-step gap of 0.486 and 0.289 there,
// llama.cpp 0.317), where the two-layer fixtures agree to 1e-5. So the ids
// may part where both gaps are below bigTieGap, not only at nearTieGap's
// near ties; a real fault (the rope, the template, the weights' layout)
// parts at the first steps, with clear gaps.
// bigTieGap is the top-2 gap below which a deep random model's greedy ids
// may part between engines (see TestBigModelLlamaCpp).
const bigTieGap = 0.25

func TestBigModelLlamaCpp(t *testing.T) {
	path := os.Getenv("CHAT_BIG_MODEL")
	if path == "" {
		t.Skip("set CHAT_BIG_MODEL=FILE.gguf (and CHAT_LLAMACPP=1) to compare a large model's greedy ids with llama.cpp's")
	}
	testmodels.NeedLlamaCpp(t)
	const nGen = 32
	m := loadT(t, path)
	tok := m.Tokenizer()
	prompt := append([]int{tok.BOS()}, tok.Encode("Once upon a time, in a small village by the sea, there lived")...)
	res := testmodels.LlamaCpp(t, testmodels.LlamaCppRequest{Model: path, Prompts: [][]int{prompt}, NGen: nGen})
	want, top2 := res.Greedy[0], res.Top2[0]
	if len(want) != nGen {
		t.Fatalf("llama.cpp gave %d ids, want %d", len(want), nGen)
	}
	st := kvcache.NewState(m)
	logits, err := st.Forward(prompt, 1)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("prompt %v; llama.cpp: %s", prompt, res.SystemInfo)
	var got []int
	var worst float64
	for i, w := range want {
		lp := logProbs(logits)
		id := argmax(logits)
		got = append(got, id)
		gap, ll := topGap(lp), top2[i][0][1]-top2[i][1][1]
		if int(top2[i][0][0]) == id {
			worst = max(worst, math.Abs(gap-ll))
		}
		t.Logf("step %2d: id %6d, llama.cpp %6d · top-2 gap %.4f here, %.4f in llama.cpp", i, id, w, gap, ll)
		if id != w {
			if gap < bigTieGap && ll < bigTieGap {
				t.Logf("parts from llama.cpp at step %d, both top-2 gaps below %.2g; %d ids equal before it", i, bigTieGap, i)
				return
			}
			t.Fatalf("step %d: greedy id %d, llama.cpp %d (top-2 gap %.4f here, %.4f in llama.cpp)\n got %v\nwant %v",
				i, id, w, gap, ll, got, want)
		}
		if logits, err = st.Forward([]int{id}, 1); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("%d greedy ids equal to llama.cpp's; top-2 gaps within %.2g of llama.cpp's", nGen, worst)
}

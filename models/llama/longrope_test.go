package llama

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"testing"

	"chat/models"
	"chat/models/gguf"
	"chat/models/kvcache"
	"chat/models/testmodels"
)

// phi3Long is a small Phi-3 shaped like Phi-3.5-mini-128k's rope: trained
// for 131,072 positions, LongRoPE's original context 4,096, so the default
// window (MaxContext) is within the original context.
var phi3Long = gemmaSpec{Name: "phi3-longrope-128k", Arch: "phi3", Type: gguf.TypeF32, Heads: 4, KVHeads: 2, HD: 16,
	Fused: true, OrigCtx: 4096, Context: 131072, MatStd: 0.3, Seed: 21}

func writePhi3Long(t *testing.T) string {
	t.Helper()
	data, err := writeGemma(phi3Long)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), phi3Long.Name+".gguf")
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestLongRoPEWindow: the model opens with the default 4,096-position window
// and LongRoPE's short factors; a window raised past the original context
// (--ctx-size, which the engine passes to ForWindow) takes the long ones,
// as llama.cpp does when n_ctx_seq > n_ctx_orig_yarn, and a window within
// it the short ones again.
func TestLongRoPEWindow(t *testing.T) {
	m := loadT(t, writePhi3Long(t))
	if in := m.Info(); in.ContextLength != MaxContext || in.TrainContext != 131072 {
		t.Fatalf("context %d of %d", in.ContextLength, in.TrainContext)
	}
	if m.ForWindow(MaxContext) != models.Model(m) {
		t.Error("the default window rebuilt the model")
	}
	c := &m.cfg
	if c.ropeShort == nil || c.ropeLong == nil {
		t.Fatal("the factor sets were not read")
	}
	check := func(what string, got models.Model, long bool) {
		t.Helper()
		which, want := "short", c.rope(c.RopeBase, c.RopeScale, c.ropeShort)
		if long {
			which, want = "long", c.rope(c.RopeBase, c.RopeScale, c.ropeLong)
		}
		r := got.(*Model).Arch().(*Phi3).rope
		for _, pos := range []int{1, 77, 5000, 131071} {
			gc, gs := r.At(pos)
			wc, ws := want.At(pos)
			for i := range wc {
				if gc[i] != wc[i] || gs[i] != ws[i] {
					t.Fatalf("%s: position %d pair %d: cos, sin %v, %v; the %s factors give %v, %v",
						what, pos, i, gc[i], gs[i], which, wc[i], ws[i])
				}
			}
		}
	}
	check("the default window", m, false)
	for _, n := range []int{MaxContext + 1, 8192, 131072} {
		check(fmt.Sprintf("a window of %d", n), m.ForWindow(n), true)
	}
	back := m.ForWindow(8192).(models.Windowed).ForWindow(2048)
	check("8,192 then 2,048", back, false)

	// The long factors change the logits (every position after the first
	// is rotated otherwise).
	short, long := forwardLogits(t, m), forwardLogits(t, m.ForWindow(8192))
	same := true
	for i := range short {
		same = same && short[i] == long[i]
	}
	if same {
		t.Error("the long factors give the short ones' logits")
	}
}

func forwardLogits(t *testing.T, m models.Model) []float32 {
	t.Helper()
	logits, err := kvcache.NewState(m).Forward(gemmaInput, 1)
	if err != nil {
		t.Fatal(err)
	}
	return append([]float32(nil), logits...)
}

// TestLongRoPELlamaCpp (CHAT_LLAMACPP=1) runs the same model in llama.cpp
// at a context within the original one (4,096: short factors) and past it
// (8,192: long factors) and compares 24 greedy ids and their top-2
// log-prob gaps with this app's at the same windows.
func TestLongRoPELlamaCpp(t *testing.T) {
	testmodels.NeedLlamaCpp(t)
	path := writePhi3Long(t)
	m := loadT(t, path)
	const nGen = 24
	for _, n := range []int{4096, 8192} {
		res := testmodels.LlamaCpp(t, testmodels.LlamaCppRequest{Model: path, Prompts: [][]int{gemmaInput}, NGen: nGen, NCtx: n})
		want, top2 := res.Greedy[0], res.Top2[0]
		if len(want) != nGen {
			t.Fatalf("n_ctx %d: llama.cpp gave %d ids, want %d", n, len(want), nGen)
		}
		st := kvcache.NewState(m.ForWindow(n))
		logits, err := st.Forward(gemmaInput, 1)
		if err != nil {
			t.Fatal(err)
		}
		var worst float64
		for i, w := range want {
			lp := logProbs(logits)
			id := argmax(logits)
			if id != w {
				t.Fatalf("n_ctx %d, step %d: greedy id %d, llama.cpp %d (top-2 gap %.4f here, %.4f in llama.cpp)",
					n, i, id, w, topGap(lp), top2[i][0][1]-top2[i][1][1])
			}
			worst = max(worst, math.Abs(topGap(lp)-(top2[i][0][1]-top2[i][1][1])))
			if logits, err = st.Forward([]int{id}, 1); err != nil {
				t.Fatal(err)
			}
		}
		t.Logf("n_ctx %d: %d greedy ids equal to llama.cpp's; top-2 gaps within %.2g", n, nGen, worst)
		if worst > 1e-3 {
			t.Errorf("n_ctx %d: top-2 gaps differ from llama.cpp's by %.2g", n, worst)
		}
	}
}

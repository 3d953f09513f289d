package llama

import (
	"math/rand/v2"
	"slices"
	"testing"

	"chat/engine/kvcache"
	"chat/models"
	"chat/models/gguf"
)

// TestPagedMatchesContiguous: for every architecture case (sliding windows
// and soft-caps included), a paged State over 3-position blocks gives
// bit-identical logits to the contiguous State through a chunked prefill,
// decode, truncation and a diverging fork (copy-on-write), and a paged decode
// step allocates nothing.
func TestPagedMatchesContiguous(t *testing.T) {
	for _, c := range archCases {
		t.Run(c.name, func(t *testing.T) {
			m := loadT(t, writeCase(t, c.spec, gguf.TypeF32, c.edit))
			lay := m.KVLayout()
			ctx := m.Info().ContextLength
			pool, err := kvcache.NewPool(kvcache.Layout{Layers: lay.Layers, KDim: lay.KDim, VDim: lay.VDim}, 3, 2*ctx)
			if err != nil {
				t.Fatal(err)
			}
			seq := pool.NewSeq(ctx)
			ps, cs := m.NewPagedState(seq), m.NewState()
			r := rand.New(rand.NewPCG(1, 2))
			ids := func(n int) []int {
				out := make([]int, n)
				for i := range out {
					out[i] = r.IntN(m.cfg.Vocab)
				}
				return out
			}
			same := func(what string, in []int, rows int, a, b models.State) {
				t.Helper()
				x, err1 := a.Forward(in, rows)
				x = slices.Clone(x)
				y, err2 := b.Forward(in, rows)
				if err1 != nil || err2 != nil {
					t.Fatalf("%s: %v / %v", what, err1, err2)
				}
				if !slices.Equal(x, y) || a.Len() != b.Len() {
					t.Fatalf("%s: logits differ (max %g), len %d vs %d", what, maxDiff(x, y), a.Len(), b.Len())
				}
			}
			var hist []int
			feed := func(what string, in []int, rows int) {
				t.Helper()
				same(what, in, rows, ps, cs)
				hist = append(hist, in...)
			}
			pre := min(maxBatch+6, ctx/2)
			feed("prefill", ids(pre), 2)
			for range 4 {
				feed("decode", ids(1), 1)
			}
			ps.Truncate(pre - 1)
			cs.Truncate(pre - 1)
			hist = hist[:pre-1]
			feed("after truncate", ids(2), 2)

			fork := seq.Fork()
			fs, fc := m.NewPagedState(fork), m.NewState()
			if _, err := fc.Forward(hist, 1); err != nil {
				t.Fatal(err)
			}
			same("fork diverges", ids(2), 1, fs, fc)
			feed("original continues", ids(2), 2)
			same("fork again", ids(1), 1, fs, fc)

			tok := []int{5}
			n := ps.Len()
			if a := testing.AllocsPerRun(10, func() {
				ps.Truncate(n)
				if _, err := ps.Forward(tok, 1); err != nil {
					t.Fatal(err)
				}
			}); a != 0 {
				t.Fatalf("paged decode: %v allocs", a)
			}
			if _, err := ps.Forward(make([]int, ctx), 1); err == nil {
				t.Fatal("Forward past the context accepted")
			}
			seq.Free()
			fork.Free()
			if pool.Used() != 0 {
				t.Fatalf("%d blocks leaked", pool.Used())
			}
		})
	}
}

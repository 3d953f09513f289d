package course

import (
	"math/rand/v2"
	"slices"
	"testing"

	"chat/models"
	"chat/models/kvcache"
	"chat/models/modeltest"
)

// TestSmallBlocksMatch: for every synthetic architecture, a sequence over
// 3-position blocks (so attention runs cross block edges) gives bit-identical
// logits to the default private cache through prefill, decode, truncation
// (rollback) and a fork that diverges (copy-on-write), and a decode step
// allocates nothing.
func TestSmallBlocksMatch(t *testing.T) {
	for name, raw := range synthConfigs() {
		t.Run(name, func(t *testing.T) {
			m := synthModel(t, raw, 3)
			lay := m.KVLayout()
			pool, err := kvcache.NewPool(kvcache.Layout{Layers: lay.Layers, KDim: lay.KDim, VDim: lay.VDim}, 3, 40)
			if err != nil {
				t.Fatal(err)
			}
			seq := pool.NewSeq(m.cfg.Ctx)
			ps, cs := models.NewState(m, seq), kvcache.NewState(m)
			r := rand.New(rand.NewPCG(1, 2))
			same := func(what string, ids []int, rows int, a, b *models.State) {
				t.Helper()
				x, err1 := a.Forward(ids, rows)
				x = slices.Clone(x)
				y, err2 := b.Forward(ids, rows)
				if err1 != nil || err2 != nil {
					t.Fatalf("%s: %v / %v", what, err1, err2)
				}
				if !slices.Equal(x, y) || a.Len() != b.Len() {
					t.Fatalf("%s: logits differ (max %g), len %d vs %d", what, maxAbsDiff(x, y), a.Len(), b.Len())
				}
			}
			var hist []int
			feed := func(what string, ids []int, rows int) {
				t.Helper()
				same(what, ids, rows, ps, cs)
				hist = append(hist, ids...)
			}
			feed("prefill", randTokens(r, 7, 97), 2)
			for range 5 {
				feed("decode", randTokens(r, 1, 97), 1)
			}
			ps.Truncate(8)
			cs.Truncate(8)
			hist = hist[:8]
			feed("after truncate", randTokens(r, 3, 97), 3) // 11: a partial last block

			fork := seq.Fork()
			fs, fc := models.NewState(m, fork), kvcache.NewState(m)
			if _, err := fc.Forward(hist, 1); err != nil {
				t.Fatal(err)
			}
			same("fork diverges", randTokens(r, 2, 97), 1, fs, fc)
			feed("original continues", randTokens(r, 2, 97), 2)
			same("fork again", randTokens(r, 1, 97), 1, fs, fc)
			feed("original again", randTokens(r, 1, 97), 1)
			if _, err := fc.Forward(nil, 1); err == nil {
				t.Fatal("empty Forward accepted")
			}

			tok := []int{5}
			n := ps.Len()
			if a := testing.AllocsPerRun(10, func() {
				ps.Truncate(n)
				if _, err := ps.Forward(tok, 1); err != nil {
					t.Fatal(err)
				}
			}); a != 0 {
				t.Fatalf("decode: %v allocs", a)
			}
			if _, err := ps.Forward(make([]int, m.cfg.Ctx), 1); err == nil {
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

// TestBatchAlone: for every synthetic architecture, 8 sequences in shared
// batches compute what each computes alone (modeltest.CheckBatch), over a
// float32 KV cache and over int8, fp8 and int4 ones.
func TestBatchAlone(t *testing.T) {
	for name, raw := range synthConfigs() {
		for _, kv := range []kvcache.Format{kvcache.F32, kvcache.Int8, kvcache.FP8, kvcache.Int4} {
			t.Run(name+"/kv-"+kv.String(), func(t *testing.T) {
				modeltest.CheckBatch(t, synthModel(t, raw, 5), 97, kv)
			})
		}
	}
}

// TestPoolFull: a Forward the pool cannot hold fails cleanly and leaves the
// state as it was.
func TestPoolFull(t *testing.T) {
	m := synthModel(t, synthConfigs()["modern"], 3)
	lay := m.KVLayout()
	pool, _ := kvcache.NewPool(kvcache.Layout{Layers: lay.Layers, KDim: lay.KDim, VDim: lay.VDim}, 4, 2)
	s := models.NewState(m, pool.NewSeq(m.cfg.Ctx))
	if _, err := s.Forward([]int{1, 2, 3, 4, 5, 6}, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Forward([]int{1, 2, 3}, 1); err == nil || s.Len() != 6 {
		t.Fatalf("full pool: err %v, len %d", err, s.Len())
	}
}

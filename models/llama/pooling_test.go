package llama

import (
	"path/filepath"
	"testing"

	"chat/models"
	"chat/models/gguf"
	"chat/models/gguf/gguftest"
	"chat/models/testmodels"
)

// A file's pooling_type (llama.cpp's: 0 none, 1 mean, 2 cls, 3 last, 4
// rank) is the model's Pooling; a file without one pools by the mean. A
// last-pooled model's embedding is its last position's state, which a
// mean-pooled model of the same weights gives as n·E(ids) − (n−1)·E(ids[:n−1]).
func TestPoolingType(t *testing.T) {
	src := testmodels.Path(t, "stories260K/stories260K.gguf")
	plain, err := Load(src)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if p := plain.Info().Pooling; p != models.PoolMean {
		t.Fatalf("no pooling_type: %d, want the mean", p)
	}
	ids := []int{1, 403, 407, 261, 400}
	mean5, err := plain.Embed(ids)
	if err != nil {
		t.Fatal(err)
	}
	mean4, _ := plain.Embed(ids[:4])
	for typ, want := range map[uint32]models.Pooling{0: models.PoolMean, 1: models.PoolMean, 2: models.PoolCLS, 3: models.PoolLast, 4: models.PoolRank, 9: models.PoolRank} {
		path := filepath.Join(t.TempDir(), "pooled.gguf")
		gguftest.WithMeta(t, src, path, func(kv []gguf.KV) []gguf.KV {
			return append(kv, gguf.KV{Key: "llama.pooling_type", Type: gguf.Uint32, Value: typ})
		})
		m, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if got := m.Info().Pooling; got != want {
			t.Errorf("pooling_type %d: %d, want %d", typ, got, want)
		}
		if want == models.PoolLast {
			last, err := m.Embed(ids)
			if err != nil {
				t.Fatal(err)
			}
			for j := range last {
				d := 5*float64(mean5[j]) - 4*float64(mean4[j])
				if diff := d - float64(last[j]); diff > 1e-4 || diff < -1e-4 {
					t.Fatalf("last pooling, element %d: %v, the means give %v", j, last[j], d)
				}
			}
		}
		m.Close()
	}
}

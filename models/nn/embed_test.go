package nn

import (
	"math/rand/v2"
	"testing"

	"chat/models"
	"chat/models/kvcache"
	"chat/models/weights"
)

// embedArch is a model whose final hidden state of token t at position p
// is RMSNorm(table[t]·(1+p)), and whose output matrix is the identity, so
// its logits are those rows themselves.
type embedArch struct {
	Table [][]float32
	Norm  []float32
	Out   weights.Linear
}

func (a *embedArch) Forward(p *Pass) {
	x := p.Alloc(len(a.Norm))
	for i, t := range p.Tokens {
		for j, v := range a.Table[t] {
			x.Row(i)[j] = v * float32(1+p.Pos[i])
		}
	}
	p.Logits(a.Out, p.RMSNorm(p.Wanted(x), a.Norm, 1e-5))
}

// Embed is the mean over positions of the rows Logits takes, in chunks
// (more tokens than MaxChunk): the logits of every row of a plain forward
// pass, through an identity output matrix, averaged; pooled by the first or
// the last position (Info.Pooling), that row's.
func TestEmbedIsTheMeanOfTheOutputsInput(t *testing.T) {
	const dim, ctx = 8, 300
	rng := rand.New(rand.NewPCG(1, 2))
	a := &embedArch{Norm: make([]float32, dim)}
	eye := make([]float32, dim*dim)
	for i := range dim {
		eye[i*dim+i] = 1
		a.Norm[i] = 0.5 + rng.Float32()
		a.Table = append(a.Table, nil)
	}
	for i := range a.Table {
		for range dim {
			a.Table[i] = append(a.Table[i], rng.Float32()*2-1)
		}
	}
	a.Out = weights.NewF32(eye, dim, dim)
	m := NewModel(a, models.Info{Name: "embed-test", VocabSize: dim, ContextLength: ctx, Embed: dim}, nil,
		models.KVLayout{Layers: 1, KDim: dim, VDim: dim, Heads: 1})
	for _, n := range []int{1, 5, MaxChunk + 7, ctx} {
		ids := make([]int, n)
		for i := range ids {
			ids[i] = rng.IntN(dim)
		}
		got, err := m.Embed(ids)
		if err != nil {
			t.Fatal(err)
		}
		st := kvcache.NewState(m)
		logits, err := st.Forward(ids, n)
		if err != nil {
			t.Fatal(err)
		}
		for j := range dim {
			var s float64
			for i := range n {
				s += float64(logits[i*dim+j])
			}
			if want := float32(s / float64(n)); got[j] != want {
				t.Fatalf("%d tokens: element %d is %v, the mean of the output's inputs %v", n, j, got[j], want)
			}
		}
	}
	// Pooled by the first or the last position: that row's logits.
	ids := []int{3, 1, 4, 1, 5}
	logits, err := kvcache.NewState(m).Forward(ids, len(ids))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		pool models.Pooling
		row  int
	}{{models.PoolCLS, 0}, {models.PoolLast, len(ids) - 1}} {
		p := NewModel(a, models.Info{Name: "embed-test", VocabSize: dim, ContextLength: ctx, Embed: dim, Pooling: c.pool}, nil,
			models.KVLayout{Layers: 1, KDim: dim, VDim: dim, Heads: 1})
		got, err := p.Embed(ids)
		if err != nil {
			t.Fatal(err)
		}
		for j := range dim {
			if got[j] != logits[c.row*dim+j] {
				t.Fatalf("pooling %d: element %d is %v, row %d's %v", c.pool, j, got[j], c.row, logits[c.row*dim+j])
			}
		}
	}
	rank := NewModel(a, models.Info{Name: "embed-test", VocabSize: dim, ContextLength: ctx, Pooling: models.PoolRank}, nil,
		models.KVLayout{Layers: 1, KDim: dim, VDim: dim, Heads: 1})
	if _, err := rank.Embed(ids); err == nil {
		t.Error("a reranker's pooling embedded")
	}
	if _, err := m.Embed(make([]int, ctx+1)); err == nil {
		t.Error("embedded more tokens than the context")
	}
	if _, err := m.Embed(nil); err == nil {
		t.Error("embedded nothing")
	}
}

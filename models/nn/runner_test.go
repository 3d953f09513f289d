package nn

import (
	"math"
	"math/rand/v2"
	"runtime"
	"strings"
	"testing"

	"chat/models"
	"chat/models/modeltest"
	"chat/models/weights"
)

// TestLongPrefillTakesGEMM: the batch check every architecture runs has a
// prefill long enough for the GEMM, so it checks that path batched too.
func TestLongPrefillTakesGEMM(t *testing.T) {
	if modeltest.LongPrefill < PrefillMinTokens {
		t.Fatalf("modeltest.LongPrefill = %d tokens, below PrefillMinTokens = %d", modeltest.LongPrefill, PrefillMinTokens)
	}
}

// echo is an Arch whose logits row for a token is its position in every
// column, with the scratch arena exercised.
type echo struct{ out weights.Linear }

func (e *echo) Forward(p *Pass) {
	x := p.Alloc(3)
	for i := range p.Tokens {
		x.Row(i)[0] = float32(p.Pos[i])
	}
	h := p.Wanted(x)
	p.Logits(e.out, h)
}

// ones is a [vocab][3] matrix that copies column 0 of its input.
type ones struct{ rows int }

func (o ones) Rows() int      { return o.rows }
func (o ones) Cols() int      { return 3 }
func (o ones) Format() string { return "test" }
func (o ones) Bytes() int64   { return 0 }
func (o ones) Mul(out, x []float32, n int, _ *weights.Scratch) {
	for t := 0; t < n; t++ {
		for r := 0; r < o.rows; r++ {
			out[t*o.rows+r] = x[t*3]
		}
	}
}
func (o ones) Row(dst []float32, r int)        {}
func (o ones) Slice(r0, r1 int) weights.Linear { return o }

// kv is a KV that counts positions only.
type kv struct{ n, cap int }

func (k *kv) Len() int       { return k.n }
func (k *kv) Cap() int       { return k.cap }
func (k *kv) BlockSize() int { return 4 }
func (k *kv) Append(n int) error {
	k.n += n
	return nil
}
func (k *kv) Truncate(n int)                                    { k.n = min(k.n, n) }
func (k *kv) WriteRow(l, pos int, a, b []float32)               {}
func (k *kv) Keys(l, i, j int, s []float32) ([]float32, int)    { return nil, 1 }
func (k *kv) Values(l, i, j int, s []float32) ([]float32, int)  { return nil, 1 }
func (k *kv) KeysStored(l, i, j int) (models.StoredRows, int)   { return models.StoredRows{}, 0 }
func (k *kv) ValuesStored(l, i, j int) (models.StoredRows, int) { return models.StoredRows{}, 0 }

// TestRunnerBatches: a batch longer than MaxChunk runs in chunks and
// returns the wanted rows in batch order; bad batches are refused without
// touching any cache; a steady decode step allocates nothing.
func TestRunnerBatches(t *testing.T) {
	r := NewRunner(&echo{out: ones{2}}, 2)
	a, b := &kv{cap: 500}, &kv{n: 5, cap: 500}
	var batch models.Batch
	for i := 0; i < 150; i++ {
		batch.Add(0, i, 1, i%50 == 49)
	}
	batch.Add(1, 5, 1, true)
	out, err := r.Forward(&batch, []models.KV{a, b})
	if err != nil {
		t.Fatal(err)
	}
	want := []float32{49, 49, 99, 99, 149, 149, 5, 5}
	if len(out) != len(want) || a.Len() != 150 || b.Len() != 6 {
		t.Fatalf("logits %v, lens %d %d", out, a.Len(), b.Len())
	}
	for i := range want {
		if out[i] != want[i] {
			t.Fatalf("logits %v, want %v", out, want)
		}
	}
	for name, c := range map[string]struct {
		b    models.Batch
		want string
	}{
		"gap":       {models.Batch{Tokens: []int{1}, Pos: []int{7}, Seq: []int{1}, Logits: []bool{true}}, "continues at 6"},
		"bad id":    {models.Batch{Tokens: []int{2}, Pos: []int{150}, Seq: []int{0}, Logits: []bool{true}}, "out of range"},
		"bad seq":   {models.Batch{Tokens: []int{1}, Pos: []int{0}, Seq: []int{2}, Logits: []bool{true}}, "sequence 2"},
		"too long":  {models.Batch{Tokens: make([]int, 400), Pos: seqPos(150, 400), Seq: make([]int, 400), Logits: make([]bool, 400)}, "do not fit"},
		"short pos": {models.Batch{Tokens: []int{1, 1}, Pos: []int{150}, Seq: []int{0, 0}, Logits: []bool{true, true}}, "positions"},
	} {
		if _, err := r.Forward(&c.b, []models.KV{a, b}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v", name, err)
		}
		if a.Len() != 150 || b.Len() != 6 {
			t.Fatalf("%s changed a cache: %d %d", name, a.Len(), b.Len())
		}
	}
	one := models.Batch{}
	one.Add(0, 150, 1, true)
	kvs := []models.KV{a, b}
	if n := testing.AllocsPerRun(20, func() {
		a.n = 150
		if _, err := r.Forward(&one, kvs); err != nil {
			t.Fatal(err)
		}
	}); n != 0 {
		t.Errorf("a decode step allocates %v times", n)
	}
}

func seqPos(from, n int) []int {
	p := make([]int, n)
	for i := range p {
		p[i] = from + i
	}
	return p
}

// TestRowsAdd: Add gives a plain float32 add's bits, every length.
func TestRowsAdd(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for n := 1; n <= 70; n++ {
		x := Rows{N: 1, W: n, D: make([]float32, n)}
		y := Rows{N: 1, W: n, D: make([]float32, n)}
		for i := range n {
			x.D[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(20)-10)))
			y.D[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.IntN(20)-10)))
		}
		want := make([]float32, n)
		for i := range want {
			want[i] = x.D[i] + y.D[i]
		}
		x.Add(y)
		for i, v := range x.D {
			if math.Float32bits(v) != math.Float32bits(want[i]) {
				t.Fatalf("n=%d [%d]: %v, want %v", n, i, v, want[i])
			}
		}
	}
}

// BenchmarkRowsAdd: a batch step's residual add, eight rows of 768.
func BenchmarkRowsAdd(b *testing.B) {
	x := Rows{N: 8, W: 768, D: make([]float32, 8*768)}
	y := Rows{N: 8, W: 768, D: make([]float32, 8*768)}
	for i := range y.D {
		y.D[i] = float32(i%7) * 1e-9
	}
	for b.Loop() {
		x.Add(y)
	}
}

// TestArenaGrowsInPlace: a pass that outgrows its arena (a runner's first)
// grows it at the same offsets, so the rows handed out before stay as they
// were and the later layers reuse the grown arena: its scratch is made
// about once, not once per layer (which the Go heap kept resident).
func TestArenaGrowsInPlace(t *testing.T) {
	p := &Pass{Tokens: make([]int, 64)}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	x := p.Alloc(2048) // the residual stream
	for i := range x.D {
		x.D[i] = 1
	}
	const layers = 16
	for l := 0; l < layers; l++ {
		mark := p.Mark()
		for _, w := range []int{8192, 8192, 2048} {
			y := p.Alloc(w)
			for i := range y.D {
				y.D[i] = 2
			}
		}
		p.Reset(mark)
	}
	runtime.ReadMemStats(&after)
	for i, v := range x.D {
		if v != 1 {
			t.Fatalf("the residual's value %d is %v after the layers", i, v)
		}
	}
	layer := uint64(64 * (8192 + 8192 + 2048) * 4)
	if got := after.TotalAlloc - before.TotalAlloc; got > 4*layer {
		t.Errorf("%d layers of %d bytes of scratch allocated %d bytes", layers, layer, got)
	}
}

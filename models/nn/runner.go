// Package nn is what the architectures share: the forward pass over a batch
// (Runner, Pass), the layers with their exact rounding contracts (norm.go,
// rope.go, attention.go, mlp.go, moe.go), the one attention path
// over paged KV caches, weight binding by struct tags (bind.go), and the
// Model every architecture is wrapped in (model.go).
//
// An architecture is a struct of weights and a Forward method that reads
// top to bottom like llama2.c's forward:
//
//	func (m *Llama) Forward(p *nn.Pass) {
//		x := p.Embed(m.TokenEmbd)
//		for l := range m.Blocks {
//			...
//		}
//		p.Logits(...)
//	}
//
// A Pass is one chunk of a batch: every row of every Rows value is one token,
// possibly of a different sequence at a different position; each weight is
// read once for the whole chunk.
package nn

import (
	"fmt"

	"chat/models"
	"chat/models/kernels"
	"chat/models/weights"
)

// MaxChunk is the most tokens one pass carries; a longer batch (a long
// prefill) runs in chunks, so scratch memory stays small. Splitting changes
// no result: every product gives each row the bits it gives alone.
const MaxChunk = 64

// PrefillMinTokens is the fewest tokens of one sequence in a batch that make
// its rows a prefill, whose float products take the GEMM (Pass.prefill):
// more than a speculative round verifies (1 + 16 guesses), so verification
// keeps the decode's bits and speculative greedy output stays plain
// greedy's; below ~16 tokens the GEMM's panels are part padding and the
// decode's tiles are as fast (kernels/gemm.go).
const PrefillMinTokens = 18

// Rows is a batch of vectors, one per token: row i is D[i*W:(i+1)*W].
type Rows struct {
	N, W int
	D    []float32
}

// Row is row i.
func (x Rows) Row(i int) []float32 { return x.D[i*x.W : (i+1)*x.W : (i+1)*x.W] }

// Add adds y to x, element by element (kernels.Axpy with alpha 1: x+1·y
// rounded once is x+y, the same bits as a plain add).
func (x Rows) Add(y Rows) {
	d := x.D[:x.N*x.W]
	kernels.Axpy(1, y.D[:len(d)], d)
}

// AddBias adds b to every row (nothing when b is nil).
func (x Rows) AddBias(b []float32) {
	if b == nil {
		return
	}
	for i := 0; i < x.N; i++ {
		r := x.Row(i)
		for j, v := range b[:x.W] {
			r[j] += v
		}
	}
}

// Scale multiplies every value by s.
func (x Rows) Scale(s float32) {
	for i := range x.D[:x.N*x.W] {
		x.D[i] *= s
	}
}

// Arch is an architecture: its weights and its forward pass over one chunk.
// Forward reads the tokens, positions and caches from p, and writes the
// logits of the wanted rows with p.Logits.
type Arch interface {
	Forward(p *Pass)
}

// Pass is one forward pass over a chunk of a batch, and its working memory.
type Pass struct {
	Tokens []int       // the chunk's tokens
	Pos    []int       // their positions
	Seq    []int       // their sequences: indexes into KV
	KV     []models.KV // the batch's caches
	want   []bool      // whose logits are wanted
	W      *weights.Scratch

	// prefill marks the rows of sequences with PrefillMinTokens or more
	// tokens in the batch: their float products take the GEMM
	// (weights.Scratch.Prefill). The choice is per sequence, never per
	// chunk or batch, so a sequence batched with others gets its lone bits.
	prefill  []bool
	gathered bool // products run on gathered rows (MoE experts): MatVec's order

	arena  []float32 // scratch rows, handed out by Alloc; kept for the next pass
	off    int
	attn   attnScratch // one sequence's attention (several: attnScratches)
	groups [][2]int    // Attend's query groups
	job    attnJob     // Attend's arguments for attendGroups
	attnFn func(g0, g1 int)
	route  []int // MoE expert choices
	out    *[]float32
	rows   int // logits rows written so far in this Forward
	vocab  int
	// observe, when set, sees each product's matrix and input rows before
	// the product (calibration, calib.go).
	observe func(w weights.Linear, x Rows)
	// hidden, when set, takes the rows Logits would multiply by the output
	// matrix, in its stead (embeddings, embed.go).
	hidden func(h Rows)
}

// N is the number of tokens in the chunk.
func (p *Pass) N() int { return len(p.Tokens) }

// Alloc returns [N][w] scratch rows (contents undefined), valid until the
// arena is Reset below them or the pass ends.
func (p *Pass) Alloc(w int) Rows { return p.AllocN(p.N(), w) }

// AllocN is Alloc for n rows (a subset of the chunk, e.g. an expert's).
func (p *Pass) AllocN(rows, w int) Rows {
	n := rows * w
	if p.off+n > len(p.arena) {
		// A larger arena at the same offsets: the rows handed out so far
		// stay in the old one, and the rest of this pass and the next
		// passes reuse the new one. (Each overflowing row made on its own
		// left a pass's worth of garbage per layer, 72-115 MB for a 1B
		// model's first 64-token pass, which the Go heap kept resident.)
		p.arena = make([]float32, max(2*len(p.arena), p.off+n))
	}
	d := p.arena[p.off : p.off+n : p.off+n]
	p.off += n
	return Rows{N: rows, W: w, D: d}
}

// Mark and Reset free the scratch allocated after a mark: an architecture
// marks before a layer and resets after it, so every layer reuses the same
// memory while the residual stream, allocated before the loop, stays.
func (p *Pass) Mark() int      { return p.off }
func (p *Pass) Reset(mark int) { p.off = mark }

// Mul returns w·x for every row, [N][w.Rows()]. The rows of the chunk's
// prefills and the rest go in separate products (in runs, keeping the rows'
// order): each row's bits depend only on whether its sequence prefills.
func (p *Pass) Mul(w weights.Linear, x Rows) Rows {
	if p.observe != nil {
		p.observe(w, x)
	}
	return p.mul(w, x)
}

// Mul2 is Mul of a and of b, two matrices over the same input (a gated
// feed-forward's gate and up): one product of their fused matrix when they
// are its parts (weights.Whole; see Bind's "fuse" tag), with the same bits.
func (p *Pass) Mul2(a, b weights.Linear, x Rows) (Rows, Rows) {
	w := weights.Whole(a, b)
	if w == nil {
		return p.Mul(a, x), p.Mul(b, x)
	}
	var out [2]Rows
	p.mulParts(w, x, []weights.Linear{a, b}, out[:])
	return out[0], out[1]
}

// Mul3 is Mul2 for three matrices (an attention's Q, K and V).
func (p *Pass) Mul3(a, b, c weights.Linear, x Rows) (Rows, Rows, Rows) {
	w := weights.Whole(a, b, c)
	if w == nil {
		return p.Mul(a, x), p.Mul(b, x), p.Mul(c, x)
	}
	var out [3]Rows
	p.mulParts(w, x, []weights.Linear{a, b, c}, out[:])
	return out[0], out[1], out[2]
}

// mulParts multiplies x by w, whose rows are parts' stacked, into one Rows
// per part. One token's rows are cut out of the product in place; a
// batch's are copied out, each part's rows [N][part.Rows()] as Mul returns
// them, and the product's scratch is free again for the rest of the layer.
func (p *Pass) mulParts(w weights.Linear, x Rows, parts []weights.Linear, out []Rows) {
	if p.observe != nil {
		for _, l := range parts {
			p.observe(l, x)
		}
	}
	if x.N > 1 {
		for i, l := range parts {
			out[i] = p.AllocN(x.N, l.Rows())
		}
	}
	mark := p.Mark()
	y := p.mul(w, x)
	c := 0
	for i, l := range parts {
		r := l.Rows()
		if x.N == 1 {
			out[i] = Rows{N: 1, W: r, D: y.D[c : c+r : c+r]}
		} else {
			for t := 0; t < x.N; t++ {
				copy(out[i].D[t*r:(t+1)*r], y.D[t*y.W+c:t*y.W+c+r])
			}
		}
		c += r
	}
	if x.N > 1 {
		p.Reset(mark)
	}
}

// mul is Mul without the observer.
func (p *Pass) mul(w weights.Linear, x Rows) Rows {
	y := p.AllocN(x.N, w.Rows())
	if p.gathered || x.N != p.N() {
		w.Mul(y.D, x.D, x.N, p.W)
		return y
	}
	R := w.Rows()
	for i := 0; i < x.N; {
		j := i + 1
		for j < x.N && p.prefill[j] == p.prefill[i] {
			j++
		}
		p.W.Prefill = p.prefill[i]
		w.Mul(y.D[i*R:j*R], x.D[i*x.W:j*x.W], j-i, p.W)
		i = j
	}
	p.W.Prefill = false
	return y
}

// Embed returns the embedding rows of the chunk's tokens.
func (p *Pass) Embed(e weights.Linear) Rows {
	x := p.Alloc(e.Cols())
	for i, t := range p.Tokens {
		e.Row(x.Row(i), t)
	}
	return x
}

// Wanted returns a copy of the rows of x whose logits the batch asks for
// (N may be 0).
func (p *Pass) Wanted(x Rows) Rows {
	n := 0
	for _, w := range p.want {
		if w {
			n++
		}
	}
	y := p.AllocN(n, x.W)
	j := 0
	for i, w := range p.want {
		if w {
			copy(y.Row(j), x.Row(i))
			j++
		}
	}
	return y
}

// Logits multiplies the wanted rows h (from Wanted, then normed) by the
// output matrix into the runner's logits, and returns them for any
// post-processing (a bias, a soft-cap), [h.N][Vocab].
func (p *Pass) Logits(out weights.Linear, h Rows) Rows {
	if h.N == 0 {
		return Rows{W: p.vocab}
	}
	if p.hidden != nil {
		p.hidden(h)
		return Rows{W: p.vocab} // no logits: a bias or cap after has none to change
	}
	v := p.vocab
	need := (p.rows + h.N) * v
	if len(*p.out) < need {
		grown := make([]float32, need)
		copy(grown, (*p.out)[:p.rows*v])
		*p.out = grown
	}
	y := Rows{N: h.N, W: v, D: (*p.out)[p.rows*v : need : need]}
	if p.observe != nil {
		p.observe(out, h)
	}
	out.Mul(y.D, h.D, h.N, p.W)
	p.rows += h.N
	return y
}

// Runner runs an Arch over batches: it checks the batch, grows each
// sequence's cache, and feeds the tokens to the Arch a chunk at a time.
type Runner struct {
	arch    Arch
	vocab   int
	p       Pass
	logits  []float32
	count   []int  // tokens per sequence in the batch
	prefill []bool // per token: its sequence prefills (Pass.prefill)
}

// NewRunner returns a runner of arch for a vocabulary of vocab ids.
func NewRunner(arch Arch, vocab int) *Runner {
	return &Runner{arch: arch, vocab: vocab, p: Pass{W: &weights.Scratch{}, vocab: vocab}}
}

// Forward implements models.Runner.
func (r *Runner) Forward(b *models.Batch, kv []models.KV) ([]float32, error) {
	if err := r.check(b); err != nil {
		return nil, err
	}
	// Every sequence's positions are made writable up front; a chunk then
	// only writes rows and attends to rows written by it or an earlier one.
	var err error
	if r.count, err = b.Reserve(kv, r.count); err != nil {
		return nil, fmt.Errorf("nn: %w", err)
	}
	p := &r.p
	p.KV, p.out, p.rows = kv, &r.logits, 0
	if cap(r.prefill) < b.Len() {
		r.prefill = make([]bool, b.Len())
	}
	r.prefill = r.prefill[:b.Len()]
	for i, s := range b.Seq {
		r.prefill[i] = r.count[s] >= PrefillMinTokens
	}
	for c := 0; c < b.Len(); c += MaxChunk {
		e := min(c+MaxChunk, b.Len())
		p.Tokens, p.Pos, p.Seq, p.want = b.Tokens[c:e], b.Pos[c:e], b.Seq[c:e], b.Logits[c:e]
		p.prefill = r.prefill[c:e]
		p.off = 0
		r.arch.Forward(p)
	}
	return r.logits[:p.rows*r.vocab], nil
}

// check validates a batch's shape and ids; Batch.Reserve checks it
// against its caches.
func (r *Runner) check(b *models.Batch) error {
	n := b.Len()
	if n == 0 {
		return fmt.Errorf("nn: empty batch")
	}
	if len(b.Pos) != n || len(b.Seq) != n || len(b.Logits) != n {
		return fmt.Errorf("nn: batch of %d tokens with %d positions, %d sequence ids, %d logits flags", n, len(b.Pos), len(b.Seq), len(b.Logits))
	}
	for _, t := range b.Tokens {
		if t < 0 || t >= r.vocab {
			return fmt.Errorf("nn: token id %d out of range [0, %d)", t, r.vocab)
		}
	}
	return nil
}

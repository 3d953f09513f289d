package nn

import (
	"math"

	"chat/models/kernels"
)

// Attention is one attention layer's geometry and rules.
type Attention struct {
	Heads, KVHeads int
	DK, DV         int     // key (and query) and value width per head
	Scale          float32 // multiplies the scores (1 when the queries were scaled instead)
	// Window attends to the last Window positions only (sliding-window
	// layers); 0 attends to all.
	Window int
	// Softcap caps the scores as cap·tanh(s/cap) before the softmax (Gemma
	// 2); 0 is off.
	Softcap float32
}

// KVHead is the grouped-query mapping: query head h reads key/value head
// h / (Heads/KVHeads), as torch's repeat_interleave and ggml's broadcast do.
// It is the only place the mapping is written.
func (a *Attention) KVHead(h int) int { return h / (a.Heads / a.KVHeads) }

// Attend stores the chunk's keys k [N][KVHeads·DK] and values v
// [N][KVHeads·DV] in layer l of each token's cache, then returns each
// token's attention over its own sequence: for query q [N][Heads·DK], per
// head, softmax(q·k·Scale) over the positions it may see, times v,
// [N][Heads·DV]. This is the one attention loop: every cache, float32 or
// quantised, contiguous or shared, is read a block at a time through
// models.KV.
func (p *Pass) Attend(l int, a *Attention, q, k, v Rows) Rows {
	for i := 0; i < q.N; i++ {
		p.KV[p.Seq[i]].WriteRow(l, p.Pos[i], k.Row(i), v.Row(i))
	}
	out := p.AllocN(q.N, a.Heads*a.DV)
	for i := 0; i < q.N; i++ {
		p.attendOne(out.Row(i), q.Row(i), l, a, p.Seq[i], p.Pos[i])
	}
	return out
}

// attendOne is the attention of one query row at position pos of sequence
// seq over positions lo..pos. The cache is read a run of blocks at a time
// (models.KV.Keys): every head scores a run's keys while they are in cache,
// then every head mixes its values.
func (p *Pass) attendOne(out, q []float32, l int, a *Attention, seq, pos int) {
	kv := p.KV[seq]
	lo := 0
	if a.Window > 0 {
		lo = max(0, pos-a.Window+1)
	}
	n := pos + 1 - lo // positions seen
	bs := kv.BlockSize()
	kw, vw := a.KVHeads*a.DK, a.KVHeads*a.DV
	if len(p.scores) < a.Heads*n {
		p.scores = make([]float32, 2*a.Heads*max(n, 256)) // doubling: a long decode grows it rarely
	}
	if len(p.kb) < bs*kw || len(p.vb) < bs*vw {
		p.kb, p.vb = make([]float32, bs*kw), make([]float32, bs*vw)
	}
	end := pos/bs + 1 // blocks to read: lo/bs .. end-1
	for b := lo / bs; b < end; {
		kb, nb := kv.Keys(l, b, end, p.kb)
		base := b * bs
		t0, t1 := max(lo, base), min(pos+1, base+nb*bs)
		for h := 0; h < a.Heads; h++ {
			kernels.AttnScores(p.scores[h*n+t0-lo:], q[h*a.DK:(h+1)*a.DK], kb[(t0-base)*kw+a.KVHead(h)*a.DK:], kw, t1-t0, a.Scale)
		}
		b += nb
	}
	for h := 0; h < a.Heads; h++ {
		sc := p.scores[h*n : (h+1)*n]
		if a.Softcap != 0 {
			softcap(sc, a.Softcap)
		}
		kernels.Softmax(sc)
		clear(out[h*a.DV : (h+1)*a.DV])
	}
	for b := lo / bs; b < end; {
		vb, nb := kv.Values(l, b, end, p.vb)
		base := b * bs
		t0, t1 := max(lo, base), min(pos+1, base+nb*bs)
		for h := 0; h < a.Heads; h++ {
			kernels.AttnMixAdd(out[h*a.DV:(h+1)*a.DV], p.scores[h*n+t0-lo:], vb[(t0-base)*vw+a.KVHead(h)*a.DV:], vw, t1-t0)
		}
		b += nb
	}
}

// softcap is Gemma 2's cap·tanh(x/cap), as three ggml ops: scale by 1/cap,
// tanh, scale by cap.
func softcap(x []float32, cap float32) {
	inv := 1 / cap
	for i, v := range x {
		x[i] = float32(math.Tanh(float64(v*inv))) * cap
	}
}

// Softcap applies cap·tanh(x/cap) to every value of x (Gemma 2's final
// logits).
func Softcap(x Rows, cap float32) { softcap(x.D[:x.N*x.W], cap) }

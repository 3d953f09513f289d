package nn

import (
	"math"
	"sync"

	"chat/models"
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
	// A group's work is about the positions its queries see. With several
	// threads no group takes more than half a thread's share, so that a
	// long prompt's chunk beside a batch's decode tokens does not leave all
	// its work to one thread, while each group still reads the cache once
	// for as many queries as it can (grouping changes no bits: each query's
	// kernel calls are its own).
	work := 0
	for i := range q.N {
		work += p.Pos[i] + 1
	}
	most := work
	if t := kernels.Threads(); t > 1 {
		most = max(work/(2*t), 1)
	}
	p.groups = p.groups[:0]
	for i := 0; i < q.N; {
		j, w := i+1, p.Pos[i]+1 // queries i..j-1: consecutive positions of one sequence
		for j < q.N && j-i < attnGroup && p.Seq[j] == p.Seq[i] && p.Pos[j] == p.Pos[j-1]+1 && w+p.Pos[j]+1 <= most {
			w += p.Pos[j] + 1
			j++
		}
		p.groups = append(p.groups, [2]int{i, j})
		i = j
	}
	if len(p.groups) == 1 {
		p.attendGroup(&p.attn, out, q, 0, q.N, l, a)
		return out
	}
	// Several groups (a batch of sequences): on the compute threads, each
	// thread with its own scratch. A group's kernel calls are the same on
	// any thread, so its bits are too.
	p.job = attnJob{l: l, a: a, q: q, out: out}
	if p.attnFn == nil {
		p.attnFn = p.attendGroups
	}
	kernels.Parallel(len(p.groups), p.attnFn)
	p.job = attnJob{}
	return out
}

// attnJob is what attendGroups needs of an Attend call.
type attnJob struct {
	l      int
	a      *Attention
	q, out Rows
}

// attnScratch is the buffers of one thread's attention.
type attnScratch struct {
	scores []float32          // attention scores [queries][Heads][positions]
	kb, vb []float32          // a dequantised key and value block
	kvh    []int32            // each query head's KV head (KVHead), for the kernels
	group  kernels.QueryGroup // a group's queries, for the group kernels
}

var attnScratches = sync.Pool{New: func() any { return new(attnScratch) }}

// attendGroups runs Attend's groups g0..g1-1 (kernels.Parallel's chunk).
func (p *Pass) attendGroups(g0, g1 int) {
	s := attnScratches.Get().(*attnScratch)
	for _, g := range p.groups[g0:g1] {
		p.attendGroup(s, p.job.out, p.job.q, g[0], g[1], p.job.l, p.job.a)
	}
	attnScratches.Put(s)
}

// attnGroup is the most queries of one sequence that read a block together:
// a quantised cache decodes each block once for all of them rather than
// once per query (the scores take attnGroup·Heads·positions floats), and
// the group kernels take them at once, a query a lane of a zmm.
const attnGroup = kernels.MaxGroup

// attendGroup is the attention of query rows i..j-1, consecutive positions
// of one sequence, each over positions lo..pos it may see. The cache is
// read a run of blocks at a time (models.KV.Keys; KeysStored for the f16
// and quantised caches, whose rows are read as stored), every head of a
// row at a time: every query and head scores a run's keys while they are
// in cache, then every query and head mixes its values. Several queries
// over float32 rows take the group kernels (kernels.AttnScoresGroupF32 and
// AttnMixGroupF32), one query or stored rows the row kernels
// (kernels.AttnScoresRowsF32 and its f16, int8, fp8 and int4 twins). Each
// query gets the bits it gets alone: the group kernels are held to the row
// kernels.
func (p *Pass) attendGroup(sc *attnScratch, out, q Rows, i, j, l int, a *Attention) {
	kv := p.KV[p.Seq[i]]
	bs := kv.BlockSize()
	kw, vw := a.KVHeads*a.DK, a.KVHeads*a.DV
	// Query i+r sees positions g[r].lo..g[r].pos. Every query's scores of
	// a head span the group's positions lo0..lo0+n-1 alike, as the group
	// kernels take them: its score of head h for position t is
	// sc.scores[r*qs+h*n+t-lo0], qs = Heads·n.
	var spans [attnGroup]struct{ lo, pos int }
	g := spans[:j-i]
	for r := range g {
		pos := p.Pos[i+r]
		lo := 0
		if a.Window > 0 {
			lo = max(0, pos-a.Window+1)
		}
		g[r].lo, g[r].pos = lo, pos
	}
	lo0, last := g[0].lo, g[len(g)-1].pos
	n := last + 1 - lo0
	qs := a.Heads * n
	if len(sc.scores) < len(g)*qs {
		sc.scores = make([]float32, 2*max(len(g)*qs, a.Heads*256)) // doubling: a long decode grows it rarely
	}
	if len(sc.kb) < bs*kw || len(sc.vb) < bs*vw {
		sc.kb, sc.vb = make([]float32, bs*kw), make([]float32, bs*vw)
	}
	if len(sc.kvh) != a.Heads {
		sc.kvh = make([]int32, a.Heads)
	}
	for h := range a.Heads {
		sc.kvh[h] = int32(a.KVHead(h))
	}
	group := len(g) > 1
	if group {
		sc.group.Pack(q.D[i*q.W:], q.W, len(g), a.Heads, a.DK)
	}
	// The rows of a run (positions base..) that the group sees, t0..t1-1,
	// and each query's among them, from[r]..to[r]-1 counted from t0.
	var from, to [attnGroup]int32
	rows := func(base, nb int) (t0, t1 int) {
		t0, t1 = max(lo0, base), min(last+1, base+nb*bs)
		for r, s := range g {
			from[r] = int32(min(max(s.lo, t0), t1) - t0)
			to[r] = int32(max(min(s.pos+1, t1), t0) - t0)
		}
		return t0, t1
	}
	end := last/bs + 1 // blocks to read: lo0/bs .. end-1
	for b := lo0 / bs; b < end; {
		// f16, int8, fp8 and int4 rows are read as they lie (inPlace says
		// when), else decoded into float32 (or float32 already); every
		// format every head of a row at a time, in memory order (a head at
		// a time strides through memory, which the hardware prefetchers do
		// not follow).
		stop := runEnd(b, end, bs, len(g))
		ks, nb := kv.KeysStored(l, b, stop)
		var kb []float32
		if !inPlace(ks, nb*bs, a.KVHeads, a.DK, len(g), kernels.GroupScoresAsm(len(g), a.DK)) {
			ks = models.StoredRows{}
			kb, nb = kv.Keys(l, b, stop, sc.kb)
		}
		base := b * bs
		t0, t1 := rows(base, nb)
		if group && kb != nil {
			kernels.AttnScoresGroupF32(sc.scores[t0-lo0:], qs, n, &sc.group, kb[(t0-base)*kw:], kw, sc.kvh, from[:len(g)], to[:len(g)], t1-t0, a.Scale)
			b += nb
			continue
		}
		for r := range g {
			if from[r] == to[r] {
				continue
			}
			u0, u1 := t0+int(from[r]), t0+int(to[r])
			qr, scores, at := q.Row(i + r)[:a.Heads*a.DK], sc.scores[r*qs+u0-lo0:], (u0-base)*kw
			switch {
			case ks.F16 != nil:
				kernels.AttnScoresRowsF16(scores, n, qr, ks.F16[at:], kw, sc.kvh, u1-u0, a.Scale)
			case ks.I8 != nil:
				kernels.AttnScoresRowsI8(scores, n, qr, ks.I8[at:], kw, ks.Scales[(u0-base)*a.KVHeads:], a.KVHeads, sc.kvh, u1-u0, a.Scale)
			case ks.FP8 != nil:
				kernels.AttnScoresRowsFP8(scores, n, qr, ks.FP8[at:], kw, ks.Scales[(u0-base)*a.KVHeads:], a.KVHeads, sc.kvh, u1-u0, a.Scale)
			case ks.I4 != nil:
				rb, rs := len(ks.I4)/(nb*bs), len(ks.Scales)/(nb*bs) // a row's code bytes and scales
				kernels.AttnScoresRowsI4(scores, n, qr, ks.I4[(u0-base)*rb:], rb, ks.Scales[(u0-base)*rs:], a.KVHeads, sc.kvh, u1-u0, a.Scale)
			default:
				kernels.AttnScoresRowsF32(scores, n, qr, kb[at:], kw, sc.kvh, u1-u0, a.Scale)
			}
		}
		b += nb
	}
	for r, s := range g {
		o := out.Row(i + r)
		for h := 0; h < a.Heads; h++ {
			at := r*qs + h*n - lo0
			sc := sc.scores[at+s.lo : at+s.pos+1]
			if a.Softcap != 0 {
				softcap(sc, a.Softcap)
			}
			kernels.Softmax(sc)
			clear(o[h*a.DV : (h+1)*a.DV])
		}
	}
	for b := lo0 / bs; b < end; {
		stop := runEnd(b, end, bs, len(g))
		vs, nb := kv.ValuesStored(l, b, stop)
		var vb []float32
		if !inPlace(vs, nb*bs, a.KVHeads, a.DV, len(g), kernels.GroupMixAsm(len(g), a.DV)) {
			vs = models.StoredRows{}
			vb, nb = kv.Values(l, b, stop, sc.vb)
		}
		base := b * bs
		t0, t1 := rows(base, nb)
		if group && vb != nil {
			kernels.AttnMixGroupF32(out.D[i*out.W:], out.W, a.DV, sc.scores[t0-lo0:], qs, n, vb[(t0-base)*vw:], vw, sc.kvh, from[:len(g)], to[:len(g)], t1-t0)
			b += nb
			continue
		}
		for r := range g {
			if from[r] == to[r] {
				continue
			}
			u0, u1 := t0+int(from[r]), t0+int(to[r])
			o, w, at := out.Row(i + r)[:a.Heads*a.DV], sc.scores[r*qs+u0-lo0:], (u0-base)*vw
			switch {
			case vs.F16 != nil:
				kernels.AttnMixRowsF16(o, w, n, vs.F16[at:], vw, sc.kvh, u1-u0)
			case vs.I8 != nil:
				kernels.AttnMixRowsI8(o, w, n, vs.I8[at:], vw, vs.Scales[(u0-base)*a.KVHeads:], a.KVHeads, sc.kvh, u1-u0)
			case vs.FP8 != nil:
				kernels.AttnMixRowsFP8(o, w, n, vs.FP8[at:], vw, vs.Scales[(u0-base)*a.KVHeads:], a.KVHeads, sc.kvh, u1-u0)
			case vs.I4 != nil:
				rb, rs := len(vs.I4)/(nb*bs), len(vs.Scales)/(nb*bs)
				kernels.AttnMixRowsI4(o, w, n, vs.I4[(u0-base)*rb:], rb, vs.Scales[(u0-base)*rs:], a.KVHeads, sc.kvh, u1-u0)
			default:
				kernels.AttnMixRowsF32(o, w, n, vb[at:], vw, sc.kvh, u1-u0)
			}
		}
		b += nb
	}
}

// runEnd bounds a run of blocks read from block b (before end) for a group
// of queries: one query streams the whole run, but several read it once
// each, so their run must stay in cache between them (a 984-token prompt's
// float32 keys are 3 MB a layer; its chunks' attention, each query reading
// them from memory, went from 17 to 48 ms a step as the prompt grew).
// Splitting a run changes no bits: scores are per row, and a mix adds its
// rows in order across calls.
func runEnd(b, end, bs, queries int) int {
	if queries == 1 {
		return end
	}
	return min(end, b+max(attnRunRows/bs, 1))
}

// attnRunRows is the most rows a group of queries reads as one run: 64
// rows of 12 float32 heads of 64 are 192 KB of keys, well inside a core's
// L2.
const attnRunRows = 64

// inPlace reports whether attention reads stored rows as they are, for a
// group of queries queries, group telling whether they take the group
// kernel over float32 rows: f16 rows unless they do (decoding a run into
// float32 is exact, and the group kernels repay it: a 1000-token f16-KV
// prefill of bench110M Q8_0 went from 1054-1101 tokens/s in place to
// 1318-1381 decoded); int8 and E4M3 rows with a scale per position and KV
// head for one query (decode), since each query decodes them again, and a
// prefill chunk's queries are better served by decoding a block once into
// float32 (a 128-token int8 prefill of bench110M Q8_0: 87-93 ms in place
// against 83-87 decoded; float32 75-78); int4 rows, a scale per 32 values
// of a head of d, likewise.
func inPlace(st models.StoredRows, rows, kvHeads, d, queries int, group bool) bool {
	perHead := 1
	if st.I4 != nil {
		_, perHead = kernels.Int4KVHead(d)
	}
	return st.F16 != nil && !group || (st.I8 != nil || st.FP8 != nil || st.I4 != nil) && queries == 1 && len(st.Scales) == rows*kvHeads*perHead
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

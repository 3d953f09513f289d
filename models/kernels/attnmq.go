package kernels

import "unsafe"

// A prefill chunk's attention is groups of up to 16 consecutive queries of
// one sequence (nn.attendGroup) reading the same cached rows. Alone, each
// (query, key) score is one head-wide dot ending in a horizontal sum (about
// 18 MACs/ns on a Zen 5 core); here a group's queries lie in the 16 lanes
// of a zmm, so one FMA multiplies a key element by 16 queries' and nothing
// is summed across lanes, and a mix loads each value row once for several
// queries' outputs (attnmq_gen.py writes the AVX-512 kernels). Each query
// gets exactly the bits it gets alone from AttnScoresRowsF32 and
// AttnMixRowsF32: a lane runs that kernel's eight FMA chains and sum tree,
// and an output element takes its rows' FMAs in row order. Without
// AVX-512, or for head widths the kernels do not take, the group functions
// are those per-query calls.

// MaxGroup is the most queries a group function takes.
const MaxGroup = 16

// The fewest queries the group kernels take. The scores kernel costs the
// same for any number of queries (16 lanes), so it pays from 5 on
// (BenchmarkAttnGroup at 12 heads of 64, ns per query and row: 4 queries
// 49 against 45 per query, 5 queries 39 against 44); the mix costs about
// what its queries do, and from 2 on is faster (17 against 45).
const (
	mqScoresMin = 5
	mqMixMin    = 2
)

// mqChunk is the most rows one call of the scores kernel takes: its causal
// masks, a byte per query and 8 rows, are on the caller's stack.
const mqChunk = 64

// QueryGroup is a group's queries as the scores kernel reads them.
type QueryGroup struct {
	q                     []float32 // query r's heads at q[r*qstride:][:heads*d]
	qstride, nq, heads, d int
	// qt is the queries transposed, when the kernel is used: element j of
	// head h of query r at qt[(h*d+j)*16+r], zero for r >= nq.
	qt []float32
}

// Pack makes g the group of the nq queries (1..MaxGroup) in q, query r's
// heads at q[r*qstride:][:heads*d], each head d wide. g keeps q, and its
// buffer between calls (no allocation once it has grown).
func (g *QueryGroup) Pack(q []float32, qstride, nq, heads, d int) {
	if nq < 1 || nq > MaxGroup || heads < 1 || d < 0 || qstride < heads*d || len(q) < (nq-1)*qstride+heads*d {
		panic("kernels: QueryGroup.Pack: bad group")
	}
	*g = QueryGroup{q: q, qstride: qstride, nq: nq, heads: heads, d: d, qt: g.qt}
	if !GroupScoresAsm(nq, d) {
		return
	}
	if len(g.qt) < heads*d*MaxGroup {
		g.qt = make([]float32, heads*d*MaxGroup)
	}
	for i := range heads * d {
		lanes := g.qt[i*MaxGroup : (i+1)*MaxGroup]
		for r := range lanes {
			lanes[r] = 0
			if r < nq {
				lanes[r] = q[r*qstride+i]
			}
		}
	}
}

// GroupScoresAsm reports whether AttnScoresGroupF32 runs the group kernel
// for nq queries of heads d wide, rather than the per-query row kernels:
// with AVX-512, for enough queries (mqScoresMin), heads a multiple of 8
// (each lane's eight FMA chains).
func GroupScoresAsm(nq, d int) bool {
	return mqHasAsm && isa >= isaAVX512 && nq >= mqScoresMin && d%8 == 0 && d > 0
}

// GroupMixAsm is GroupScoresAsm for AttnMixGroupF32, whose kernels read a
// head 16 floats (a zmm) at a time.
func GroupMixAsm(nq, d int) bool {
	return mqHasAsm && isa >= isaAVX512 && nq >= mqMixMin && d%16 == 0 && d > 0
}

// AttnScoresGroupF32 scores g's queries over n float32 key rows kstride
// elements apart: query r sees rows from[r] <= t < to[r] (within 0..n), and
// its score of head h for row t, the one AttnScoresRowsF32 gives it alone,
// goes to scores[r*qsstride+h*sstride+t]. Query head h reads KV head
// kvh[h] (len(kvh) = g's heads), at element t*kstride+kvh[h]*d.
func AttnScoresGroupF32(scores []float32, qsstride, sstride int, g *QueryGroup, k []float32, kstride int, kvh []int32, from, to []int32, n int, scale float32) {
	checkGroup("AttnScoresGroupF32", g.nq, len(kvh), g.d, len(scores), qsstride, sstride, len(k), kstride, kvh, from, to, n)
	if len(kvh) != g.heads {
		panic("kernels: AttnScoresGroupF32: kvh is not one KV head per query head")
	}
	if !GroupScoresAsm(g.nq, g.d) {
		for r := range g.nq {
			if t0, t1 := int(from[r]), int(to[r]); t0 < t1 {
				AttnScoresRowsF32(scores[r*qsstride+t0:], sstride, g.q[r*g.qstride:][:g.heads*g.d], k[t0*kstride:], kstride, kvh, t1-t0, scale)
			}
		}
		return
	}
	// masks[b*16+r]: the rows 8b..8b+7 of a chunk that query r scores.
	var masks [mqChunk / 8 * MaxGroup]uint8
	for c0 := 0; c0 < n; c0 += mqChunk {
		rows := min(mqChunk, n-c0)
		some := false
		for b := range (rows + 7) / 8 {
			u0 := c0 + 8*b
			for r := range MaxGroup {
				m := uint8(0)
				if r < g.nq {
					lo, hi := min(max(int(from[r])-u0, 0), 8), min(max(int(to[r])-u0, 0), 8)
					m = uint8(0xff>>(8-hi)) &^ uint8(0xff>>(8-lo))
				}
				masks[b*MaxGroup+r] = m
				some = some || m != 0
			}
		}
		if some { // then scores[c0] is inside scores (checkGroup)
			mqScoresAVX512(&scores[c0], unsafe.SliceData(g.qt), &k[c0*kstride], unsafe.SliceData(kvh), &masks[0], g.heads, g.d, rows, 4*sstride, 4*qsstride, 4*kstride, scale)
		}
	}
}

// AttnMixGroupF32 adds to each query's output what AttnMixRowsF32 adds
// alone, over n float32 value rows vstride elements apart: to
// out[r*ostride+h*d:][:d], for query r < len(from) and head h < len(kvh),
// Σ w[r*qwstride+h*wstride+t]·(value of head h in row t) over from[r] <= t
// < to[r], in row order.
func AttnMixGroupF32(out []float32, ostride, d int, w []float32, qwstride, wstride int, v []float32, vstride int, kvh []int32, from, to []int32, n int) {
	nq, heads := len(from), len(kvh)
	checkGroup("AttnMixGroupF32", nq, heads, d, len(w), qwstride, wstride, len(v), vstride, kvh, from, to, n)
	if ostride < heads*d || len(out) < (nq-1)*ostride+heads*d {
		panic("kernels: AttnMixGroupF32: out too short for the queries")
	}
	if !GroupMixAsm(nq, d) {
		for r := range nq {
			if t0, t1 := int(from[r]), int(to[r]); t0 < t1 {
				AttnMixRowsF32(out[r*ostride:][:heads*d], w[r*qwstride+t0:], wstride, v[t0*vstride:], vstride, kvh, t1-t0)
			}
		}
		return
	}
	// A call takes a block of queries and up to 4 zmm of a head's columns
	// (as many queries as 24 accumulators hold: mqMixQueries).
	for h, g := range kvh {
		for c := 0; c < d; {
			zmm := min(4, (d-c)/16)
			for r0 := 0; r0 < nq; r0 += mqMixQueries[zmm] {
				r1 := min(nq, r0+mqMixQueries[zmm])
				// Rows a..b-1 are seen by every query of the block (no
				// checks); the others each query checks.
				a, b, some := int32(0), int32(n), false
				for r := r0; r < r1; r++ {
					a, b, some = max(a, from[r]), min(b, to[r]), some || from[r] < to[r]
				}
				if some { // then these indices are inside out, w and v (checkGroup)
					mqMixAVX512(zmm, &out[r0*ostride+h*d+c], &w[r0*qwstride+h*wstride], &v[int(g)*d+c], &from[r0], &to[r0], r1-r0, n, int(a), int(max(a, b)), 4*ostride, 4*qwstride, 4*vstride)
				}
			}
			c += 16 * zmm
		}
	}
}

// mqMixQueries[z] is the most queries a mix kernel of z zmm columns takes.
var mqMixQueries = [5]int{0, 16, 12, 8, 6}

// checkGroup checks a group function's slices, panicking as the other
// kernels' checks do: nq queries, each seeing rows from[r]..to[r]-1 of n;
// query r's values (scores or weights) of head h at
// sc[r*qsstride+h*sstride+t]; heads of d values read from n rows of kv,
// kvstride apart.
func checkGroup(fn string, nq, heads, d, sc, qsstride, sstride, kv, kvstride int, kvh []int32, from, to []int32, n int) {
	if nq < 1 || nq > MaxGroup || len(from) != nq || len(to) != nq || heads < 1 {
		panic("kernels: " + fn + ": not 1 to 16 queries with their rows, or no heads")
	}
	nkv := 0
	for _, g := range kvh {
		if g < 0 {
			panic("kernels: " + fn + ": a negative KV head")
		}
		nkv = max(nkv, int(g)+1)
	}
	if n > 0 && (kvstride < nkv*d || kv < (n-1)*kvstride+nkv*d) {
		panic("kernels: " + fn + ": rows too short for n rows")
	}
	for r := range nq {
		t0, t1 := int(from[r]), int(to[r])
		if t0 < 0 || t0 > t1 || t1 > n {
			panic("kernels: " + fn + ": a query's rows are not within 0..n")
		}
		if t0 < t1 && (qsstride < 0 || sstride < t1 || sc < r*qsstride+(heads-1)*sstride+t1) {
			panic("kernels: " + fn + ": scores too short for the queries' rows")
		}
	}
}

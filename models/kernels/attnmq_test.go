package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestAttnGroup holds the group functions to the per-query row kernels,
// bit for bit, on every kernel set this CPU runs (below AVX-512 they are
// those calls): 1 to 16 queries, heads of every width the scores kernel
// takes and some the mix kernels do not (8, 24), grouped-query heads, row
// counts from 0 past one 64-row chunk, each query its own rows (causal ends,
// sliding-window starts, or at random), strides past the rows. The score and
// output buffers are compared whole, so a write outside a query's rows
// (another head's scores, another query's output) fails too.
func TestAttnGroup(t *testing.T) {
	if !mqHasAsm || hostISA < isaAVX512 {
		t.Logf("no AVX-512 group kernels here (%s): the group functions are the per-query calls", isaNames[hostISA])
	}
	rng := rand.New(rand.NewPCG(21, 22))
	type geometry struct{ nq, h, nkv, d, n int }
	var cases []geometry
	for nq := 1; nq <= MaxGroup; nq++ {
		cases = append(cases, geometry{nq, 4, 2, 64, 33})
	}
	for _, hc := range [][2]int{{1, 1}, {3, 3}, {4, 2}, {12, 12}, {8, 2}, {6, 3}} {
		for _, d := range []int{8, 16, 24, 32, 64, 128} {
			for _, n := range []int{0, 1, 2, 7, 8, 9, 16, 31, 64, 65, 100} {
				cases = append(cases, geometry{1 + rng.IntN(MaxGroup), hc[0], hc[1], d, n})
			}
		}
	}
	for _, l := range impls() {
		withImpl(l, func() {
			var g QueryGroup
			for i, c := range cases {
				what := fmt.Sprintf("%s nq=%d h=%d/%d d=%d n=%d", implName(l), c.nq, c.h, c.nkv, c.d, c.n)
				from, to := groupRows(rng, i%3, c.nq, c.n)
				kvh := make([]int32, c.h)
				for h := range kvh {
					kvh[h] = int32(h / (c.h / c.nkv))
				}
				qstride := c.h*c.d + rng.IntN(2)*8
				kstride := c.nkv*c.d + rng.IntN(2)*8
				sstride := c.n + rng.IntN(3)
				qsstride := c.h*sstride + rng.IntN(3)
				ostride := c.h*c.d + rng.IntN(2)*16
				q := randVec(rng, (c.nq-1)*qstride+c.h*c.d)
				kv := randVec(rng, max(c.n-1, 0)*kstride+c.nkv*c.d)
				// Scores start as NaNs, outputs at random: both kept where
				// no query's rows are.
				scores := make([]float32, (c.nq-1)*qsstride+c.h*sstride)
				for j := range scores {
					scores[j] = float32(math.NaN())
				}
				want := slices.Clone(scores)
				for r := range c.nq {
					if t0, t1 := int(from[r]), int(to[r]); t0 < t1 {
						AttnScoresRowsF32(want[r*qsstride+t0:], sstride, q[r*qstride:][:c.h*c.d], kv[t0*kstride:], kstride, kvh, t1-t0, 0.3)
					}
				}
				g.Pack(q, qstride, c.nq, c.h, c.d)
				AttnScoresGroupF32(scores, qsstride, sstride, &g, kv, kstride, kvh, from, to, c.n, 0.3)
				for j := range scores {
					if math.Float32bits(scores[j]) != math.Float32bits(want[j]) {
						r, h, tt := j/qsstride, j%qsstride/sstride, j%qsstride%sstride
						t.Fatalf("%s: scores of query %d (rows %d..%d) head %d row %d: %v, alone %v", what, r, from[r], to[r], h, tt, scores[j], want[j])
					}
				}
				w := randVec(rng, len(scores))
				o := randVec(rng, (c.nq-1)*ostride+c.h*c.d)
				o2 := slices.Clone(o)
				for r := range c.nq {
					if t0, t1 := int(from[r]), int(to[r]); t0 < t1 {
						AttnMixRowsF32(o2[r*ostride:][:c.h*c.d], w[r*qsstride+t0:], sstride, kv[t0*kstride:], kstride, kvh, t1-t0)
					}
				}
				AttnMixGroupF32(o, ostride, c.d, w, qsstride, sstride, kv, kstride, kvh, from, to, c.n)
				for j := range o {
					if math.Float32bits(o[j]) != math.Float32bits(o2[j]) {
						t.Fatalf("%s: mix of query %d (rows %d..%d) element %d: %v, alone %v", what, j/ostride, from[j/ostride], to[j/ostride], j%ostride, o[j], o2[j])
					}
				}
			}
		})
	}
}

// groupRows is each of nq queries' rows within 0..n, as attention sees
// them (kind 0: consecutive positions ending at the last rows; kind 1:
// those within a sliding window) or at random (kind 2, empty ones too).
func groupRows(rng *rand.Rand, kind, nq, n int) (from, to []int32) {
	from, to = make([]int32, nq), make([]int32, nq)
	window := 1 + rng.IntN(n+1)
	for r := range nq {
		end := max(0, n-(nq-1-r)) // the last query sees every row
		switch kind {
		case 0:
			to[r] = int32(end)
		case 1:
			from[r], to[r] = int32(max(0, end-window)), int32(end)
		default:
			a, b := rng.IntN(n+1), rng.IntN(n+1)
			from[r], to[r] = int32(min(a, b)), int32(max(a, b))
		}
	}
	return from, to
}

// BenchmarkAttnGroup: 16 queries of one group over a run of 64 cached
// float32 rows of 12 heads of 64 (a prefill chunk deep in a prompt, every
// query seeing every row), the scores and the mix apart; ns/query-row is
// per query and cached row. Each name starts with the kernel set it ran:
// below avx512 the group functions are the per-query row kernels (AVX2 at
// most), from it on the group kernels. The queries' transpose (Pack, once
// per group and layer) is outside the loop.
func BenchmarkAttnGroup(b *testing.B) {
	const nq, rows, heads, d = 16, 64, 12, 64
	rng := rand.New(rand.NewPCG(1, 2))
	q, kv := randVec(rng, nq*heads*d), randVec(rng, rows*heads*d)
	scores, out := make([]float32, nq*heads*rows), make([]float32, nq*heads*d)
	kvh := make([]int32, heads)
	for h := range kvh {
		kvh[h] = int32(h)
	}
	from, to := make([]int32, nq), make([]int32, nq)
	for r := range to {
		to[r] = rows
	}
	per := func(b *testing.B) {
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*nq*rows), "ns/query-row")
	}
	b.Run("scores", func(b *testing.B) {
		benchISAs(b, func(b *testing.B) {
			var g QueryGroup
			g.Pack(q, heads*d, nq, heads, d)
			for b.Loop() {
				AttnScoresGroupF32(scores, heads*rows, rows, &g, kv, heads*d, kvh, from, to, rows, 0.125)
			}
			per(b)
		})
	})
	b.Run("mix", func(b *testing.B) {
		benchISAs(b, func(b *testing.B) {
			for b.Loop() {
				AttnMixGroupF32(out, heads*d, d, scores, heads*rows, rows, kv, heads*d, kvh, from, to, rows)
			}
			per(b)
		})
	})
}

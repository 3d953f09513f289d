// Package modeltest holds checks every architecture's tests run on their
// models: today, that a batch of sequences computes what each computes
// alone.
package modeltest

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"chat/models"
	"chat/models/kernels"
	"chat/models/kvcache"
)

// LongPrefill is the length of CheckBatch's longest prefill: enough tokens
// for nn's prefill GEMM (nn.PrefillMinTokens; nn's tests check it).
const LongPrefill = 21

// CheckBatch runs 8 sequences of m through shared batched forward passes —
// prefills of different lengths (one long enough for the prefill GEMM,
// LongPrefill), single decode tokens and a prefill chunk mixed in
// one batch, and two sequences sharing a prefix through copy-on-write
// blocks (a fork whose partly filled last block is shared) — over a pool of
// small blocks, and checks that every logits row equals, bit for bit, the
// row the sequence gets run alone on a private cache. Every product gives
// each row the bits it gives alone (a prefill's rows those of the same
// prefill alone), and attention reads only the row's own sequence, so
// nothing may differ. ids are drawn below vocab. The batched pool and the
// lone caches store keys and values as f (a quantised cache too: the rows
// it rounds have the same bits batched and alone).
func CheckBatch(t *testing.T, m models.Model, vocab int, f kvcache.Format) {
	t.Helper()
	// Two compute threads at least, so that the batch's attention runs
	// split over threads (nn.Pass.Attend) even on a one-CPU machine.
	defer kernels.SetThreads(kernels.Threads())
	kernels.SetThreads(max(2, kernels.Threads()))
	r := rand.New(rand.NewPCG(7, 8))
	ctx := m.Info().ContextLength
	pool, err := kvcache.NewPool(kvcache.LayoutOf(m, f, f), 4, 8*((ctx+3)/4+2))
	if err != nil {
		t.Fatal(err)
	}
	const nseq = 8
	seqs := make([]*kvcache.Seq, nseq)
	kv := make([]models.KV, nseq)
	alone := make([]*models.State, nseq)
	for i := range seqs {
		if alone[i], err = kvcache.NewStateAs(m, f); err != nil {
			t.Fatal(err)
		}
	}
	runner := m.NewRunner()
	toks := func(n int) []int {
		out := make([]int, n)
		for i := range out {
			out[i] = r.IntN(vocab)
		}
		return out
	}
	// step feeds each listed sequence its tokens in one batch and compares
	// the logits of the last rows[i] tokens of each with the lone run.
	step := func(what string, feed map[int][]int, rows map[int]int) {
		t.Helper()
		var b models.Batch
		order := make([]int, 0, len(feed))
		for s := range feed {
			order = append(order, s)
		}
		slices.Sort(order)
		for _, s := range order {
			b.AddRun(s, kv[s].Len(), feed[s], rows[s])
		}
		got, err := runner.Forward(&b, kv)
		if err != nil {
			t.Fatalf("%s: %v", what, err)
		}
		got = slices.Clone(got)
		V := m.Info().VocabSize
		off := 0
		for _, s := range order {
			want, err := alone[s].Forward(feed[s], rows[s])
			if err != nil {
				t.Fatalf("%s: sequence %d alone: %v", what, s, err)
			}
			n := rows[s] * V
			if !slices.Equal(got[off:off+n], want) {
				d, scale := maxDiff(got[off:off+n], want)
				t.Fatalf("%s: sequence %d: batched logits differ from the sequence run alone by %.3g (largest logit %.3g)", what, s, d, scale)
			}
			if kv[s].Len() != alone[s].Len() {
				t.Fatalf("%s: sequence %d holds %d positions batched, %d alone", what, s, kv[s].Len(), alone[s].Len())
			}
			off += n
		}
		if off != len(got) {
			t.Fatalf("%s: %d logits, want %d", what, len(got), off)
		}
	}

	for i := 0; i < 6; i++ {
		seqs[i] = pool.NewSeq(ctx)
		kv[i] = seqs[i]
	}
	lens := []int{1, 3, 6, 9, 2, LongPrefill}
	first := map[int][]int{}
	rows := map[int]int{}
	for i, n := range lens {
		first[i], rows[i] = toks(min(n, ctx/2)), 1
	}
	rows[3] = 3 // several rows of one sequence
	step("prefills of different lengths", first, rows)

	// Sequence 6 forks sequence 2: it shares all its blocks, including the
	// partly filled last one, and copies that block on its first write.
	seqs[6] = seqs[2].Fork()
	kv[6] = seqs[6]
	if _, err := alone[6].Forward(first[2], 1); err != nil {
		t.Fatal(err)
	}
	seqs[7] = pool.NewSeq(ctx)
	kv[7] = seqs[7]
	for step2 := 0; step2 < 3; step2++ {
		feed, rows := map[int][]int{}, map[int]int{}
		for s := 0; s < 7; s++ {
			if kv[s].Len() < ctx-1 {
				feed[s], rows[s] = toks(1), 1
			}
		}
		feed[7], rows[7] = toks(min(5, (ctx-1)/3)), 2 // a prefill chunk among the decodes
		step("decode steps with a prefill chunk", feed, rows)
	}
	for _, s := range seqs {
		s.Free()
	}
	if pool.Used() != 0 {
		t.Fatalf("%d blocks still held after every sequence was freed", pool.Used())
	}
}

// maxDiff returns the largest |a-b| and the largest |b| (at least 1).
func maxDiff(a, b []float32) (d, scale float64) {
	scale = 1
	for i, v := range b {
		d = max(d, math.Abs(float64(a[i]-v)))
		scale = max(scale, math.Abs(float64(v)))
	}
	return d, scale
}

//go:build amd64 && !purego

package kernels

import (
	"testing"
	"time"
	"unsafe"

	"chat/models/hugepage"
)

// BenchmarkAttnMixWidths: a query's scores then mix over 193 f16 rows not
// in cache (BenchmarkAttnColdKV's f16/rows), the mix by AVX2's kernel and
// by AVX-512's alternately in one loop, each timed apart: the A/B behind
// BENCHMARKS.md's figure for wideMix. Skipped without AVX-512.
func BenchmarkAttnMixWidths(b *testing.B) {
	if !runnable(isaAVX512) {
		b.Skip("this CPU has no AVX-512")
	}
	const rows, heads, d = 193, 12, 64
	const dim = heads * d
	buf := hugepage.Bytes(512 << 20)
	f16 := unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(buf))), len(buf)/2)
	q, out := make([]float32, dim), make([]float32, dim)
	sc := make([]float32, heads*rows)
	kvh := make([]int32, heads)
	for i := range kvh {
		kvh[i] = int32(i)
	}
	per := 2 * rows * dim // a sequence's keys then values
	total := len(f16) / per
	mixes := [2]mixKernel{attnRowsMixF16AVX2, attnRowsMixF16AVX512}
	var took [2]time.Duration
	n := 0
	for b.Loop() {
		for k, mix := range mixes {
			at := (n % total) * per
			n++
			t0 := time.Now()
			AttnScoresRowsF16(sc, rows, q, f16[at:], dim, kvh, rows, 1)
			mix(unsafe.SliceData(out), unsafe.SliceData(sc), unsafe.Pointer(&f16[at+rows*dim]), nil, unsafe.SliceData(kvh), heads, d, rows, 4*rows, dim, 0)
			took[k] += time.Since(t0)
		}
	}
	b.ReportMetric(float64(took[0].Nanoseconds())/float64(b.N*rows), "avx2-ns/row")
	b.ReportMetric(float64(took[1].Nanoseconds())/float64(b.N*rows), "avx512-ns/row")
}

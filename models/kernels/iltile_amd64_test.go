//go:build amd64 && !purego

package kernels

import "testing"

// BenchmarkILTileInCache: the 8-token AVX-512 VNNI Q8_0 tile over one row
// group of 24 blocks (768 columns, 13 KB: in L1) again and again, in
// VPDPBUSD per ns (64 per block). The tile's own speed, without memory:
// what a batched decode step's products approach when their weights stream
// in time.
func BenchmarkILTileInCache(b *testing.B) {
	if hostISA < isaAVX512VNNI {
		b.Skipf("no AVX-512 VNNI here (%s)", isaNames[hostISA])
	}
	const nb = 24
	w := make([]byte, nb*ilBlockBytes(IL8))
	xa := make([]byte, nb*ilActBlock)
	out := make([]float32, ILRows*8)
	for b.Loop() {
		il8T8VNNI(&out[0], &w[0], nb, &xa[0], ILRows, nil, 0)
	}
	b.ReportMetric(float64(nb*64*b.N)/float64(b.Elapsed().Nanoseconds()), "VPDPBUSD/ns")
}

//go:build amd64 && !purego

package kernels

import "testing"

// BenchmarkILTileInCache: the 8-token AVX-512 VNNI tiles of Q8_0 (IL8) and
// Q4_0 (IL4) over one row group of 24 blocks (768 columns, 13 or 7 KB: in
// L1) again and again, in VPDPBUSD per ns (64 per block). The tile's own
// speed, without memory: what a batched decode step's products approach
// when their weights stream in time.
func BenchmarkILTileInCache(b *testing.B) {
	if hostISA < isaAVX512VNNI {
		b.Skipf("no AVX-512 VNNI here (%s)", isaNames[hostISA])
	}
	const nb = 24
	for _, c := range []struct {
		name string
		kind ILKind
		tile func(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)
	}{{"q8_0", IL8, il8T8VNNI}, {"q4_0", IL4, il4T8VNNI}} {
		b.Run(c.name, func(b *testing.B) {
			w := make([]byte, nb*ilBlockBytes(c.kind))
			xa := make([]byte, nb*ilActBlock)
			out := make([]float32, ILRows*8)
			for b.Loop() {
				c.tile(&out[0], &w[0], nb, &xa[0], ILRows, nil, 0)
			}
			b.ReportMetric(float64(nb*64*b.N)/float64(b.Elapsed().Nanoseconds()), "VPDPBUSD/ns")
		})
	}
}

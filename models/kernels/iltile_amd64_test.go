//go:build amd64 && !purego

package kernels

import "testing"

// BenchmarkILTileInCache: 8 tokens of Q8_0 (IL8) and Q4_0 (IL4) over one
// row group of 24 blocks (768 columns, 13 or 7 KB: in L1) again and again,
// on each kernel set this CPU runs: AVX-512 VNNI's 8-token tile (also in
// VPDPBUSD per ns, 64 per block), AVX-VNNI's 4-token tile twice, AVX2's
// 8-token (Q8_0) or 4-token (Q4_0, twice) tile. The tile's own speed,
// without memory: what a batched decode step's products approach when their
// weights stream in time.
func BenchmarkILTileInCache(b *testing.B) {
	const nb = 24
	type tile = func(out *float32, w *byte, nb int, xa *byte, ldo int, gs *float32, gb int)
	for _, c := range []struct {
		name  string
		level isaLevel
		kind  ILKind
		tiles []tile // run one after the other over the 8 tokens
	}{
		{"q8_0/avx512vnni", isaAVX512VNNI, IL8, []tile{il8T8VNNI}},
		{"q4_0/avx512vnni", isaAVX512VNNI, IL4, []tile{il4T8VNNI}},
		{"q8_0/avxvnni", isaAVXVNNI, IL8, []tile{il8T4AVXVNNI, il8T4AVXVNNI}},
		{"q4_0/avxvnni", isaAVXVNNI, IL4, []tile{il4T4AVXVNNI, il4T4AVXVNNI}},
		{"q8_0/avx2", isaAVX2, IL8, []tile{il8T8AVX2}},
		{"q4_0/avx2", isaAVX2, IL4, []tile{il4T4AVX2, il4T4AVX2}},
	} {
		b.Run(c.name, func(b *testing.B) {
			if !runnable(c.level) {
				b.Skipf("this CPU does not run %s", isaNames[c.level])
			}
			w := make([]byte, nb*ilBlockBytes(c.kind))
			xa := make([]byte, nb*ilActBlock)
			out := make([]float32, ILRows*8)
			for b.Loop() {
				for i, f := range c.tiles {
					f(&out[i*ILRows*4], &w[0], nb, &xa[40*4*i], ILRows, nil, 0)
				}
			}
			if c.level == isaAVX512VNNI {
				b.ReportMetric(float64(nb*64*b.N)/float64(b.Elapsed().Nanoseconds()), "VPDPBUSD/ns")
			}
		})
	}
}

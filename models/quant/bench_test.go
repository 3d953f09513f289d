package quant

import (
	"math/rand/v2"
	"testing"
)

// benchProduct runs a decode-sized product of a student.pt-like matrix
// (1024×192, mlp gate|up) in each format.
func BenchmarkMatVec(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 1))
	const rows, cols = 1024, 192
	w := randMatrix(r, rows, cols)
	x := make([]float32, cols)
	for i := range x {
		x[i] = float32(r.NormFloat64())
	}
	out := make([]float32, rows)
	for _, f := range Formats {
		m, _ := New(f, w, rows, cols)
		var z ScratchSize
		z.Add(m)
		scratch := z.New()
		deq := make([]float32, rows*cols)
		b.Run(f, func(b *testing.B) {
			for b.Loop() {
				MatMul(out, m, x, 1, scratch)
			}
			b.ReportMetric(float64(rows*cols*b.N)/b.Elapsed().Seconds()/1e9, "Gw/s")
		})
		b.Run(f+"/dequant", func(b *testing.B) {
			for b.Loop() {
				m.DequantizeRows(deq, 0, rows)
			}
			b.ReportMetric(float64(rows*cols*b.N)/b.Elapsed().Seconds()/1e9, "Gw/s")
		})
	}
}

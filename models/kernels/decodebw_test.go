package kernels

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
	"unsafe"

	"chat/models/hugepage"
)

// decodeShapes are the matrices one bench110M decode step multiplies by one
// token, in order: 12 layers of Q, K, V, O (768×768), gate and up
// (2048×768), down (768×2048), then the 32000×768 classifier. 110M
// weights: at 2 bytes 219 MB, far past the L3, as in a real decode.
func decodeShapes() [][2]int {
	var s [][2]int
	for range 12 {
		s = append(s, [2]int{768, 768}, [2]int{768, 768}, [2]int{768, 768}, [2]int{768, 768},
			[2]int{2048, 768}, [2]int{2048, 768}, [2]int{768, 2048})
	}
	return append(s, [2]int{32000, 768})
}

func hugeU16(n int) []uint16 {
	b := hugepage.Bytes(2 * n)
	return unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(b))), n)
}

// BenchmarkDecodeF16: the weights of a bench110M decode step through the
// f16 products (BenchmarkDecodeBF16: bf16), one thread, every matrix in
// huge-page memory as the loader keeps it, row-major (MatMulF16) then
// interleaved (MatMulF16IL), alternating step by step so that load from
// other processes falls on both: the metrics are each layout's GB/s of
// weights over its median step, and their ratio. n1 is a one-token step,
// n8 a step of 8 sequences; prefill64 a 64-token prefill
// (MatMulF16Prefill) through the first two layers.
//
//	go test -run '^$' -bench 'DecodeF16' -benchtime 20x ./models/kernels/
func BenchmarkDecodeF16(b *testing.B)  { benchDecodeHalf(b, wF16) }
func BenchmarkDecodeBF16(b *testing.B) { benchDecodeHalf(b, wBF16) }

func benchDecodeHalf(b *testing.B, k wkind) {
	rng := rand.New(rand.NewPCG(9, 9))
	shapes := decodeShapes()
	rm, il := make([][]uint16, len(shapes)), make([][]uint16, len(shapes))
	for i, s := range shapes {
		rm[i] = hugeU16(s[0] * s[1])
		copy(rm[i], randF16(rng, 4096)) // the values do not change the speed
		for j := 4096; j < len(rm[i]); j *= 2 {
			copy(rm[i][j:], rm[i][:j])
		}
		il[i] = hugeU16(HalfILLen(s[0], s[1]))
		PackHalfIL(il[i], rm[i], s[0], s[1])
	}
	mrm, mil := MatMulF16, MatMulF16IL
	prm, pil := MatMulF16Prefill, MatMulF16ILPrefill
	if k == wBF16 {
		mrm, mil = MatMulBF16, MatMulBF16IL
		prm, pil = MatMulBF16Prefill, MatMulBF16ILPrefill
	}
	for _, c := range []struct {
		name     string
		n        int
		prefill  bool
		matrices int
	}{{"n1", 1, false, len(shapes)}, {"n8", 8, false, len(shapes)}, {"prefill64", 64, true, 14}} {
		x := randVec(rng, c.n*2048)
		out := make([]float32, c.n*32000)
		frm, fil := mrm, mil
		if c.prefill {
			frm, fil = prm, pil
		}
		total := 0
		for _, s := range shapes[:c.matrices] {
			total += 2 * s[0] * s[1]
		}
		b.Run(c.name, func(b *testing.B) {
			benchISAs(b, func(b *testing.B) {
				var trm, til []float64
				for b.Loop() {
					t0 := time.Now()
					for i, s := range shapes[:c.matrices] {
						frm(out, rm[i], x, s[0], s[1], c.n)
					}
					t1 := time.Now()
					for i, s := range shapes[:c.matrices] {
						fil(out, il[i], x, s[0], s[1], c.n)
					}
					trm, til = append(trm, t1.Sub(t0).Seconds()), append(til, time.Since(t1).Seconds())
				}
				slices.Sort(trm)
				slices.Sort(til)
				mr, mi := trm[len(trm)/2], til[len(til)/2]
				b.ReportMetric(float64(total)/mr/1e9, "rowmajor-GB/s")
				b.ReportMetric(float64(total)/mi/1e9, "interleaved-GB/s")
				b.ReportMetric(mr/mi, "speedup")
			})
		})
	}
}

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
// f16 products the models run (BenchmarkDecodeBF16: bf16), interleaved
// (MatMulF16IL), one thread, every matrix in huge-page memory as the loader
// keeps it: the metric is the GB/s of weights over the median step. n1 is a
// one-token step, n8 a step of 8 sequences; prefill64 a 64-token prefill
// (MatMulF16ILPrefill) through the first two layers.
//
//	go test -run '^$' -bench 'DecodeF16' -benchtime 20x ./models/kernels/
func BenchmarkDecodeF16(b *testing.B)  { benchDecodeHalf(b, wF16) }
func BenchmarkDecodeBF16(b *testing.B) { benchDecodeHalf(b, wBF16) }

func benchDecodeHalf(b *testing.B, k wkind) {
	rng := rand.New(rand.NewPCG(9, 9))
	shapes := decodeShapes()
	il := make([][]uint16, len(shapes))
	rm := make([]uint16, 32000*768) // the largest matrix, row-major
	copy(rm, randF16(rng, 4096))    // the values do not change the speed
	for j := 4096; j < len(rm); j *= 2 {
		copy(rm[j:], rm[:j])
	}
	for i, s := range shapes {
		il[i] = hugeU16(HalfILLen(s[0], s[1]))
		PackHalfIL(il[i], rm, s[0], s[1])
	}
	mul, prefill := MatMulF16IL, MatMulF16ILPrefill
	if k == wBF16 {
		mul, prefill = MatMulBF16IL, MatMulBF16ILPrefill
	}
	for _, c := range []struct {
		name     string
		n        int
		prefill  bool
		matrices int
	}{{"n1", 1, false, len(shapes)}, {"n8", 8, false, len(shapes)}, {"prefill64", 64, true, 14}} {
		x := randVec(rng, c.n*2048)
		out := make([]float32, c.n*32000)
		f := mul
		if c.prefill {
			f = prefill
		}
		total := 0
		for _, s := range shapes[:c.matrices] {
			total += 2 * s[0] * s[1]
		}
		b.Run(c.name, func(b *testing.B) {
			benchISAs(b, func(b *testing.B) {
				var ts []float64
				for b.Loop() {
					t0 := time.Now()
					for i, s := range shapes[:c.matrices] {
						f(out, il[i], x, s[0], s[1], c.n)
					}
					ts = append(ts, time.Since(t0).Seconds())
				}
				slices.Sort(ts)
				b.ReportMetric(float64(total)/ts[len(ts)/2]/1e9, "GB/s")
			})
		})
	}
}

// BenchmarkDecodeIL: the weights of a bench110M decode step in Q4_0 and
// Q8_0 (interleaved, MatMulIL), one token, one thread, huge pages, each
// step fetched once as Cached and once as Stream in turn, so that both see
// the same moment's memory bandwidth: the metrics are each one's GB/s over
// its median step and their ratio.
//
//	go test -run '^$' -bench 'DecodeIL' -benchtime 40x ./models/kernels/
func BenchmarkDecodeIL(b *testing.B) {
	rng := rand.New(rand.NewPCG(9, 10))
	shapes := decodeShapes()
	for _, c := range []struct {
		name  string
		k     ILKind
		block int // GGUF bytes per 32 values
		pack  func(dst, raw []byte, rows, cols int)
	}{{"q4_0", IL4, 18, PackILQ4_0}, {"q8_0", IL8, 34, PackILQ8_0}} {
		il := make([][]byte, len(shapes))
		total := 0
		for i, s := range shapes {
			raw := make([]byte, s[0]*s[1]/Q8Block*c.block)
			for j := range raw {
				raw[j] = byte(rng.Uint32())
			}
			for j := 0; j < len(raw); j += c.block {
				raw[j], raw[j+1] = 0x00, 0x3c // scale 1.0 (f16)
			}
			il[i] = hugepage.Bytes(ILBytes(c.k, s[0], s[1]))
			c.pack(il[i], raw, s[0], s[1])
			total += len(il[i])
		}
		x := randVec(rng, 2048)
		out := make([]float32, 32000)
		b.Run(c.name, func(b *testing.B) {
			benchISAs(b, func(b *testing.B) {
				if isa == isaGo {
					b.Skip("the Go reference takes half a second a step")
				}
				var a [2]ILAct
				a[0].Quantize(x[:768], 1, 768, c.k)
				a[1].Quantize(x[:2048], 1, 2048, c.k)
				var ts [2][]float64
				for b.Loop() {
					for _, reuse := range []Reuse{Cached, Stream} {
						t0 := time.Now()
						for i, s := range shapes {
							act := &a[0]
							if s[1] == 2048 {
								act = &a[1]
							}
							MatMulIL(c.k, out, il[i], nil, 0, act, s[0], s[1], reuse)
						}
						ts[reuse] = append(ts[reuse], time.Since(t0).Seconds())
					}
				}
				var med [2]float64
				for r := range ts {
					slices.Sort(ts[r])
					med[r] = ts[r][len(ts[r])/2]
				}
				b.ReportMetric(float64(total)/med[Cached]/1e9, "cached-GB/s")
				b.ReportMetric(float64(total)/med[Stream]/1e9, "stream-GB/s")
				b.ReportMetric(med[Cached]/med[Stream], "stream-speedup")
			})
		})
	}
}

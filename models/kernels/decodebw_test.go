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
// Q8_0 (interleaved, MatMulIL), one thread, huge pages, each step fetched
// for one token as Cached and as Stream, then for a batch of eight tokens,
// in turn, so that all three see the same moment's memory bandwidth: the
// metrics are each one's GB/s over its median step and Stream's ratio to
// Cached. The batch's tile computes more a block, and streams slower than
// one token's (a batch-8 decode step's products, BENCHMARKS.md).
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
		x := randVec(rng, 8*2048)
		out := make([]float32, 8*32000)
		b.Run(c.name, func(b *testing.B) {
			benchISAs(b, func(b *testing.B) {
				if isa == isaGo {
					b.Skip("the Go reference takes half a second a step")
				}
				var one, eight [2]ILAct // activations of 768 and of 2048 columns
				one[0].Quantize(x[:768], 1, 768, c.k)
				one[1].Quantize(x[:2048], 1, 2048, c.k)
				eight[0].Quantize(x[:8*768], 8, 768, c.k)
				eight[1].Quantize(x[:8*2048], 8, 2048, c.k)
				passes := []struct {
					a     *[2]ILAct
					reuse Reuse
				}{{&one, Cached}, {&one, Stream}, {&eight, Stream}}
				ts := make([][]float64, len(passes))
				for b.Loop() {
					for p, pass := range passes {
						t0 := time.Now()
						for i, s := range shapes {
							act := &pass.a[0]
							if s[1] == 2048 {
								act = &pass.a[1]
							}
							MatMulIL(c.k, out, il[i], nil, 0, act, s[0], s[1], pass.reuse)
						}
						ts[p] = append(ts[p], time.Since(t0).Seconds())
					}
				}
				med := make([]float64, len(passes))
				for p := range ts {
					slices.Sort(ts[p])
					med[p] = ts[p][len(ts[p])/2]
				}
				b.ReportMetric(float64(total)/med[0]/1e9, "cached-GB/s")
				b.ReportMetric(float64(total)/med[1]/1e9, "stream-GB/s")
				b.ReportMetric(med[0]/med[1], "stream-speedup")
				b.ReportMetric(float64(total)/med[2]/1e9, "batch8-GB/s")
			})
		})
	}
}

package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"unsafe"

	"chat/models/hugepage"
)

func TestAttnKernels(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for _, d := range []int{1, 5, 8, 16, 24, 32, 64, 72, 128, 136} {
		for _, extra := range []int{0, 3, 8} {
			stride := d + extra
			for _, n := range []int{1, 2, 7, 16, 33} {
				q := randVec(rng, d)
				k := randVec(rng, (n-1)*stride+d)
				w := randVec(rng, n)
				got, want := make([]float32, n+1), make([]float32, n+1)
				got[n], want[n] = 42, 42
				AttnScores(got, q, k, stride, n, 0.125)
				attnScoresGo(want, q, k, stride, n, 0.125)
				for i := range got {
					if !closeSum(got[i], want[i], d) {
						t.Fatalf("scores d=%d stride=%d n=%d i=%d: %v vs %v", d, stride, n, i, got[i], want[i])
					}
				}
				o1, o2 := make([]float32, d+1), make([]float32, d+1)
				o1[d], o2[d] = 7, 7
				clear(o1[:d])
				AttnMixAdd(o1[:d], w, k, stride, n)
				clear(o2[:d])
				attnMixGo(o2[:d], w, k, stride, n)
				for i := range o1 {
					if !closeSum(o1[i], o2[i], n) {
						t.Fatalf("mix d=%d stride=%d n=%d i=%d: %v vs %v", d, stride, n, i, o1[i], o2[i])
					}
				}
			}
		}
	}
}

// closeSum allows float32 rounding of a sum of n products in another order.
func closeSum(a, b float32, n int) bool {
	return math.Abs(float64(a-b)) <= 1e-6*float64(n+1)*(1+math.Abs(float64(b)))
}

func TestAttnNoAlloc(t *testing.T) {
	q, k, s := make([]float32, 64), make([]float32, 64*100), make([]float32, 100)
	if a := testing.AllocsPerRun(10, func() { AttnScores(s, q, k, 64, 100, 1); AttnMixAdd(q, s, k, 64, 100) }); a != 0 {
		t.Errorf("%v allocations", a)
	}
}

func BenchmarkAttnScores(b *testing.B) {
	for _, d := range []int{8, 64} {
		q, k, s := make([]float32, d), make([]float32, d*512), make([]float32, 512)
		b.Run(map[int]string{8: "d8", 64: "d64"}[d], func(b *testing.B) {
			b.SetBytes(int64(4 * d * 512))
			for b.Loop() {
				AttnScores(s, q, k, d, 512, 1)
			}
		})
	}
}

// The kernels give the same bits as the Dot and Axpy calls they replace when
// the head fits one 8-lane accumulator pass (d ≤ 8·1 FMA chain), and
// AttnMixAdd over two runs equals AttnMix over both.
func TestAttnMatchesDotAxpy(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, d := range []int{8, 16, 32} {
		q, k := randVec(rng, d), randVec(rng, 40*d)
		s := make([]float32, 40)
		AttnScores(s, q, k, d, 40, 0.5)
		for i := range s {
			if want := Dot(q, k[i*d:(i+1)*d]) * 0.5; d == 8 && s[i] != want {
				t.Fatalf("d=%d row %d: %v vs Dot %v", d, i, s[i], want)
			}
		}
		a, b := make([]float32, d), make([]float32, d)
		clear(a)
		AttnMixAdd(a, s, k, d, 40)
		for i := range s {
			Axpy(s[i], k[i*d:(i+1)*d], b)
		}
		c := make([]float32, d)
		AttnMixAdd(c, s[:15], k, d, 15)
		AttnMixAdd(c, s[15:], k[15*d:], d, 25)
		for j := range a {
			if a[j] != b[j] || c[j] != a[j] {
				t.Fatalf("d=%d col %d: mix %v, axpy %v, two runs %v", d, j, a[j], b[j], c[j])
			}
		}
	}
}

// AttnScores over n rows gives each row the bits of a one-row call (the
// eight- and four-row blocks reduce in the one-row loop's order).
func TestAttnScoresRowBlocks(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, d := range []int{8, 16, 24, 32, 64, 128, 136} {
		for _, stride := range []int{d, d + 3} {
			for _, n := range []int{1, 7, 8, 9, 12, 15, 16, 17, 40, 103} {
				q, k := randVec(rng, d), randVec(rng, (n-1)*stride+d)
				k[rng.IntN(len(k))] = float32(math.Inf(1))
				got := make([]float32, n+1)
				got[n] = 42
				AttnScores(got, q, k, stride, n, 0.3)
				for i := range n {
					var one [1]float32
					AttnScores(one[:], q, k[i*stride:], stride, 1, 0.3)
					if math.Float32bits(got[i]) != math.Float32bits(one[0]) {
						t.Fatalf("d=%d stride=%d n=%d row %d: %v, one-row call %v", d, stride, n, i, got[i], one[0])
					}
				}
				if got[n] != 42 {
					t.Fatalf("d=%d n=%d: wrote past n", d, n)
				}
			}
		}
	}
}

// TestAttnF16: on every kernel set, the f16 kernels give exactly the bits
// the float32 kernels give on the widened rows (heads of every width the
// assembly's strips and row blocks take, strides with padding).
func TestAttnF16(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	for _, l := range impls() {
		withImpl(l, func() {
			for _, d := range []int{1, 5, 8, 16, 24, 32, 64, 72, 128, 136} {
				for _, extra := range []int{0, 3, 8} {
					stride := d + extra
					for _, n := range []int{1, 2, 7, 16, 33} {
						q, w := randVec(rng, d), randVec(rng, n)
						kf := randVec(rng, (n-1)*stride+d)
						k := make([]uint16, len(kf))
						NarrowF16(k, kf)
						WidenF16(kf, k)
						got, want := make([]float32, n+1), make([]float32, n+1)
						got[n], want[n] = 42, 42
						AttnScoresF16(got, q, k, stride, n, 0.125)
						AttnScores(want, q, kf, stride, n, 0.125)
						o1, o2 := make([]float32, d+1), make([]float32, d+1)
						o1[d], o2[d] = 7, 7
						AttnMixAddF16(o1[:d], w, k, stride, n)
						AttnMixAdd(o2[:d], w, kf, stride, n)
						for i := range got {
							if math.Float32bits(got[i]) != math.Float32bits(want[i]) {
								t.Fatalf("%s scores d=%d stride=%d n=%d i=%d: %v vs %v", implName(l), d, stride, n, i, got[i], want[i])
							}
						}
						for i := range o1 {
							if math.Float32bits(o1[i]) != math.Float32bits(o2[i]) {
								t.Fatalf("%s mix d=%d stride=%d n=%d i=%d: %v vs %v", implName(l), d, stride, n, i, o1[i], o2[i])
							}
						}
					}
				}
			}
		})
	}
}

// TestAttnRows: on every kernel set, the f16 row kernels (every head at
// once, rows in memory order) give each score and output element the bits
// of the head-at-a-time f16 kernels: head counts the assembly takes (a
// multiple of 4) and others, grouped-query offsets, heads of every width,
// row counts odd and even, padded strides.
func TestAttnRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, l := range impls() {
		withImpl(l, func() {
			// Heads of width 0 score 0 (an empty dot) and mix nothing; the
			// assembly's loops run at least once, so the wrappers keep
			// them out of it.
			sc := []float32{7, 7, 7, 7}
			AttnScoresRowsF16(sc, 1, nil, make([]uint16, 8), 1, make([]int32, 4), 1, 1)
			AttnMixRowsF16(nil, sc, 1, make([]uint16, 8), 1, make([]int32, 4), 1)
			if sc[0] != 0 || sc[3] != 0 {
				t.Fatalf("%s: heads of width 0 scored %v", implName(l), sc)
			}
			for _, hc := range [][2]int{{1, 1}, {2, 2}, {3, 3}, {4, 2}, {12, 12}, {8, 2}, {6, 3}, {16, 4}} {
				h, kvh := hc[0], hc[1]
				for _, d := range []int{5, 8, 16, 24, 64, 72, 128} {
					for _, n := range []int{1, 2, 3, 7, 16, 33} {
						stride := kvh*d + rng.IntN(2)*8
						sstride := n + rng.IntN(3)
						offs := make([]int32, h)
						for i := range offs {
							offs[i] = int32(i / (h / kvh) * d)
						}
						q, w := randVec(rng, h*d), randVec(rng, (h-1)*sstride+n)
						k := make([]uint16, (n-1)*stride+kvh*d)
						NarrowF16(k, randVec(rng, len(k)))
						got, want := make([]float32, len(w)), make([]float32, len(w))
						o1 := randVec(rng, h*d)
						o2 := slices.Clone(o1)
						AttnScoresRowsF16(got, sstride, q, k, stride, offs, n, 0.3)
						AttnMixRowsF16(o1, w, sstride, k, stride, offs, n)
						for i, o := range offs {
							AttnScoresF16(want[i*sstride:], q[i*d:(i+1)*d], k[o:], stride, n, 0.3)
							AttnMixAddF16(o2[i*d:(i+1)*d], w[i*sstride:], k[o:], stride, n)
						}
						sameRows(t, fmt.Sprintf("%s h=%d/%d d=%d n=%d", implName(l), h, kvh, d, n), got, want, o1, o2, h, sstride, n)
					}
				}
			}
		})
	}
}

// BenchmarkAttnColdKV: one decode query's attention (12 heads of 64 over
// 193 cached rows: the scores, then the mix) with keys and values not in
// cache, as in a batch step, where every sequence's rows come from memory:
// a head at a time over float32 and f16 rows, and the f16 and int8 row
// kernels.
// ns/row is per cached position (its key and value rows); each name starts
// with the kernel set it ran (the attention kernels are AVX2 at most).
func BenchmarkAttnColdKV(b *testing.B) {
	set := "go"
	if useAsm {
		set = "avx2"
	}
	const rows, heads, d = 193, 12, 64
	const dim = heads * d
	buf := hugepage.Bytes(512 << 20)
	f32 := unsafe.Slice((*float32)(unsafe.Pointer(unsafe.SliceData(buf))), len(buf)/4)
	f16 := unsafe.Slice((*uint16)(unsafe.Pointer(unsafe.SliceData(buf))), len(buf)/2)
	q, out := make([]float32, dim), make([]float32, dim)
	sc := make([]float32, heads*rows)
	offs := make([]int32, heads)
	for i := range offs {
		offs[i] = int32(i * d)
	}
	i8 := unsafe.Slice((*int8)(unsafe.Pointer(unsafe.SliceData(buf))), len(buf))
	scales := make([]float32, 2*rows*heads) // in cache: 18 KB a sequence
	kvh := make([]int32, heads)
	for i := range kvh {
		kvh[i] = int32(i)
	}
	for _, name := range []string{"f32/heads", "f16/heads", "f16/rows", "int8/rows"} {
		b.Run(set+"/"+name, func(b *testing.B) {
			per, n := 2*rows*dim, 0 // a sequence's keys then values, in elements
			total := len(f32) / per
			switch name {
			case "f16/heads", "f16/rows":
				total = len(f16) / per
			case "int8/rows":
				total = len(i8) / per
			}
			for b.Loop() {
				at := (n % total) * per // each pass on rows it has not read lately
				n++
				switch name {
				case "f32/heads":
					for h := range heads {
						AttnScores(sc[h*rows:], q[h*d:(h+1)*d], f32[at+h*d:], dim, rows, 1)
					}
					for h := range heads {
						AttnMixAdd(out[h*d:(h+1)*d], sc[h*rows:], f32[at+rows*dim+h*d:], dim, rows)
					}
				case "f16/heads":
					for h := range heads {
						AttnScoresF16(sc[h*rows:], q[h*d:(h+1)*d], f16[at+h*d:], dim, rows, 1)
					}
					for h := range heads {
						AttnMixAddF16(out[h*d:(h+1)*d], sc[h*rows:], f16[at+rows*dim+h*d:], dim, rows)
					}
				case "f16/rows":
					AttnScoresRowsF16(sc, rows, q, f16[at:], dim, offs, rows, 1)
					AttnMixRowsF16(out, sc, rows, f16[at+rows*dim:], dim, offs, rows)
				default:
					AttnScoresRowsI8(sc, rows, q, i8[at:], dim, scales, heads, kvh, rows, 1)
					AttnMixRowsI8(out, sc, rows, i8[at+rows*dim:], dim, scales[rows*heads:], heads, kvh, rows)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*rows), "ns/row")
		})
	}
}

// TestAttnRowsI8: on every kernel set, the int8 row kernels give each
// score and output element the bits of the head-at-a-time float32 kernels
// on the rows decoded by ScaleI8 (a scale per row and KV head), for the
// head counts and widths of TestAttnRows.
func TestAttnRowsI8(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, l := range impls() {
		withImpl(l, func() {
			for _, hc := range [][2]int{{1, 1}, {2, 2}, {3, 3}, {4, 2}, {12, 12}, {8, 2}, {6, 3}, {16, 4}} {
				h, kvh := hc[0], hc[1]
				for _, d := range []int{5, 8, 16, 24, 64, 72, 128} {
					for _, n := range []int{1, 2, 3, 7, 16, 33} {
						stride := kvh*d + rng.IntN(2)*8
						sstride := n + rng.IntN(3)
						heads := make([]int32, h)
						for i := range heads {
							heads[i] = int32(i / (h / kvh))
						}
						q, w := randVec(rng, h*d), randVec(rng, (h-1)*sstride+n)
						k := make([]int8, (n-1)*stride+kvh*d)
						for i := range k {
							k[i] = int8(rng.IntN(256) - 128)
						}
						sc := make([]float32, n*kvh)
						for i := range sc {
							sc[i] = rng.Float32() * 0.05
						}
						dec := make([]float32, len(k)) // the rows as DequantizeRows writes them
						for t := range n {
							for g := range kvh {
								ScaleI8(dec[t*stride+g*d:t*stride+(g+1)*d], k[t*stride+g*d:t*stride+(g+1)*d], sc[t*kvh+g])
							}
						}
						got, want := make([]float32, len(w)), make([]float32, len(w))
						o1 := randVec(rng, h*d)
						o2 := slices.Clone(o1)
						AttnScoresRowsI8(got, sstride, q, k, stride, sc, kvh, heads, n, 0.3)
						AttnMixRowsI8(o1, w, sstride, k, stride, sc, kvh, heads, n)
						for i, g := range heads {
							AttnScores(want[i*sstride:], q[i*d:(i+1)*d], dec[int(g)*d:], stride, n, 0.3)
							AttnMixAdd(o2[i*d:(i+1)*d], w[i*sstride:], dec[int(g)*d:], stride, n)
						}
						sameRows(t, fmt.Sprintf("%s h=%d/%d d=%d n=%d", implName(l), h, kvh, d, n), got, want, o1, o2, h, sstride, n)
					}
				}
			}
		})
	}
}

// sameRows fails t unless the row kernels' scores (n of each of h heads,
// sstride apart) and mixed outputs have the head kernels' bits.
func sameRows(t *testing.T, what string, got, want, o1, o2 []float32, h, sstride, n int) {
	t.Helper()
	for i := range h {
		for j := range n {
			if a, b := got[i*sstride+j], want[i*sstride+j]; math.Float32bits(a) != math.Float32bits(b) {
				t.Fatalf("%s: scores head %d row %d: %v vs %v", what, i, j, a, b)
			}
		}
	}
	for i := range o1 {
		if math.Float32bits(o1[i]) != math.Float32bits(o2[i]) {
			t.Fatalf("%s: mix elem %d: %v vs %v", what, i, o1[i], o2[i])
		}
	}
}

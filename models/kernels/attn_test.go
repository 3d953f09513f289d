package kernels

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
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

// TestAttnRows: on every kernel set, the f16 and int8 row kernels give each
// score and output element the bits of the head-at-a-time float32 kernels
// on the rows decoded (WidenF16; ScaleI8 with a scale per row and KV
// head): head counts that are and are not a multiple of the assembly's 4,
// grouped-query heads, heads of every width, row counts odd and even,
// padded strides. Heads of width 0 score 0 (an empty dot) and mix nothing;
// the assembly's loops run at least once, so the wrappers keep them out.
func TestAttnRows(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	for _, l := range impls() {
		withImpl(l, func() {
			sc := []float32{7, 7, 7, 7}
			AttnScoresRowsF16(sc, 1, nil, make([]uint16, 8), 1, make([]int32, 4), 1, 1)
			AttnMixRowsF16(nil, sc, 1, make([]uint16, 8), 1, make([]int32, 4), 1)
			if sc[0] != 0 || sc[3] != 0 {
				t.Fatalf("%s: heads of width 0 scored %v", implName(l), sc)
			}
			for _, hc := range [][2]int{{1, 1}, {2, 2}, {3, 3}, {4, 2}, {12, 12}, {8, 2}, {6, 3}, {16, 4}, {7, 7}} {
				h, nkv := hc[0], hc[1]
				for _, d := range []int{5, 8, 16, 24, 64, 72, 128} {
					for _, n := range []int{1, 2, 3, 7, 16, 33} {
						stride := nkv*d + rng.IntN(2)*8
						sstride := n + rng.IntN(3)
						kvh := make([]int32, h)
						for i := range kvh {
							kvh[i] = int32(i / (h / nkv))
						}
						q, w := randVec(rng, h*d), randVec(rng, (h-1)*sstride+n)
						o := randVec(rng, h*d)
						half := make([]uint16, (n-1)*stride+nkv*d)
						NarrowF16(half, randVec(rng, len(half)))
						codes := make([]int8, len(half))
						for i := range codes {
							codes[i] = int8(rng.IntN(256) - 128)
						}
						scales := make([]float32, n*nkv)
						for i := range scales {
							scales[i] = rng.Float32() * 0.05
						}
						for _, format := range []string{"f32", "f16", "int8", "fp8"} {
							dec := make([]float32, len(half)) // the rows as the cache decodes them
							got, want := make([]float32, len(w)), make([]float32, len(w))
							o1, o2 := slices.Clone(o), slices.Clone(o)
							switch format {
							case "f32":
								WidenF16(dec, half)
								AttnScoresRowsF32(got, sstride, q, dec, stride, kvh, n, 0.3)
								AttnMixRowsF32(o1, w, sstride, dec, stride, kvh, n)
							case "f16":
								WidenF16(dec, half)
								AttnScoresRowsF16(got, sstride, q, half, stride, kvh, n, 0.3)
								AttnMixRowsF16(o1, w, sstride, half, stride, kvh, n)
							case "fp8":
								fp8 := make([]uint8, len(codes))
								for i, c := range codes {
									fp8[i] = uint8(c)
								}
								for r := range n {
									for g := range nkv {
										at := r*stride + g*d
										DequantizeFP8(dec[at:at+d], fp8[at:at+d], scales[r*nkv+g], E4M3)
									}
								}
								AttnScoresRowsFP8(got, sstride, q, fp8, stride, scales, nkv, kvh, n, 0.3)
								AttnMixRowsFP8(o1, w, sstride, fp8, stride, scales, nkv, kvh, n)
							default:
								for r := range n {
									for g := range nkv {
										at := r*stride + g*d
										ScaleI8(dec[at:at+d], codes[at:at+d], scales[r*nkv+g])
									}
								}
								AttnScoresRowsI8(got, sstride, q, codes, stride, scales, nkv, kvh, n, 0.3)
								AttnMixRowsI8(o1, w, sstride, codes, stride, scales, nkv, kvh, n)
							}
							for i, g := range kvh {
								AttnScores(want[i*sstride:], q[i*d:(i+1)*d], dec[int(g)*d:], stride, n, 0.3)
								AttnMixAdd(o2[i*d:(i+1)*d], w[i*sstride:], dec[int(g)*d:], stride, n)
							}
							what := fmt.Sprintf("%s %s h=%d/%d d=%d n=%d", implName(l), format, h, nkv, d, n)
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
					}
				}
			}
		})
	}
}

// BenchmarkAttnColdKV: one decode query's attention (12 heads of 64 over
// 193 cached rows: the scores, then the mix) with keys and values not in
// cache, as in a batch step, where every sequence's rows come from memory:
// every format a row at a time, as attention reads them, and f32/heads a
// head at a time (AttnScores, AttnMixAdd), for comparison. ns/row
// is per cached position (its key and value rows); each name starts with
// the kernel set it ran (the row kernels' scores are AVX2 at most, but
// int4's; their mixes, but fp8's, take AVX-512; f32/heads is AVX2's).
// f16/blocks reads 12 blocks of 16 f16 rows each at a random place instead
// of 193 adjacent rows: a paged cache whose sequences' blocks are not
// adjacent in the pool (kvcache.Pool.Alloc says why they are kept so).
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
	i8 := unsafe.Slice((*int8)(unsafe.Pointer(unsafe.SliceData(buf))), len(buf))
	q, out := make([]float32, dim), make([]float32, dim)
	sc := make([]float32, heads*rows)
	scales := make([]float32, 4*rows*heads) // in cache: 18 KB a sequence (int8), 37 KB (int4)
	kvh := make([]int32, heads)
	for i := range kvh {
		kvh[i] = int32(i)
	}
	rng := rand.New(rand.NewPCG(3, 4))
	for _, name := range []string{"f32/heads", "f32/rows", "f16/rows", "f16/blocks", "int8/rows", "int4/rows"} {
		run := set
		if useAsm && name != "f32/heads" {
			run = ISA() // the row kernels have AVX-512 parts
		}
		b.Run(run+"/"+name, func(b *testing.B) {
			per, n := 2*rows*dim, 0 // a sequence's keys then values, in elements
			total := len(f32) / per
			switch name {
			case "f16/rows", "f16/blocks":
				total = len(f16) / per
			case "int8/rows":
				total = len(i8) / per
			case "int4/rows":
				total = 2 * len(buf) / per
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
				case "f32/rows":
					AttnScoresRowsF32(sc, rows, q, f32[at:], dim, kvh, rows, 1)
					AttnMixRowsF32(out, sc, rows, f32[at+rows*dim:], dim, kvh, rows)
				case "f16/rows":
					AttnScoresRowsF16(sc, rows, q, f16[at:], dim, kvh, rows, 1)
					AttnMixRowsF16(out, sc, rows, f16[at+rows*dim:], dim, kvh, rows)
				case "f16/blocks":
					const bs = 16
					var kb, vb [(rows - 1) / bs]int // 192 rows
					for i := range kb {
						kb[i], vb[i] = rng.IntN(len(f16)/(bs*dim)), rng.IntN(len(f16)/(bs*dim))
					}
					for i, blk := range kb {
						AttnScoresRowsF16(sc[i*bs:], rows, q, f16[blk*bs*dim:], dim, kvh, bs, 1)
					}
					for i, blk := range vb {
						AttnMixRowsF16(out, sc[i*bs:], rows, f16[blk*bs*dim:], dim, kvh, bs)
					}
				case "int4/rows": // a row is dim/2 bytes and 2 scales a head
					at /= 2
					AttnScoresRowsI4(sc, rows, q, buf[at:], dim/2, scales, heads, kvh, rows, 1)
					AttnMixRowsI4(out, sc, rows, buf[at+rows*dim/2:], dim/2, scales[2*rows*heads:], heads, kvh, rows)
				default:
					AttnScoresRowsI8(sc, rows, q, i8[at:], dim, scales, heads, kvh, rows, 1)
					AttnMixRowsI8(out, sc, rows, i8[at+rows*dim:], dim, scales[rows*heads:], heads, kvh, rows)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*rows), "ns/row")
		})
	}
}

// TestAttnRowsI4: on every kernel set, the int4 row kernels give each
// score and output element the bits of AttnScores and AttnMixAdd on the
// heads decoded by DequantizeLUT4 (the cache's float32 path): heads of
// whole groups (the assembly's) and not (odd widths, a last short group,
// wider than the assembly's eight groups), grouped-query heads, row counts
// around the assembly's blocks of 8 and 4, padded strides, a scale of 0
// and an infinite one.
func TestAttnRowsI4(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	for _, l := range isaLevels(t) { // logs the levels this CPU lacks
		withImpl(l, func() {
			for _, hc := range [][2]int{{1, 1}, {3, 3}, {4, 2}, {12, 12}, {8, 2}, {6, 3}, {16, 4}} {
				h, nkv := hc[0], hc[1]
				for _, d := range []int{5, 8, 16, 32, 48, 64, 96, 128, 256, 288} {
					for _, n := range []int{1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 33} {
						cb, ng := (d+1)/2, (d+Int4KVGroup-1)/Int4KVGroup
						stride := nkv*cb + rng.IntN(2)*5
						hkv := nkv + rng.IntN(2) // rows may hold heads no query reads
						sstride := n + rng.IntN(3)
						kvh := make([]int32, h)
						for i := range kvh {
							kvh[i] = int32(i / (h / nkv))
						}
						q, w := randVec(rng, h*d), randVec(rng, (h-1)*sstride+n)
						o := randVec(rng, h*d)
						codes := make([]byte, (n-1)*stride+nkv*cb)
						for i := range codes {
							codes[i] = byte(rng.IntN(256))
						}
						scales := make([]float32, n*hkv*ng)
						for i := range scales {
							scales[i] = rng.Float32() * 0.05
						}
						if n > 2 {
							scales[rng.IntN(len(scales))] = 0
							scales[rng.IntN(len(scales))] = float32(math.Inf(1))
						}
						got, want := make([]float32, len(w)), make([]float32, len(w))
						o1, o2 := slices.Clone(o), slices.Clone(o)
						AttnScoresRowsI4(got, sstride, q, codes, stride, scales, hkv, kvh, n, 0.3)
						AttnMixRowsI4(o1, w, sstride, codes, stride, scales, hkv, kvh, n)
						dec := make([]float32, d)
						for i, g := range kvh {
							for r := range n {
								DequantizeLUT4(dec, codes[r*stride+int(g)*cb:], scales[(r*hkv+int(g))*ng:], &Int4Levels, Int4KVGroup, d)
								AttnScores(want[i*sstride+r:], q[i*d:(i+1)*d], dec, d, 1, 0.3)
								AttnMixAdd(o2[i*d:(i+1)*d], w[i*sstride+r:], dec, d, 1)
							}
						}
						what := fmt.Sprintf("%s h=%d/%d d=%d n=%d", implName(l), h, nkv, d, n)
						for i := range h {
							for j := range n {
								if a, b := got[i*sstride+j], want[i*sstride+j]; math.Float32bits(a) != math.Float32bits(b) && !(a != a && b != b) {
									t.Fatalf("%s: scores head %d row %d: %v vs %v", what, i, j, a, b)
								}
							}
						}
						for i := range o1 {
							if a, b := o1[i], o2[i]; math.Float32bits(a) != math.Float32bits(b) && !(a != a && b != b) {
								t.Fatalf("%s: mix elem %d: %v vs %v", what, i, a, b)
							}
						}
					}
				}
			}
		})
	}
}

// TestAttnRowsI4Checks: short slices panic with the kernel's name, as
// the other row kernels' checks do; a head of an odd width holds its last
// code in a byte of its own (Int4KVHead).
func TestAttnRowsI4Checks(t *testing.T) {
	kvh := []int32{0, 1}
	q, sc := make([]float32, 2*64), make([]float32, 2*3)
	codes, scales := make([]byte, 3*2*32), make([]float32, 3*2*2)
	AttnScoresRowsI4(sc, 3, q, codes, 64, scales, 2, kvh, 3, 1)  // fits
	q5, codes5 := make([]float32, 2*5), make([]byte, 3*2*3)      // heads of 5 values: 3 bytes
	AttnMixRowsI4(q5, sc, 3, codes5, 6, scales[:3*2], 2, kvh, 3) // fits
	for name, f := range map[string]func(){
		"codes":      func() { AttnScoresRowsI4(sc, 3, q, codes[:len(codes)-1], 64, scales, 2, kvh, 3, 1) },
		"stride":     func() { AttnMixRowsI4(q, sc, 3, codes, 63, scales, 2, kvh, 3) },
		"scales":     func() { AttnMixRowsI4(q, sc, 3, codes, 64, scales[:len(scales)-1], 2, kvh, 3) },
		"hkv":        func() { AttnScoresRowsI4(sc, 3, q, codes, 64, scales, 1, kvh, 3, 1) },
		"odd codes":  func() { AttnScoresRowsI4(sc, 3, q5, codes5[:len(codes5)-1], 6, scales[:3*2], 2, kvh, 3, 1) },
		"odd stride": func() { AttnMixRowsI4(q5, sc, 3, codes5, 5, scales[:3*2], 2, kvh, 3) },
	} {
		func() {
			defer func() {
				if r := recover(); r == nil || !strings.Contains(fmt.Sprint(r), "RowsI4") {
					t.Errorf("%s too short: recovered %v", name, r)
				}
			}()
			f()
		}()
	}
}

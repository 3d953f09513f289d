package kernels

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// l4Case is one LUT4 matrix under test with its dequantized weights.
type l4Case struct {
	name          string
	rows, cols, g int
	packed        []byte
	scale         []float32
	levels        *[16]float32
	w             []float32
}

func newL4Case(rng *rand.Rand, levels *[16]float32, name string, rows, cols, g int) l4Case {
	rb, ng := (cols+1)/2, (cols+g-1)/g
	c := l4Case{name: name, rows: rows, cols: cols, g: g, packed: make([]byte, rows*rb),
		scale: randScales(rng, rows*ng), levels: levels, w: make([]float32, rows*cols)}
	for i := range c.packed {
		c.packed[i] = byte(rng.IntN(256))
	}
	if len(c.scale) > 0 {
		c.scale[0] = -c.scale[0]
	}
	for r := 0; r < rows; r++ {
		DequantizeLUT4(c.w[r*cols:(r+1)*cols], c.packed[r*rb:(r+1)*rb], c.scale[r*ng:(r+1)*ng], levels, g, cols)
	}
	return c
}

func (c *l4Case) matVec(out, x []float32) {
	MatVecLUT4(out, c.packed, c.scale, c.levels, c.g, x, c.rows, c.cols)
}

func (c *l4Case) matMul(out, x []float32, n int) {
	MatMulLUT4(out, c.packed, c.scale, c.levels, c.g, x, c.rows, c.cols, n)
}

// TestLUT4Bitwise: MatVecLUT4 and MatMulLUT4 give the bits of MatVec on the
// dequantized weights for int4 and NF4 levels, every group size, odd rows
// and columns (every tail), on every kernel set, 1 and 2 threads.
func TestLUT4Bitwise(t *testing.T) {
	rng := rand.New(rand.NewPCG(91, 92))
	for _, g := range []int{32, 64, 128} {
		for _, sh := range [][2]int{{1, 1}, {3, 7}, {2, 8}, {5, 9}, {4, 15}, {1, 16}, {7, 23}, {6, 31}, {3, 32}, {9, 33}, {5, 40}, {4, 64}, {7, 70}, {13, 96}, {11, 100}, {301, 256}, {130, 1000}} {
			rows, cols := sh[0], sh[1]
			for _, lv := range []struct {
				name string
				l    *[16]float32
			}{{"int4", &Int4Levels}, {"NF4", &NF4Levels}} {
				c := newL4Case(rng, lv.l, lv.name, rows, cols, g)
				for _, n := range []int{1, 3, 4, 9} {
					x := unaligned(rng, n*cols, 1)
					for _, l := range isaLevels(nil) {
						withISA(l, func() {
							want := make([]float32, n*rows)
							for tok := 0; tok < n; tok++ {
								MatVec(want[tok*rows:], c.w, x[tok*cols:], rows, cols)
							}
							for _, th := range []int{1, 2} {
								withThreads(th, func() {
									what := fmt.Sprintf("%s g%d %s threads=%d rows=%d cols=%d n=%d", c.name, g, isaNames[l], th, rows, cols, n)
									got := unaligned(rng, n*rows, 2)
									c.matMul(got, x, n)
									checkSentinels(t, what, got)
									checkBits(t, what+" MatMul", got, want)
									got = unaligned(rng, rows, 3)
									c.matVec(got, x)
									checkSentinels(t, what, got)
									checkBits(t, what+" MatVec", got, want[:rows])
								})
							}
						})
					}
				}
			}
		}
	}
	for _, l := range isaLevels(t) {
		t.Logf("ran %s", isaNames[l])
	}
}

func TestLUT4Panics(t *testing.T) {
	for name, f := range map[string]func(){
		"group 48": func() {
			MatVecLUT4(make([]float32, 1), make([]byte, 32), make([]float32, 2), &Int4Levels, 48, make([]float32, 64), 1, 64)
		},
		"group 0": func() {
			MatVecLUT4(make([]float32, 1), make([]byte, 32), make([]float32, 2), &Int4Levels, 0, make([]float32, 64), 1, 64)
		},
		"nil levels": func() {
			MatVecLUT4(make([]float32, 1), make([]byte, 32), make([]float32, 2), nil, 32, make([]float32, 64), 1, 64)
		},
		"short packed": func() {
			MatVecLUT4(make([]float32, 1), make([]byte, 31), make([]float32, 2), &NF4Levels, 32, make([]float32, 64), 1, 64)
		},
		"short scale": func() {
			MatMulLUT4(make([]float32, 2), make([]byte, 33), make([]float32, 2), &NF4Levels, 32, make([]float32, 130), 1, 65, 2)
		},
		"short x": func() {
			MatMulLUT4(make([]float32, 2), make([]byte, 32), make([]float32, 2), &NF4Levels, 32, make([]float32, 127), 1, 64, 2)
		},
	} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", name)
				}
			}()
			f()
		}()
	}
}

func TestLUT4Allocs(t *testing.T) {
	rng := rand.New(rand.NewPCG(93, 94))
	c := newL4Case(rng, &NF4Levels, "NF4", 512, 768, 64)
	n := 8
	x, out := randVec(rng, n*768), make([]float32, n*512)
	withThreads(2, func() {
		for name, f := range map[string]func(){
			"MatVecLUT4": func() { c.matVec(out, x) },
			"MatMulLUT4": func() { c.matMul(out, x, n) },
		} {
			f()
			if a := testing.AllocsPerRun(10, f); a != 0 {
				t.Errorf("%s allocates %v times per call", name, a)
			}
		}
	})
}

// BenchmarkMatVecLUT4: decode-sized int4-g32 and NF4-g64 products; bytes
// are the codes and scales.
func BenchmarkMatVecLUT4(b *testing.B) {
	for _, sz := range [][2]int{{768, 2048}, {4096, 4096}} {
		rows, cols := sz[0], sz[1]
		rng := rand.New(rand.NewPCG(14, 14))
		x, out := randVec(rng, cols), make([]float32, rows)
		for _, c := range []l4Case{newL4Case(rng, &Int4Levels, "int4-g32", rows, cols, 32), newL4Case(rng, &NF4Levels, "NF4-g64", rows, cols, 64)} {
			b.Run(fmt.Sprintf("%s/%dx%d", c.name, rows, cols), func(b *testing.B) {
				benchISAs(b, func(b *testing.B) {
					b.SetBytes(int64(len(c.packed) + 4*len(c.scale)))
					for b.Loop() {
						c.matVec(out, x)
					}
					reportFlops(b, 2*float64(rows*cols))
				})
			})
		}
	}
}

// BenchmarkMatMulLUT4: a 64-token prefill.
func BenchmarkMatMulLUT4(b *testing.B) {
	const n = 64
	for _, sz := range [][2]int{{2048, 768}, {768, 2048}} {
		rows, cols := sz[0], sz[1]
		rng := rand.New(rand.NewPCG(15, 15))
		x, out := randVec(rng, n*cols), make([]float32, n*rows)
		for _, c := range []l4Case{newL4Case(rng, &Int4Levels, "int4-g32", rows, cols, 32), newL4Case(rng, &NF4Levels, "NF4-g64", rows, cols, 64)} {
			b.Run(fmt.Sprintf("%s/%dx%dx%d", c.name, rows, cols, n), func(b *testing.B) {
				benchISAs(b, func(b *testing.B) {
					b.SetBytes(int64(len(c.packed) + 4*len(c.scale)))
					for b.Loop() {
						c.matMul(out, x, n)
					}
					reportFlops(b, 2*float64(rows*cols*n))
				})
			})
		}
	}
}

// TestDequantizeLUT4Formula: the group-at-a-time decode writes, bit for bit,
// float32(levels[code]·scale[c/group]) for every element, with odd groups,
// odd columns and groups that start on a byte's high nibble.
func TestDequantizeLUT4Formula(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, g := range []int{1, 3, 8, 32, 33} {
		for _, cols := range []int{1, 7, 32, 64, 71} {
			row := make([]byte, (cols+1)/2)
			for i := range row {
				row[i] = byte(r.IntN(256))
			}
			scale := make([]float32, (cols+g-1)/g)
			for i := range scale {
				scale[i] = float32(r.NormFloat64())
			}
			dst := make([]float32, cols)
			DequantizeLUT4(dst, row, scale, &NF4Levels, g, cols)
			for c, v := range dst {
				if want := float32(NF4Levels[row[c/2]>>(4*(c&1))&15] * scale[c/g]); v != want {
					t.Fatalf("group %d, %d cols: element %d is %g, want %g", g, cols, c, v, want)
				}
			}
		}
	}
}

package kernels

import (
	"fmt"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"
)

// TestKernelRatios prints, for each new kernel, the fastest of many calls
// of it and of the path it replaces (alternating, five 100 ms windows each),
// measured in the same run on one thread,
// and their ratio; each line names the kernel set (ISA) it ran on. On a
// machine shared with other work the minimum approximates the undisturbed
// speed far better than a benchmark's mean. Run with
//
//	CHAT_KERNELS_RATIOS=1 go test -run KernelRatios -v ./models/kernels/
//
// (BENCHMARKS.md's kernel table comes from it).
func TestKernelRatios(t *testing.T) {
	if os.Getenv("CHAT_KERNELS_RATIOS") == "" {
		t.Skip("set CHAT_KERNELS_RATIOS=1 to run")
	}
	rng := rand.New(rand.NewPCG(1, 1))
	minOf := func(f func(), best time.Duration) time.Duration {
		for start := time.Now(); time.Since(start) < 100*time.Millisecond; {
			t0 := time.Now()
			f()
			best = min(best, time.Since(t0))
		}
		return best
	}
	fmt.Printf("host kernel set: %s\n", isaNames[startISA])
	fmt.Printf("%-44s %-11s %10s %-11s %10s %7s\n", "product", "isa (new)", "new", "isa (old)", "old", "old/new")
	row := func(name string, ln isaLevel, fn func(), lo isaLevel, fo func()) {
		// Alternate the two in short windows, so a busy spell on the machine
		// does not land on one of them only.
		dn, do := time.Duration(1<<62), time.Duration(1<<62)
		withThreads(1, func() {
			for range 5 {
				withISA(lo, func() { do = minOf(fo, do) })
				withISA(ln, func() { dn = minOf(fn, dn) })
			}
		})
		fmt.Printf("%-44s %-11s %10v %-11s %10v %6.2f×\n", name, isaNames[ln], dn.Round(time.Microsecond/10), isaNames[lo], do.Round(time.Microsecond/10), do.Seconds()/dn.Seconds())
	}
	top := startISA
	levels := isaLevels(nil)[1:]

	// Decode: float-activation products of quantized weights against the
	// old path (dequantize 4096 weights at a time in Go, then MatVec: what
	// models/quant's decode did), and the integer-dot int4 product.
	const rows, cols = 1024, 2048
	x, out := randVec(rng, cols), make([]float32, rows)
	buf := make([]float32, 4096)
	br := 4096 / cols
	if br < 1 {
		br = 1
	}
	for _, c := range []l4Case{newL4Case(rng, &Int4Levels, "int4-g32", rows, cols, 32), newL4Case(rng, &NF4Levels, "nf4-g64", rows, cols, 64)} {
		old := func() {
			rb, ng := (cols+1)/2, (cols+c.g-1)/c.g
			for r0 := 0; r0 < rows; r0 += br {
				r1 := min(rows, r0+br)
				for r := r0; r < r1; r++ {
					DequantizeLUT4(buf[(r-r0)*cols:], c.packed[r*rb:], c.scale[r*ng:], c.levels, c.g, cols)
				}
				MatVec(out[r0:r1], buf, x, r1-r0, cols)
			}
		}
		for _, l := range levels {
			row(fmt.Sprintf("MatVecLUT4 %s %dx%d", c.name, rows, cols), l, func() { c.matVec(out, x) }, isaAVX2, old)
		}
		if c.g == 32 {
			w, gs := make([]byte, ILBytes(IL4G, rows, cols)), make([]float32, ILScales(rows, cols, 32))
			PackILInt4(w, gs, c.packed, c.scale, 32, rows, cols)
			var a ILAct
			for _, l := range levels {
				row(fmt.Sprintf("int4 interleaved, Q8_0 act %dx%d", rows, cols), l, func() {
					a.Quantize(x, 1, cols, IL4G)
					MatMulIL(IL4G, out, w, gs, 32, &a, rows, cols, Cached)
				}, l, func() { c.matVec(out, x) })
			}
		}
	}
	codes := make([]uint8, rows*cols)
	for i := range codes {
		codes[i] = uint8(rng.IntN(256)) &^ 0x40
	}
	scale := randScales(rng, rows)
	for _, f := range []FP8{E4M3, E5M2} {
		old := func() {
			for r0 := 0; r0 < rows; r0 += br {
				r1 := min(rows, r0+br)
				for r := r0; r < r1; r++ {
					DequantizeFP8(buf[(r-r0)*cols:(r-r0+1)*cols], codes[r*cols:(r+1)*cols], scale[r], f)
				}
				MatVec(out[r0:r1], buf, x, r1-r0, cols)
			}
		}
		for _, l := range levels {
			row(fmt.Sprintf("MatVecFP8 %v %dx%d", f, rows, cols), l, func() { MatVecFP8(out, codes, scale, x, rows, cols, f) }, isaAVX2, old)
		}
	}
	q := randI8(rng, rows*cols, 0)
	for _, l := range levels {
		row(fmt.Sprintf("MatVecI8F32 %dx%d", rows, cols), l, func() { MatVecI8F32(out, q, scale, x, rows, cols) }, isaAVX2, func() { MatVecI8F32(out, q, scale, x, rows, cols) })
	}
	// Interleaved Q8_0 and Q4_0 (ilblock.go) against their AVX2 kernels, one
	// token and a decode batch of 8.
	for _, name := range []string{"q8_0", "q4_0"} {
		c := newILCase(t, rng, name, rows, cols)
		for _, nt := range []int{1, 8} {
			xs, o := randVec(rng, nt*cols), make([]float32, nt*rows)
			var a ILAct
			f := func() {
				a.Quantize(xs, nt, cols, c.k)
				MatMulIL(c.k, o, c.w, nil, 0, &a, rows, cols, Cached)
			}
			row(fmt.Sprintf("MatMulIL %s %dx%dx%d", name, rows, cols, nt), top, f, isaAVX2, f)
		}
	}
	// K-quant blocks × quantized activations: VNNI against the AVX2 kernel.
	for _, k := range blockKinds {
		w := randBlocks(rng, k, rows*cols/k.bs, false)
		xq, xd, xs := quantAct(k, x)
		row(fmt.Sprintf("MatVec%s %dx%d", k.name, rows, cols), top, func() { k.matVec(out, w, xq, xd, xs, rows, cols) }, isaAVX2, func() { k.matVec(out, w, xq, xd, xs, rows, cols) })
	}

	// Prefill: the tiles against rows of MatVecs (the old batch path) at the
	// same and at the AVX2 level; float-activation batches against the old
	// prefill path (dequantize the whole matrix, then MatMul).
	const n = 64
	bout := make([]float32, n*rows)
	// Which kernel sets have tiles for each batched product (qtile.go).
	tiles := map[string]isaLevel{"I8": isaAVX512VNNI, "Q4_K": isaAVX2, "Q5_K": isaAVX2, "Q6_K": isaAVX2, "Q2_K": isaAVX2, "Q3_K": isaAVX2}
	for _, c := range batchCases(rng, rows, cols, n) {
		first, ok := tiles[c.name]
		if !ok {
			continue
		}
		tiled := func() { c.matMul(bout, n) }
		rowsOf := func() { noTiles = true; c.matMul(bout, n); noTiles = false }
		name := fmt.Sprintf("MatMul%s %dx%dx%d", c.name, rows, cols, n)
		for _, l := range levels {
			if l >= first && (l != isaAVX512 || first == isaAVX2) {
				row(name+" tiles vs rows of MatVecs", l, tiled, l, rowsOf)
			}
		}
		if top > isaAVX2 {
			row(name+" tiles vs AVX2 rows", top, tiled, isaAVX2, rowsOf)
		}
	}
	// The old prefill path dequantized the whole matrix (FP8 by Go table
	// lookups, int8 by ScaleI8's assembly), then ran MatMul.
	xb := randVec(rng, n*cols)
	whole := make([]float32, rows*cols)
	for _, f := range []FP8{E4M3, E5M2} {
		old := func() {
			for r := 0; r < rows; r++ {
				DequantizeFP8(whole[r*cols:(r+1)*cols], codes[r*cols:(r+1)*cols], scale[r], f)
			}
			MatMul(bout, whole, xb, rows, cols, n)
		}
		for _, l := range levels {
			row(fmt.Sprintf("MatMulFP8 %v %dx%dx%d", f, rows, cols, n), l, func() { MatMulFP8(bout, codes, scale, xb, rows, cols, n, f) }, isaAVX2, old)
		}
	}
	oldI8 := func() {
		for r := 0; r < rows; r++ {
			ScaleI8(whole[r*cols:(r+1)*cols], q[r*cols:(r+1)*cols], scale[r])
		}
		MatMul(bout, whole, xb, rows, cols, n)
	}
	for _, l := range levels {
		row(fmt.Sprintf("MatMulI8F32 %dx%dx%d", rows, cols, n), l, func() { MatMulI8F32(bout, q, scale, xb, rows, cols, n) }, isaAVX2, oldI8)
	}
	for _, c := range []l4Case{newL4Case(rng, &Int4Levels, "int4-g32", rows, cols, 32)} {
		old := func() {
			rb, ng := (cols+1)/2, (cols+c.g-1)/c.g
			for r := 0; r < rows; r++ {
				DequantizeLUT4(whole[r*cols:], c.packed[r*rb:], c.scale[r*ng:], c.levels, c.g, cols)
			}
			MatMul(bout, whole, xb, rows, cols, n)
		}
		for _, l := range levels {
			row(fmt.Sprintf("MatMulLUT4 %s %dx%dx%d", c.name, rows, cols, n), l, func() { c.matMul(bout, xb, n) }, isaAVX2, old)
		}
	}
	wh := halfIL(randF16(rng, rows*cols), rows, cols)
	for _, l := range levels {
		row(fmt.Sprintf("MatMulF16IL GEMM vs tiles %dx%dx%d", rows, cols, n), l, func() {
			MatMulF16ILPrefill(bout, wh, xb, rows, cols, n)
		}, l, func() {
			MatMulF16IL(bout, wh, xb, rows, cols, n)
		})
	}
	wf0 := randVec(rng, rows*cols)
	for _, l := range levels {
		row(fmt.Sprintf("MatMul F32 GEMM vs tiles %dx%dx%d", rows, cols, n), l, func() {
			MatMulPrefill(bout, wf0, xb, rows, cols, n)
		}, l, func() {
			MatMul(bout, wf0, xb, rows, cols, n)
		})
	}
	wf := randVec(rng, rows*cols)
	if !runnable(isaAVX512) {
		return
	}
	row(fmt.Sprintf("MatMul F32 GEMM tiles %dx%dx%d", rows, cols, n), isaAVX512, func() {
		MatMul(bout, wf, xb, rows, cols, n)
	}, isaAVX2, func() {
		MatMul(bout, wf, xb, rows, cols, n)
	})
	fmt.Println(strings.Repeat("-", 40))
}

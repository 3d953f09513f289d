package kernels

import (
	"os"
	"sync"
	"unsafe"
)

// MatMulPrefill's path (see gemmEnabled): out = X·Wᵀ as a
// register-tiled GEMM in the manner of GotoBLAS/BLIS (Goto & van de Geijn,
// "Anatomy of High-Performance Matrix Multiplication", 2008; Van Zee & van de
// Geijn, "BLIS", 2015), shaped for operands that are both K-major.
//
// The activations are packed once per call into panels of nr tokens,
// transposed so that the nr values of one column k are contiguous
// (xp[k*nr+j] = x[t0+j][k]). A tile then walks k once: it loads the panel's
// vector(s) for k, broadcasts w[r][k] for each of its mr weight rows and
// FMAs, keeping mr×nr sums in registers (AVX-512: 12×32 in 24 zmm; AVX2: 6×16
// in 12 ymm; a last panel of at most nr/2 tokens is nr/2 wide and takes 12
// rows), and finally transposes the tile into out's rows.
//
// Loop order: panel outer, row groups inner. A panel (nr·cols floats, ≤ 256
// KiB at cols = 2048) stays in L2 while every weight row of the caller's range
// meets it, and the weight rows stream from L3/DRAM once per panel; each tile
// needs ~15 bytes/cycle, well inside L2 bandwidth, so no k blocking is needed.
//
// Every (row, token) sum is one accumulator lane adding k in order, so the
// result does not depend on the thread count or the tile a token falls in,
// but it is not bitwise equal to MatVec (which sums in 8 lanes): the error
// bound is that of a sequential float32 sum of cols products.

// gemmEnabled switches MatMulPrefill and MatMulF16ILPrefill (on AVX-512) to
// the GEMM path: on by default, off with CHAT_GEMM=0. A prefill row then sums
// in another order than MatVec's, so a prompt prefilled in one batch is not
// bitwise the token-by-token decode of the same tokens (nor a cached prefix
// computed by decode steps): both agree to float32 rounding, the tolerance
// the tests that compare them accept (GEMMTolerance). Every row still gets
// the same bits in any batch, tile and thread count (one lane adds k in
// order), so a sequence batched with others computes what it computes
// alone. It pays on every kernel set: at 2048×768, 1 thread, against the
// MatVec-order tiles it replaces, 1.26-1.6× on AVX2 (4×3 tiles) and
// 1.13-1.27× on AVX-512 (pair tiles) for 16-64 tokens.
var gemmEnabled = os.Getenv("CHAT_GEMM") != "0"

// GEMMTolerance is how far, relative to the largest magnitude of a row of
// logits, a computation whose prefill took the GEMM path may differ from the
// same computation in MatVec's order (tests comparing a prefill with its
// decode, or a cached prefix with a cold one, use it): float32 sums in two
// orders, through a few layers. Measured over the architectures' tests
// (models/llama TestArchCachedVsUncached logs it): up to 4e-6 of the largest
// logit, and 9e-5 to 1.8e-4 on Gemma, whose GELU reads
// a table at the f16 rounding of its input (one ulp moves it to the
// neighbouring entry, a 1e-3 step).
const GEMMTolerance = 1e-3

// GEMM reports whether MatMulPrefill takes the GEMM path (see gemmEnabled);
// SetGEMM switches it and returns the previous setting (for comparisons: the
// path is chosen at every call).
func GEMM() bool { return gemmEnabled }

func SetGEMM(on bool) bool {
	was := gemmEnabled
	gemmEnabled = on
	return was
}

// gemmRowGran is the row granule of a GEMM product split over the pool: a
// multiple of both tiles' mr, so every thread count puts the same rows in the
// same tiles and the leftover rows%12 go to the MatVec kernel.
const gemmRowGran = 12

// gemmMaxTile is the largest tile, 12×32.
const gemmMaxTile = 12 * 32

// gemmRowBlockBytes is the weight bytes of a row block, which stays in L2
// while it meets every panel.
var gemmRowBlockBytes = 128 << 10

// gemmShape returns the tile in use for full panels: mr weight rows × nr
// tokens.
func gemmShape() (mr, nr int) {
	if gemmAVX512 {
		return 12, 32
	}
	return 6, 16
}

// gemmTileRows is the rows of the tile for a full (wide) or half panel. The
// half-panel tiles take 12 rows so that each token vector loaded still feeds
// 12 FMAs.
func gemmTileRows(wide bool) int {
	if mr, _ := gemmShape(); wide {
		return mr
	}
	return 12
}

// gemmOK reports whether MatMulPrefill takes the GEMM path for this shape:
// not the token count, so a row's order never depends on its batch.
func gemmOK(rows, cols int) bool {
	return gemmEnabled && gemmHasAsm && useAsm && rows >= gemmRowGran && cols > 0
}

type gemmBuf struct{ xp []float32 }

// gemmBufs holds packed-activation buffers; one per concurrent caller, reused
// (grown only for a larger product), so steady-state calls don't allocate.
var gemmBufs = sync.Pool{New: func() any { return new(gemmBuf) }}

// gemmMatMul is MatMulPrefill for gemmOK shapes.
func gemmMatMul(out, w, x []float32, rows, cols, n int) {
	_, nr := gemmShape()
	b := gemmBufs.Get().(*gemmBuf)
	need := (n + nr - 1) / nr * nr * cols
	if cap(b.xp) < need {
		b.xp = make([]float32, need)
	}
	xp := b.xp[:need]
	packPanels(xp, x, cols, n, nr)
	done := false
	if rows*cols*n >= parallelMin {
		if j := defaultPool.acquire(); j != nil {
			// The workers share xp read-only; j.dx is otherwise unused by
			// float products.
			j.op, j.out, j.w, j.x, j.dx = opGEMM, out, w, x, xp
			j.rows, j.cols, j.n = rows, cols, n
			defaultPool.exec(gemmRowGran)
			done = true
		}
	}
	if !done {
		gemmRange(out, w, x, xp, rows, cols, n, 0, rows)
	}
	gemmBufs.Put(b)
}

// panelWidth is the width of the panel starting at token t0: nr, or nr/2 for
// a last panel of at most nr/2 tokens (halving the padding work).
func panelWidth(n, t0, nr int) int {
	if n-t0 <= nr/2 {
		return nr / 2
	}
	return nr
}

// packPanels writes x's tokens into xp as panels: the panel of tokens
// [t0, t0+pw) starts at xp[t0*cols] and holds xp[t0*cols+k*pw+j] = x[t0+j][k],
// zero for tokens past n. Groups of 8 tokens × 8 columns are transposed in
// registers (gemmPack8); the rest goes 64 columns at a time so the panel rows
// being written stay in L1.
func packPanels(xp, x []float32, cols, n, nr int) {
	const kb = 64
	c8 := 0
	if gemmHasAsm && cols >= 8 {
		c8 = cols &^ 7
	}
	for t0 := 0; t0 < n; t0 += nr {
		pw := panelWidth(n, t0, nr)
		nt := min(pw, n-t0)
		dst := xp[t0*cols : (t0+pw)*cols]
		j8 := 0
		if c8 > 0 {
			for ; j8+8 <= nt; j8 += 8 {
				gemmPack8(dst[j8:], pw, x[(t0+j8)*cols:(t0+j8+8)*cols], cols)
			}
		}
		for k0 := 0; k0 < cols; k0 += kb {
			k1 := min(cols, k0+kb)
			for j := 0; j < nt; j++ {
				ks := k0
				if j < j8 {
					ks = max(k0, c8) // columns [0, c8) are packed
				}
				if ks >= k1 {
					continue
				}
				src := x[(t0+j)*cols+ks : (t0+j)*cols+k1]
				d := dst[ks*pw+j:]
				for k, v := range src {
					d[k*pw] = v
				}
			}
			for j := nt; j < pw; j++ {
				d := dst[k0*pw+j:]
				for k := range k1 - k0 {
					d[k*pw] = 0
				}
			}
		}
	}
}

// gemmRange computes rows [r0, r1) of every token; r0 is a multiple of
// gemmRowGran. Whole tiles take rows up to the last multiple of 12 in the
// range; the rest (only in the last range) take the MatVec-based kernel.
func gemmRange(out, w, x, xp []float32, rows, cols, n, r0, r1 int) {
	re := r0 + (r1-r0)/gemmRowGran*gemmRowGran
	if re > r0 {
		_ = w[re*cols-1]
		rb := gemmRowBlock(cols)
		for b0 := r0; b0 < re; b0 += rb {
			b1 := min(re, b0+rb)
			gemmBlock(out, w[b0*cols:b1*cols], xp, rows, cols, n, b0, b1)
		}
	}
	if re < r1 {
		matMulRange(out, w, x, rows, cols, n, re, r1)
	}
}

// gemmRowBlock is the rows of a row block, which stays in L2 while it meets
// every panel.
func gemmRowBlock(cols int) int {
	return max(gemmRowGran, gemmRowBlockBytes/(4*cols)/gemmRowGran*gemmRowGran)
}

// gemmBlock runs the tiles of rows [b0, b1) (a multiple of 12), whose
// weights are wb, against every panel of xp.
func gemmBlock(out, wb, xp []float32, rows, cols, n, b0, b1 int) {
	_, nr := gemmShape()
	var c [gemmMaxTile]float32
	_ = out[(n-1)*rows+b1-1]
	for t0 := 0; t0 < n; t0 += nr {
		pw := panelWidth(n, t0, nr)
		nt := min(pw, n-t0)
		_ = xp[(t0+pw)*cols-1]
		xpp := &xp[t0*cols]
		mr := gemmTileRows(pw == nr)
		for r := b0; r < b1; r += mr {
			gemmTile(pw == nr, &out[t0*rows+r], rows, nt, ptrAtF(wb, (r-b0)*cols), cols, xpp, &c)
		}
	}
}

// ptrAtF is &s[i] without a bounds check; callers have checked i < len(s).
func ptrAtF(s []float32, i int) *float32 {
	return (*float32)(unsafe.Add(unsafe.Pointer(unsafe.SliceData(s)), uintptr(i)*4))
}

package kernels

import "sync"

// The GEMM path of MatMulF16ILPrefill and MatMulBF16ILPrefill (on AVX-512
// CPUs: its sums round as the float32 GEMM's, not as MatVec's): each row
// block of the 2-byte weights (gemmRowBlockBytes of float32) is widened once
// into a buffer that stays in L2, then meets every panel of the packed
// activations through the float32 GEMM's 12×32 tiles. Widening costs one
// VCVTPH2PS (bf16: VPMOVZXWD and VPSLLD) per 8 weights per call; with the
// AVX2 6×16 tiles that ate the gain (0.92× the f16 4×3 tiles,
// TestKernelRatios; bf16, 2048×768 and 768×2048, 1 thread: 1.04-1.05× its
// tiles from 32 to 128 tokens but 0.7× at 18), so AVX2 CPUs keep those.

// ilGEMMRows is the granule of the row blocks and ranges of interleaved
// weights: whole tiles (12) of whole groups (16), so each group is widened
// in one block, read once in its order (blocks that cut groups read a
// quarter of each line and came back for the rest: prefill 0.86-0.92x the
// row-major one's).
const ilGEMMRows = 48

// halfBlocks holds the widened row blocks, one per concurrent range.
var halfBlocks = sync.Pool{New: func() any { return new(gemmBuf) }}

// gemmMatMulHalf is halfILPrefill for gemmOK shapes.
func gemmMatMulHalf(k wkind, out []float32, w []uint16, x []float32, rows, cols, n int) {
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
			j.op, j.out, j.wh, j.wk, j.x, j.dx = opGEMMHalf, out, w, k, x, xp
			j.rows, j.cols, j.n = rows, cols, n
			defaultPool.exec(ilGEMMRows)
			done = true
		}
	}
	if !done {
		gemmRangeHalf(k, out, w, x, xp, rows, cols, n, 0, rows)
	}
	gemmBufs.Put(b)
}

// gemmRangeHalf is gemmRange for interleaved 2-byte weights of kind k:
// rows [r0, r1), r0 a multiple of ilGEMMRows; leftover rows take
// matMulHalfILRange.
func gemmRangeHalf(k wkind, out []float32, w []uint16, x, xp []float32, rows, cols, n, r0, r1 int) {
	re := r0 + (r1-r0)/gemmRowGran*gemmRowGran
	if re > r0 {
		rb := max(ilGEMMRows, gemmRowBlock(cols)/ilGEMMRows*ilGEMMRows)
		blk := halfBlocks.Get().(*gemmBuf)
		if cap(blk.xp) < rb*cols {
			blk.xp = make([]float32, rb*cols)
		}
		for b0 := r0; b0 < re; b0 += rb {
			b1 := min(re, b0+rb)
			wb := blk.xp[:(b1-b0)*cols]
			widenHalfIL(k, wb, w, cols, b0, b1)
			gemmBlock(out, wb, xp, rows, cols, n, b0, b1)
		}
		halfBlocks.Put(blk)
	}
	if re < r1 {
		matMulHalfILRange(k, out, w, x, rows, cols, n, re, r1)
	}
}

// WidenF16 sets dst[i] = f16ToF32(src[i]), exactly (VCVTPH2PS): how an f16
// KV cache's rows are read, and f16 weights widened for the GEMM.
func WidenF16(dst []float32, src []uint16) {
	dst = dst[:len(src)]
	i := 0
	if useAsm {
		i = len(src) &^ 7
		if i > 0 {
			widenF16Asm(dst[:i], src[:i])
		}
	}
	for ; i < len(src); i++ {
		dst[i] = f16ToF32(src[i])
	}
}

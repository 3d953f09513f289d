package kernels

import "sync"

// MatMulF16Prefill's GEMM path (on AVX-512 CPUs: its sums round as the
// float32 GEMM's, not as MatVecF16's): each row block of the f16 weights
// (gemmRowBlockBytes of float32) is widened once into a buffer that stays in
// L2, then meets every panel of the packed activations through the float32
// GEMM's 12×32 tiles. Widening costs one VCVTPH2PS per 8 weights per call;
// with the AVX2 6×16 tiles that ate the gain (0.92× MatMulF16's own tiles,
// TestKernelRatios), so AVX2 CPUs keep those.

// MatMulF16Prefill is MatMulF16 for the rows of a prefill (MatMulPrefill's
// contract): the GEMM on AVX-512 CPUs, MatMulF16 elsewhere.
func MatMulF16Prefill(out []float32, w []uint16, x []float32, rows, cols, n int) {
	checkF16("MatMulF16Prefill", out, w, x, rows, cols, n)
	if n > 0 && gemmOK(rows, cols) && gemmAVX512 {
		gemmMatMulF16(out, w, x, rows, cols, n)
		return
	}
	MatMulF16(out, w, x, rows, cols, n)
}

// f16Blocks holds the widened row blocks, one per concurrent range.
var f16Blocks = sync.Pool{New: func() any { return new(gemmBuf) }}

// gemmMatMulF16 is MatMulF16Prefill for gemmOK shapes.
func gemmMatMulF16(out []float32, w []uint16, x []float32, rows, cols, n int) {
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
			j.op, j.out, j.wh, j.x, j.dx = opGEMMF16, out, w, x, xp
			j.rows, j.cols, j.n = rows, cols, n
			defaultPool.exec(gemmRowGran)
			done = true
		}
	}
	if !done {
		gemmRangeF16(out, w, x, xp, rows, cols, n, 0, rows)
	}
	gemmBufs.Put(b)
}

// gemmRangeF16 is gemmRange for f16 weights: rows [r0, r1), r0 a multiple
// of gemmRowGran; leftover rows take MatMulF16's own kernel.
func gemmRangeF16(out []float32, w []uint16, x, xp []float32, rows, cols, n, r0, r1 int) {
	re := r0 + (r1-r0)/gemmRowGran*gemmRowGran
	if re > r0 {
		rb := gemmRowBlock(cols)
		blk := f16Blocks.Get().(*gemmBuf)
		if cap(blk.xp) < rb*cols {
			blk.xp = make([]float32, rb*cols)
		}
		for b0 := r0; b0 < re; b0 += rb {
			b1 := min(re, b0+rb)
			wb := blk.xp[:(b1-b0)*cols]
			WidenF16(wb, w[b0*cols:b1*cols])
			gemmBlock(out, wb, xp, rows, cols, n, b0, b1)
		}
		f16Blocks.Put(blk)
	}
	if re < r1 {
		matMulF16Range(out, w, x, rows, cols, n, re, r1)
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
